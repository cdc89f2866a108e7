"""Sample tables for the gateway tests: secrets/PII that must go, text that must stay.

Check digits are computed here by an independent implementation, not by the code
under test, so a bug in the gateway's Luhn or GB 11643 code cannot hide itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from memstrata.gateway import Kind


def luhn_complete(body: str) -> str:
    """Append the Luhn check digit to ``body``."""
    total = 0
    # Positions are counted from the right of the final number, check digit excluded.
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


def luhn_ok(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    odd = digits[-1::-2]
    even = [sum(divmod(2 * d, 10)) for d in digits[-2::-2]]
    return (sum(odd) + sum(even)) % 10 == 0


def cn_id_complete(first17: str) -> str:
    """Append the GB 11643 check character to 17 digits."""
    weights = [2 ** (17 - i) % 11 for i in range(17)]  # the standard's definition
    total = sum(int(c) * w for c, w in zip(first17, weights, strict=True))
    return first17 + "10X98765432"[total % 11]


def spaced(number: str, sep: str = " ") -> str:
    return sep.join(number[i : i + 4] for i in range(0, len(number), 4))


@dataclass(frozen=True)
class Sample:
    """A text holding one secret; ``secret`` is the part that must never survive."""

    text: str
    kind: Kind
    secret: str

    @property
    def id(self) -> str:
        return f"{self.kind.value}:{self.text[:24]}"


def _s(text: str, kind: Kind, secret: str | None = None) -> Sample:
    return Sample(text, kind, secret if secret is not None else text)


OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLmN0pQrStUvWxYz12345"
RSA_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c2Zb0m3Lr5tLq9Xz7Kq1cVwQn8qY1Zz4b6mR+K9m4bT0hJp\n"
    "q9Xz7Kq1cVwQn8qY1Zz4b6mR+K9m4bT0hJpMIIEowIBAAKCAQEA1c2Zb0m3Lr5t\n"
    "-----END RSA PRIVATE KEY-----"
)
SSH_PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
EC_PEM = (
    "-----BEGIN EC PRIVATE KEY-----\n"
    "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oZ8sF0fGZlyGoAoGCCqGSM49\n"
    "-----END EC PRIVATE KEY-----"
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
CN_ID_1 = "11010519491231002X"
CN_ID_2 = cn_id_complete("44030819990101123")
CN_ID_3 = cn_id_complete("32010619850715456")
CN_ID_4 = cn_id_complete("51010720001229789")
UNIONPAY = luhn_complete("622202123456789012")  # 19 digits
VISA = "4111111111111111"
MASTERCARD = "5500000000000004"
AMEX = "378282246310005"
DISCOVER = "6011111111111117"
JCB = "3530111333300000"
VISA_2 = luhn_complete("453201511283036")

SECRET_SAMPLES: tuple[Sample, ...] = (
    # --- API keys ---
    _s(OPENAI, Kind.API_KEY),
    _s("sk-" + "T3BlbkFJ" * 6, Kind.API_KEY),
    _s("sk-ant-api03-" + "x9Y8w7V6u5T4s3R2q1P0o9N8m7L6k5J4", Kind.API_KEY),
    _s("sk_live_" + "51H8aBcDeFgHiJkLmNoPqRsT", Kind.API_KEY),
    _s("sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc", Kind.API_KEY),
    _s("rk_live_" + "51H8aBcDeFgHiJkLmNoPqRsT99", Kind.API_KEY),
    # --- cloud and platform tokens ---
    _s("AKIAIOSFODNN7EXAMPLE", Kind.AWS_ACCESS_KEY),
    _s("ASIAY34FZKBOKMUTVV7A", Kind.AWS_ACCESS_KEY),
    _s(
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        Kind.AWS_SECRET_KEY,
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    _s(
        'AWS_SECRET_ACCESS_KEY: "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"',
        Kind.AWS_SECRET_KEY,
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    ),
    _s("ghp_" + "1234567890abcdefghijABCDEFGHIJ123456", Kind.GITHUB_TOKEN),
    _s("gho_" + "16C7e42F292c6912E7710c838347Ae178B4a", Kind.GITHUB_TOKEN),
    _s("ghu_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", Kind.GITHUB_TOKEN),
    _s("ghs_" + "zYxWvUtSrQpOnMlKjIhGfEdCbA9876543210", Kind.GITHUB_TOKEN),
    _s("ghr_" + "1B4a2e77838347a7E420ce178F2E7c6912E1", Kind.GITHUB_TOKEN),
    _s("github_pat_" + "11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789", Kind.GITHUB_TOKEN),
    _s("xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", Kind.SLACK_TOKEN),
    _s("xoxp-" + "987654321098-9876543210987-ZyXwVuTsRqPoNmLkJiHgFeDc", Kind.SLACK_TOKEN),
    _s("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", Kind.GOOGLE_API_KEY),
    _s(JWT, Kind.JWT),
    # --- authorization headers ---
    _s("Authorization: Bearer abc123def456ghi789", Kind.BEARER_TOKEN, "abc123def456ghi789"),
    _s("bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5", Kind.BEARER_TOKEN, "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5"),
    _s("Authorization: Basic dXNlcjpwYXNzd29yZA==", Kind.BASIC_AUTH, "dXNlcjpwYXNzd29yZA=="),
    _s(
        "authorization=Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
        Kind.BEARER_TOKEN,
        "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
    ),
    # --- private keys ---
    _s(RSA_PEM, Kind.PRIVATE_KEY, "MIIEowIBAAKCAQEA1c2Zb0m3Lr5tLq9Xz7Kq1cVwQn8qY1Zz4b6mR"),
    _s(SSH_PEM, Kind.PRIVATE_KEY, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
    _s(EC_PEM, Kind.PRIVATE_KEY, "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oZ8sF0fGZlyGoAoG"),
    # --- passwords ---
    _s("password=hunter2", Kind.PASSWORD, "hunter2"),
    _s("passwd: s3cr3t!", Kind.PASSWORD, "s3cr3t!"),
    _s("pwd=Tr0ub4dor&3", Kind.PASSWORD, "Tr0ub4dor&3"),
    _s('"password": "correct horse"', Kind.PASSWORD, "correct horse"),
    _s("db_password: Pa55w0rd2024", Kind.PASSWORD, "Pa55w0rd2024"),
    _s("DB_PASSWORD='q1w2e3r4t5'", Kind.PASSWORD, "q1w2e3r4t5"),
    _s("密码：Abc@12345", Kind.PASSWORD, "Abc@12345"),
    _s("口令是p4ssw0rd", Kind.PASSWORD, "p4ssw0rd"),
    _s("登录密码为 Zx9!kLm2", Kind.PASSWORD, "Zx9!kLm2"),
    _s("https://admin:S3cretPw@db.internal.example.com/app", Kind.PASSWORD, "S3cretPw"),
    _s("Server=db;Password=p@ss;w0rd&x;Database=app", Kind.PASSWORD, "p@ss;w0rd&x"),
    # passwords said in prose, English and Chinese
    _s("my password is Tr0ub4dor&3", Kind.PASSWORD, "Tr0ub4dor&3"),
    _s("The password for the VPN was Hj4%uR9wEe", Kind.PASSWORD, "Hj4%uR9wEe"),
    _s("I changed my password to Kx7#mQ2vLp", Kind.PASSWORD, "Kx7#mQ2vLp"),
    _s("我的密码是Wq5$hN8rTz", Kind.PASSWORD, "Wq5$hN8rTz"),
    _s("密码已经改成了Ys3!pB6kDm", Kind.PASSWORD, "Ys3!pB6kDm"),
    # --- other secret-named fields ---
    _s("secret=abcd1234efgh", Kind.SECRET, "abcd1234efgh"),
    _s("api_key=XYZ123abc456", Kind.SECRET, "XYZ123abc456"),
    _s("apikey: 123abcDEF789", Kind.SECRET, "123abcDEF789"),
    _s("api-key=foo-bar-baz-42", Kind.SECRET, "foo-bar-baz-42"),
    _s("?token=abc987xyz&x=1", Kind.SECRET, "abc987xyz"),
    _s("access_token=ya29.a0AfH6SMBx3kLq", Kind.SECRET, "ya29.a0AfH6SMBx3kLq"),
    _s('client_secret: "GOCSPX-8nL2kQ7vR4tY1wZ"', Kind.SECRET, "GOCSPX-8nL2kQ7vR4tY1wZ"),
    _s("refresh_token => 'rt_5f4dcc3b5aa765d61d8'", Kind.SECRET, "rt_5f4dcc3b5aa765d61d8"),
    _s("x-api-key: 0a1b2c3d4e5f", Kind.SECRET, "0a1b2c3d4e5f"),
    _s("SECRET_KEY=django-insecure-7h3k", Kind.SECRET, "django-insecure-7h3k"),
    _s("密钥：ABCDEF123456", Kind.SECRET, "ABCDEF123456"),
    _s("令牌=tok_99887766", Kind.SECRET, "tok_99887766"),
    # --- emails ---
    _s("alice@example.com", Kind.EMAIL),
    _s("bob.smith+tag@mail.example.co.uk", Kind.EMAIL),
    _s("zhang.san@company.cn", Kind.EMAIL),
    _s("OPS_TEAM@Sub-Domain.Example.ORG", Kind.EMAIL),
    # --- phones ---
    _s("+1 (555) 123-4567", Kind.PHONE),
    _s("(555) 123-4567", Kind.PHONE),
    _s("555-123-4567", Kind.PHONE),
    _s("+44 20 7946 0958", Kind.PHONE),
    _s("+49 30 12345678", Kind.PHONE),
    _s("+86 138 1234 5678", Kind.PHONE),
    _s("13812345678", Kind.PHONE),
    _s("86-139-1234-5678", Kind.PHONE),
    _s("+8615900001111", Kind.PHONE),
    _s("177-0011-2233", Kind.PHONE),
    # --- Chinese resident ID numbers ---
    _s(CN_ID_1, Kind.CN_ID),
    _s(CN_ID_2, Kind.CN_ID),
    _s(CN_ID_3, Kind.CN_ID),
    _s(CN_ID_4, Kind.CN_ID),
    _s(CN_ID_1.lower(), Kind.CN_ID),
    # --- bank cards ---
    _s(spaced(VISA), Kind.BANK_CARD),
    _s(spaced(MASTERCARD, "-"), Kind.BANK_CARD),
    _s(AMEX, Kind.BANK_CARD),
    _s(spaced(UNIONPAY), Kind.BANK_CARD),
    _s(DISCOVER, Kind.BANK_CARD),
    _s(JCB, Kind.BANK_CARD),
    _s(VISA_2, Kind.BANK_CARD),
    _s(UNIONPAY, Kind.BANK_CARD),
)

ORDINARY_TEXTS: tuple[str, ...] = (
    "ORD-2024-000123",
    "Order #100234 shipped on 2024-03-15",
    "2025-04-01T08:22:00Z",
    "2024-11-30 02:01:20 UTC",
    "¥1,299.00",
    "$3.5M ARR, up 12% QoQ",
    "v2.13.0",
    "numpy==1.20.0",
    "550e8400-e29b-41d4-a716-446655440000",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "git commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "/usr/local/lib/python3.11/site-packages/numpy/__init__.py",
    "C:\\Users\\dev\\projects\\memstrata\\README.md",
    "上下文不是越长越好，而是越有结构越好。",
    "wm:{sess_1}:api:abc",
    "wm:sess_xyz:result:step5",
    "pref:u_789:ui_color",
    "The quick brown fox jumps over the lazy dog.",
    "max_tokens: 512",
    "token_count=42",
    "tokenizer: bpe",
    "primary_key: id",
    "password_policy: strict",
    "Use the Basic plan for small teams.",
    "The bearer of this letter is trusted.",
    "1234567890123456",  # fails Luhn
    "4111111111111112",  # Visa prefix, fails Luhn
    CN_ID_1[:-1] + "1",  # wrong check character
    "110105194913310028",  # month 13
    "1732924800000",
    "unix time 1732924800",
    "12:30:45.123",
    "pi is 3.14159265358979",
    "HTTP 404 Not Found",
    "电池健康预测 Agent 连续处理 37 类传感器数据，错误率从 18.7% 降至 0.9%。",
    "hnsw_config: m=32, ef_construction=128",
    "@dataclass(slots=True)",
    "pip install memstrata[dev]",
    "ssh deploy@localhost",
    "npm install lodash@4.17.21",
    "Call 110 or 120 in an emergency.",
    "Room 1203, Building 5",
    "ISBN 978-3-16-148410-0",
    "2024年3月15日下午3点",
    "Version 1.0.0+20130313144700",
    "Temperature +23.5°C",
    "score 0.94, relevance 0.87",
    "step_id=step4&entity=temp_alert",
    "?page=2&sort=desc&q=battery",
    '{"status": "success", "data_hash": "sha256_xxx"}',
    "session_id: sess_abc123",
    "The API key rotation is scheduled for Monday.",
    "Enter your password below.",
    "请输入密码。",
    "密码是什么？",
    "The password is required.",
    "Your password is too short.",
    "Reset your password to continue.",
    "Passwords are stored hashed.",
    "密码已经改好了。",
    "令牌桶算法把 QPS 限制在 3000。",
    "UUID 123e4567-e89b-12d3-a456-426614174000",
    "Invoice INV-000987654321",
    "Tracking 9400111899223856928499",
    "Range 0x7fffffff",
    "base64 aGVsbG8gd29ybGQ=",
    "Weight 75.5kg, height 180cm",
    "db0:keys=1024,expires=980",
    "价格：¥1,299.00，优惠后 ¥999",
    "Build 20240315.1",
    "Fibonacci 1 1 2 3 5 8 13 21 34 55 89 144",
    "SKU sk-1234",
    "task-manager-configuration-file-loader",
    "risk_assessment_framework_documentation",
    "AKIA is the prefix of an AWS access key id",
    "p99 latency 18ms, expired_keys < 5%",
    "ISO 26262, GB/T 12345-2020",
    "sess_abc123:step4:temp_alert",
    "第 7 轮对话里把用户刚纠正过的术语又用错了一次",
)
