"""Issue 31, second round: credentials found by the structure they stand in (cookie
headers, connection strings, ``curl -u``, folded ``Authorization: Basic`` headers,
markdown tables and code fences, keys wrapped across lines) and however they are
spelled (accented or Chinese passwords, a key spaced out one character at a time),
in English and Chinese; and the look-alikes of each that must stay exactly as written.

A value counts as leaked the way ``memstrata eval redaction`` scores it (its
normalized form survives), or when its second half survives (a value cut in two).
"""

from __future__ import annotations

import base64
import re

import pytest

from memstrata.eval.redaction import norm
from memstrata.gateway import Sanitizer

_B64 = base64.b64encode(b"alice:Wonderland42").decode()
_B64_UTF8 = base64.b64encode("José:contraseña9".encode()).decode()

SECRETS: dict[str, tuple[str, str]] = {
    # cookies
    "set-cookie session": (
        "Set-Cookie: session=9f8a7b6c5d4e3f2a1b0c; Path=/; HttpOnly",
        "9f8a7b6c5d4e3f2a1b0c",
    ),
    "cookie header, second pair": (
        "Cookie: theme=dark; sessionid=Zx81KqPm4RtY77ab",
        "Zx81KqPm4RtY77ab",
    ),
    "cookie in a curl -H": ("curl -H 'Cookie: sid=a8F3kLm92QpZ' https://x.io", "a8F3kLm92QpZ"),
    "cookie, Chinese log": (
        "请求头 Cookie: PHPSESSID=q8v2m1n0b7c6x5z4; lang=zh",
        "q8v2m1n0b7c6x5z4",
    ),
    "cookie json": ('{"cookie": "connect.sid=s%3AaB9cD8eF7gH6iJ5k"}', "s%3AaB9cD8eF7gH6iJ5k"),
    "cookie, random value under any name": (
        "Cookie: _ga=1; prefs=Qm9vT2xhbmQ5OTAxMjM0",
        "Qm9vT2xhbmQ5OTAxMjM0",
    ),
    # connection strings
    "redis, empty user": ("redis://:R3disPass99@cache:6379/0", "R3disPass99"),
    "rediss, empty user, Chinese": ("缓存地址 rediss://:Kx7pQ2mZ@cache.internal:6380", "Kx7pQ2mZ"),
    "postgres": ("DATABASE_URL=postgres://app:S3cr3tPass@db.internal:5432/prod", "S3cr3tPass"),
    "mongodb+srv": ("mongodb+srv://admin:Mng0Pass!x@cluster0.ab1cd.mongodb.net/test", "Mng0Pass!x"),
    "amqp": ("消息队列用 amqp://guest:rabbitPw77@mq:5672/ 连接", "rabbitPw77"),
    # command-line user:password
    "curl -u": ("curl -u alice:Wonderland42 https://api.x.io", "Wonderland42"),
    "curl --user": ("curl --user bob:s3cretpw https://api.x.io", "s3cretpw"),
    "curl -u glued": ("curl -uadmin:Adm1nPw https://api.x.io", "Adm1nPw"),
    "curl --user=, Chinese": ("用 curl --user=deploy:Dp9xK2mQ 调接口", "Dp9xK2mQ"),
    # Authorization: Basic
    "basic folded onto the next line": (f"Authorization: Basic\n  {_B64}", _B64),
    "basic, upper case": (f"BASIC {_B64}", _B64),
    "basic, a UTF-8 credential": (f"auth header was Basic {_B64_UTF8}", _B64_UTF8),
    "basic, Chinese prose": (f"认证头是 Basic {_B64_UTF8}", _B64_UTF8),
    # markdown
    "table, Chinese header": (
        "| 服务 | 密码 |\n|---|---|\n| wifi | Quokka5Ravine |",
        "Quokka5Ravine",
    ),
    "table, English header, code cell": (
        "| host | user | password |\n| --- | --- | --- |\n| db1 | app | `Zq9!mK2p` |",
        "Zq9!mK2p",
    ),
    "table, secret column, second row": (
        "| app | client secret |\n|:--|:--|\n| a | - |\n| b | 8f7a6b5c4d3e2f1a0b9c8d7e |",
        "8f7a6b5c4d3e2f1a0b9c8d7e",
    ),
    "backticked name": ("`password`: `Zq9!mK2p`", "Zq9!mK2p"),
    "value in a code fence under its cue": ("Password:\n```\nQuokka5Ravine\n```", "Quokka5Ravine"),
    "value in a code fence, Chinese": ("密码如下：\n```text\nQuokka5Ravine\n```", "Quokka5Ravine"),
    "mysql -p quoted": ("mysql -h db -u root -p'Qk5!rav99'", "Qk5!rav99"),
    "PowerShell variable assigned": ('$password = "Qk5!rav99"', "Qk5!rav99"),
    "a password that starts with $": ("PGPASSWORD=$ecretPa55 psql -h db", "$ecretPa55"),
    "code fence, yaml": ("```yaml\ndb:\n  password: Yml!pass99\n```", "Yml!pass99"),
    # spelling
    "accented password": ("password: Café-Élan-92", "Café-Élan-92"),
    "accented password in prose": ("my password is mañana#Crème7", "mañana#Crème7"),
    "Chinese password with an ASCII tail": ("我的密码是：天王盖地虎2024", "天王盖地虎2024"),
    "Chinese password, quoted": ("密码：「北京欢迎你」", "北京欢迎你"),
    "Chinese password, curly quotes": ("WiFi 密码：“春眠不觉晓”", "春眠不觉晓"),
    "key spaced out": (
        "api key: s k - a b c d e f 1 2 3 4 5 6 7 8 9 0 a b c d e f g h",
        "sk-abcdef1234567890abcdefgh",
    ),
    "password spaced out": ("ssh pass is p a s s w 0 r d 9 9", "passw0rd99"),
    "key spaced out, Chinese": (
        "密钥是 s k - p r o j - Q w 8 e R 7 t Y 6 u I 5 o P 4 a S 3 d",
        "sk-proj-Qw8eR7tY6uI5oP4aS3d",
    ),
    "key wrapped onto the next line": (
        "token: sk-proj-Abc123Def456\nGhi789Jkl012Mno345",
        "sk-proj-Abc123Def456Ghi789Jkl012Mno345",
    ),
    "github token wrapped, Chinese": (
        "令牌如下：\nghp_aB3dE5fG7hJ9kL1mN3pQ5r\nS7tV9wX1yZ3bC5dE",
        "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ3bC5dE",
    ),
}

BENIGN: dict[str, str] = {
    "cookie preferences": "Set-Cookie: theme=dark; Path=/; Max-Age=3600",
    "cookie, short values": "Cookie: lang=en; tz=UTC",
    "cookie talk": "清除浏览器的 cookie 后重新登录",
    "cookie policy": "Our cookie policy: we set session cookies only after consent.",
    "connection string without a password": "postgres://db.internal:5432/prod",
    "redis without a password": "redis://cache:6379/0",
    "url with a port": "https://example.com:8080/path",
    "curl -u with variables": "curl -u $API_USER:$API_KEY https://x",
    "sort -u": "sort -u names.txt | uniq -c",
    "table without a secret column": "| name | value |\n|---|---|\n| timeout | 30 |",
    "password policy table": (
        "| 项目 | 密码 |\n|---|---|\n| 长度 | 至少 12 位 |\n| 过期 | 无 |\n| 复杂度 | required |"
    ),
    "password column, masked": "| user | password |\n|---|---|\n| bob | ******** |",
    "code fence with password code": (
        "```python\ndef check_password(pw):\n    return len(pw) > 8\n```"
    ),
    "code fence of commands after a cue": "Reset your password:\n```bash\npasswd alice\n```",
    "code fence of a rule after a Chinese cue": "密码规则如下：\n```\nmust be long\n```",
    "shell variables as the password": "curl -u $USER:$PASS https://x",
    "a braced variable as the value": "export PGPASSWORD=${DB_PASSWORD}",
    "a batch variable as the value": "set PASSWORD=%DBPASS%",
    "a template variable as the value": "password: {{ secrets.DB_PASSWORD }}",
    "a pointer to the vault": 'password: see 1Password vault "Infra"',
    "密码引用环境变量": "密码：${DB_PASSWORD}",
    "basic realm": 'WWW-Authenticate: Basic realm="api"',
    "basic as a word": "BASIC is a programming language from 1964",
    "spaced letters": "the letters a b c d e f g h come first",
    "spaced digits": "count 1 2 3 4 5 6 7 8 9 10",
    "Chinese password length rule": "密码：至少8位",
    "Chinese password instruction": "密码：使用SSO登录",
    "accented prose": "The café served crème brûlée.",
    "wrapped prose after a key": "see the docs\nfor details",
}


def _leaked(value: str, out: str) -> bool:
    whole, tail = norm(value), norm(value)[len(norm(value)) // 2 :]
    return whole in norm(out) or (len(tail) >= 4 and tail in norm(out))


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_a_secret_found_by_its_structure_or_spelling_is_redacted(name: str) -> None:
    text, value = SECRETS[name]
    sanitizer = Sanitizer()
    out = sanitizer.text(text, location="test")
    assert not _leaked(value, out), (name, out)
    assert "[REDACTED:" in out
    # Idempotent: the sanitized text is stored as it is.
    assert sanitizer.text(out, location="test") == out


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_a_look_alike_stays_exactly_as_written(name: str) -> None:
    text = BENIGN[name]
    assert Sanitizer().text(text, location="test") == text


def test_only_the_session_cookie_of_a_header_is_replaced() -> None:
    out = Sanitizer().text(
        "Cookie: theme=dark; sessionid=Zx81KqPm4RtY77ab; lang=en", location="test"
    )
    assert out == "Cookie: theme=dark; sessionid=[REDACTED:secret]; lang=en"


def test_a_table_keeps_its_other_cells() -> None:
    out = Sanitizer().text(
        "| 服务 | 账号 | 密码 |\n|---|---|---|\n| wifi | guest | Quokka5Ravine |", location="test"
    )
    assert out == "| 服务 | 账号 | 密码 |\n|---|---|---|\n| wifi | guest | [REDACTED:password] |"


def test_a_spaced_key_is_replaced_as_one_span() -> None:
    out = Sanitizer().text("api key: s k - a b c d e f 1 2 3 4 5 6 7 8 9 0 a b c", location="t")
    assert re.fullmatch(r"api key: \[REDACTED:\w+\]", out), out
