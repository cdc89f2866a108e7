"""Generate the held-back (test) split of the redaction corpus.

    python eval_corpus/redaction/make_test.py > src/memstrata/eval/data/redaction/test.jsonl

Written blind, before the detector changes: the templates below are what users and
tools send (chat, config files, logs, URLs, JSON), not what any rule expects.
Deterministic (fixed seed), Python 3.11 stdlib only. The helpers (value generators,
encodings, checks) are reused by make_dev.py; the templates and value pools are not.
"""

# ruff: noqa: E501, SIM905  (data tables: one template per line, word lists as strings)
from __future__ import annotations

import base64
import json
import random
import re
import string
import sys
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

# ---------------------------------------------------------------- checksums


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    """A Luhn-valid number of `length` digits starting with `prefix`."""
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        if luhn_ok(body + check):
            return body + check
    raise AssertionError("unreachable")


GB11643_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def gb11643_check(body17: str) -> str:
    total = sum(int(d) * w for d, w in zip(body17, GB11643_WEIGHTS, strict=True))
    return "10X98765432"[total % 11]


def gb11643_ok(number: str) -> bool:
    return (
        len(number) == 18
        and number[:17].isdigit()
        and number[17].upper() == gb11643_check(number[:17])
    )


def isbn13(rng: random.Random) -> str:
    body = "978" + "".join(rng.choice(string.digits) for _ in range(9))
    total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(body))
    return body + str((10 - total % 10) % 10)


# ---------------------------------------------------------------- encodings

ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")


def to_fullwidth(text: str) -> str:
    """What a Chinese IME in full-width mode types: ASCII letters, digits, @ : etc."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def group(digits: str, sizes: Iterable[int], sep: str = " ") -> str:
    parts, i = [], 0
    for size in sizes:
        parts.append(digits[i : i + size])
        i += size
    if i < len(digits):
        parts.append(digits[i:])
    return sep.join(p for p in parts if p)


# ---------------------------------------------------------------- values


@dataclass
class Pools:
    """The word and name pools values are drawn from (each split has its own)."""

    words: list[str]
    pinyin: list[str]
    en_names: list[tuple[str, str]]
    zh_names: list[str]  # pinyin of Chinese names, for emails
    domains: list[str]
    zh_domains: list[str]
    id_areas: list[str]
    used: set[str] = field(default_factory=set)


class Values:
    """Realistic, valid secret values; `spaced` gives the grouped form a user types."""

    def __init__(self, rng: random.Random, pools: Pools) -> None:
        self.rng = rng
        self.p = pools

    def _alnum(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    # passwords -------------------------------------------------------------
    def password(self) -> str:
        r = self.rng
        style = r.randrange(6)
        w1, w2 = r.sample(self.p.words, 2)
        if style == 0:  # Word5WordX
            return f"{w1}{r.randrange(2, 10)}{w2}{r.choice(string.ascii_uppercase)}"
        if style == 1:  # lowercase word + year
            return f"{w1.lower()}{r.choice(['2019', '2021', '2023', '2024', '1987', '1314'])}"
        if style == 2:  # pinyin + digits
            a, b = r.sample(self.p.pinyin, 2)
            return f"{a}{b}{r.randrange(100, 9999)}"
        if style == 3:  # Word@digits
            return f"{w1}{r.choice('@#!$')}{r.randrange(10, 999)}"
        if style == 4:  # Capital pinyin + symbol + date
            a = r.choice(self.p.pinyin).capitalize()
            return f"{a}{r.choice('@.!_')}{r.randrange(1, 13):02d}{r.randrange(1, 29):02d}"
        return f"{w1.lower()}{w2.lower()}{r.randrange(10, 99)}"

    def basic(self) -> str:  # the password inside user:pass@host (no URL-special chars)
        r = self.rng
        w = r.choice(self.p.words)
        return f"{w}{r.randrange(10, 9999)}{r.choice(['', 'x', 'Q', 'zz', 'K9'])}"

    def basic_b64(self) -> str:
        user = self.rng.choice(["admin", "ops", "deploy", "api", "reporter", "svc-backup"])
        return base64.b64encode(f"{user}:{self.basic()}".encode()).decode()

    # vendor tokens ---------------------------------------------------------
    def api_key(self) -> str:
        r = self.rng
        style = r.randrange(5)
        if style == 0:
            return "sk-proj-" + self._alnum(48)
        if style == 1:
            return "sk_live_" + self._alnum(24)
        if style == 2:
            return self._alnum(32, "0123456789abcdef")
        if style == 3:
            return "key-" + self._alnum(32, "0123456789abcdef")
        return "sk-" + self._alnum(32)

    def aws_ak(self) -> str:
        return self.rng.choice(["AKIA", "AKIA", "ASIA"]) + self._alnum(
            16, string.ascii_uppercase + "234567"
        )

    def aws_sk(self) -> str:
        return self._alnum(40, string.ascii_letters + string.digits + "+/")

    def gh(self) -> str:
        r = self.rng
        if r.random() < 0.3:
            return (
                "github_pat_11"
                + self._alnum(20, string.ascii_uppercase + string.digits)
                + ("_" + self._alnum(59))
            )
        return r.choice(["ghp_", "ghp_", "gho_", "ghs_"]) + self._alnum(36)

    def slack(self) -> str:
        r = self.rng
        kind = r.choice(["xoxb", "xoxb", "xoxp"])
        a = str(r.randrange(10**11, 10**12))
        b = str(r.randrange(10**12, 10**13))
        return f"{kind}-{a}-{b}-{self._alnum(24)}"

    def gkey(self) -> str:
        return "AIza" + self._alnum(35, string.ascii_letters + string.digits + "_-")

    def jwt(self) -> str:
        r = self.rng

        def b64(obj: object) -> str:
            raw = json.dumps(obj, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        header = {"alg": r.choice(["HS256", "RS256"]), "typ": "JWT"}
        iat = 1764000000 + r.randrange(0, 5_000_000)
        payload = {"sub": str(r.randrange(1000, 999999)), "iat": iat, "exp": iat + 3600}
        if r.random() < 0.5:
            payload["role"] = r.choice(["user", "admin", "member"])
        sig = self._alnum(43, string.ascii_letters + string.digits + "_-")
        return f"{b64(header)}.{b64(payload)}.{sig}"

    def bearer(self) -> str:
        r = self.rng
        style = r.randrange(3)
        if style == 0:
            return self._alnum(40)
        if style == 1:
            return "ya29." + self._alnum(60, string.ascii_letters + string.digits + "_-")
        return self._alnum(8, "0123456789abcdef") + "." + self._alnum(32)

    def secret(self) -> str:
        r = self.rng
        style = r.randrange(4)
        if style == 0:
            return self._alnum(32, "0123456789abcdef")
        if style == 1:
            return self._alnum(16, string.ascii_uppercase + "234567")  # TOTP-style base32
        if style == 2:
            return "whsec_" + self._alnum(32)
        return self._alnum(44, string.ascii_letters + string.digits + "_-")

    def pem(self) -> str:
        r = self.rng
        label, head = r.choice(
            [
                ("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA"),
                ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
                ("EC PRIVATE KEY", "MHcCAQEEI"),
                ("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
            ]
        )
        alphabet = string.ascii_letters + string.digits + "+/"
        lines = [head + self._alnum(64 - len(head), alphabet)]
        lines += [self._alnum(64, alphabet) for _ in range(r.randrange(4, 8))]
        lines.append(self._alnum(r.randrange(12, 60), alphabet) + r.choice(["", "=", "=="]))
        return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"

    def pem_json(self) -> str:  # the same block as a JSON / .env string: literal \n
        return self.pem().replace("\n", "\\n")

    # personal data ---------------------------------------------------------
    def email(self) -> str:
        r = self.rng
        first, last = r.choice(self.p.en_names)
        local = r.choice(
            [
                f"{first}.{last}",
                f"{first[0]}{last}",
                f"{first}{r.randrange(1, 99)}",
                f"{last}.{first[0]}",
            ]
        ).lower()
        return f"{local}@{r.choice(self.p.domains)}"

    def email_zh(self) -> str:
        r = self.rng
        name = r.choice(self.p.zh_names)
        local = r.choice([name, f"{name}{r.randrange(1, 999)}", f"{name}_{r.randrange(80, 99)}"])
        if r.random() < 0.2:
            local = str(r.randrange(10**8, 10**10))  # QQ-number mailboxes
            return f"{local}@qq.com"
        return f"{local}@{r.choice(self.p.zh_domains)}"

    CN_MOBILE_PREFIXES = (
        "130 131 132 133 135 136 137 138 139 150 151 152 153 155 156 157 158 159 "
        "166 173 175 176 177 178 180 181 182 183 185 186 187 188 189 191 198 199"
    ).split()

    def phone_cn(self) -> str:
        return self.rng.choice(self.CN_MOBILE_PREFIXES) + self._alnum(8, string.digits)

    def phone_cn86(self) -> str:
        return "+86" + self.phone_cn()

    def phone_us(self) -> str:  # 555-01xx: the range set aside for fiction
        area = self.rng.choice(["415", "212", "646", "312", "206", "617", "512", "303"])
        return f"{area}-555-01{self.rng.randrange(0, 100):02d}"

    def phone_us_e164(self) -> str:
        return "+1" + self.phone_us().replace("-", "")

    def phone_uk(self) -> str:  # 07700 900xxx: Ofcom's drama range
        return f"+44 7700 900{self.rng.randrange(0, 1000):03d}"

    def cn_id(self) -> str:
        r = self.rng
        area = r.choice(self.p.id_areas)
        born = date(1950, 1, 1) + timedelta(days=r.randrange(0, 365 * 55))
        body = f"{area}{born:%Y%m%d}{r.randrange(1, 1000):03d}"
        return body + gb11643_check(body)

    def card(self) -> str:
        r = self.rng
        prefix = r.choice(["4", "4", "51", "52", "53", "54", "55", "2221", "2720"])
        return luhn_complete(prefix + "".join(r.choice(string.digits) for _ in range(5)), 16, r)

    def card_up(self) -> str:  # UnionPay debit cards: 62, 16 or 19 digits
        r = self.rng
        bin_ = r.choice(["622202", "622848", "621700", "622588", "621483", "623668", "622908"])
        return luhn_complete(bin_, r.choice([16, 19, 19]), r)

    def card_amex(self) -> str:
        r = self.rng
        return luhn_complete(r.choice(["34", "37"]), 15, r)

    # spaced (grouped) forms --------------------------------------------------
    def spaced(self, name: str, value: str) -> str | None:
        r = self.rng
        if name in ("card", "card_up"):
            return group(value, [4] * 5, r.choice([" ", " ", "-"]))
        if name == "card_amex":
            return group(value, [4, 6, 5])
        if name == "cn_id":
            return group(value, [6, 8, 4], r.choice([" ", " ", "-"]))
        if name == "phone_cn":
            return group(value, [3, 4, 4], r.choice([" ", "-"]))
        if name == "phone_cn86":
            return "+86 " + group(value[3:], [3, 4, 4])
        if name == "phone_us":
            area, rest = value[:3], value[4:]
            return f"({area}) {rest}"
        if name == "phone_us_e164":
            return f"+1 {value[2:5]} {value[5:8]} {value[8:]}"
        return None

    def make(self, name: str) -> str:
        for _ in range(100):
            value = getattr(self, name)()
            if value not in self.p.used:
                self.p.used.add(value)
                return value
        raise AssertionError(f"cannot draw a fresh {name}")


PLACEHOLDER_KIND = {
    "password": "password",
    "basic": "basic_auth",
    "basic_b64": "basic_auth",
    "api_key": "api_key",
    "aws_ak": "aws_access_key",
    "aws_sk": "aws_secret_key",
    "gh": "github_token",
    "slack": "slack_token",
    "gkey": "google_api_key",
    "jwt": "jwt",
    "bearer": "bearer_token",
    "secret": "secret",
    "pem": "private_key",
    "pem_json": "private_key",
    "email": "email",
    "email_zh": "email",
    "phone_cn": "phone",
    "phone_cn86": "phone",
    "phone_us": "phone",
    "phone_us_e164": "phone",
    "phone_uk": "phone",
    "cn_id": "cn_id",
    "card": "bank_card",
    "card_up": "bank_card",
    "card_amex": "bank_card",
}
SPACEABLE = {"card", "card_up", "card_amex", "cn_id", "phone_cn", "phone_cn86", "phone_us"}
SLOT = re.compile(r"\{\{(\w+)\}\}")

# Cue words a zero-width character is slipped into (the first one before the value).
CUES = (
    "password passcode passwd pwd wifi token secret signing api key email mail phone mobile "
    "cell card card number id 密码 口令 密钥 令牌 秘钥 邮箱 手机 电话 身份证 卡号 银行卡"
).split()

# A secret template: (phrasing id, lang, encoding, text with {{slots}}).
Template = tuple[str, str, str, str]


@dataclass
class Row:
    lang: str
    kind: str
    encoding: str
    phrasing: str
    lookalike: str
    text: str
    secrets: list[dict[str, str]]


def render(tpl: str, values: Values, spaced: bool = False) -> tuple[str, list[dict[str, str]]]:
    secrets: list[dict[str, str]] = []

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        value = values.make(name)
        if spaced and name in SPACEABLE:
            value = values.spaced(name, value) or value
        if name in PLACEHOLDER_KIND:
            secrets.append({"kind": PLACEHOLDER_KIND[name], "value": value})
        return value

    return SLOT.sub(fill, tpl), secrets


def insert_zero_width(
    text: str, secrets: list[dict[str, str]], rng: random.Random
) -> tuple[str, list[dict[str, str]]]:
    """Slip a zero-width character into the cue word, or else into the value."""
    zw = rng.choice(ZERO_WIDTH)
    first = secrets[0]["value"]
    start = text.find(first)
    lowered = text[:start].lower()
    cue_at = -1
    for cue in CUES:
        at = lowered.rfind(cue)
        if at >= 0 and len(cue) >= 2 and at > cue_at:
            cue_at, cue_len = at, len(cue)
    if cue_at >= 0 and rng.random() < 0.6:
        cut = cue_at + max(1, cue_len // 2)
        return text[:cut] + zw + text[cut:], secrets
    cut = max(2, len(first) // 2)
    new_value = first[:cut] + zw + first[cut:]
    new_secrets = [dict(secrets[0], value=new_value), *secrets[1:]]
    return text[:start] + new_value + text[start + len(first) :], new_secrets


def fullwidth_row(
    text: str, secrets: list[dict[str, str]], rng: random.Random
) -> tuple[str, list[dict[str, str]]]:
    # Emails are often typed with only the full-width ＠ (a Chinese IME's habit).
    if secrets[0]["kind"] == "email" and rng.random() < 0.5:
        value = secrets[0]["value"]
        new_value = value.replace("@", "＠")
        return text.replace(value, new_value), [
            dict(secrets[0], value=new_value),
            *secrets[1:],
        ]
    return to_fullwidth(text), [dict(s, value=to_fullwidth(s["value"])) for s in secrets]


def secret_rows(templates: dict[str, list[Template]], values: Values) -> list[Row]:
    """Each template once as written; plain/chat ones also full-width or zero-width,
    and those with a number that people group also spaced."""
    rng = values.rng
    rows: list[Row] = []
    for kind, items in templates.items():
        for i, (pid, lang, enc, tpl) in enumerate(items):
            text, secrets = render(tpl, values)
            rows.append(Row(lang, kind, enc, pid, "", text, secrets))
            if enc not in ("plain", "chat") or kind == "private_key":
                continue
            if i % 3 == 0:
                text, secrets = render(tpl, values)
                text, secrets = fullwidth_row(text, secrets, rng)
                rows.append(Row(lang, kind, "fullwidth", pid, "", text, secrets))
            elif i % 3 == 1:
                text, secrets = render(tpl, values)
                text, secrets = insert_zero_width(text, secrets, rng)
                rows.append(Row(lang, kind, "zerowidth", pid, "", text, secrets))
            if any(name in SPACEABLE for name in SLOT.findall(tpl)):
                text, secrets = render(tpl, values, spaced=True)
                rows.append(Row(lang, kind, "spacing", pid, "", text, secrets))
    return rows


# ---------------------------------------------------------------- benign values


class BenignValues:
    """Numbers that look like secrets but are not: each one fails the check it resembles."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def _digits(self, n: int) -> str:
        return "".join(self.rng.choice(string.digits) for _ in range(n))

    def order(self, n: int) -> str:
        """An order number of n digits, dated like shops do, that fails Luhn (and GB 11643)."""
        while True:
            head = f"2026{self.rng.randrange(1, 13):02d}{self.rng.randrange(1, 29):02d}"
            value = (head + self._digits(n))[:n] if n < 8 else head + self._digits(n - 8)
            if not luhn_ok(value) and not gb11643_ok(value):
                return value

    def order_plain(self) -> str:  # 13-19 digits, not Luhn-valid
        while True:
            value = self.rng.choice("2345789") + self._digits(self.rng.randrange(12, 19))
            if not luhn_ok(value) and not gb11643_ok(value):
                return value

    def order_grouped(self) -> str:
        return group(self.order(16), [4, 4, 4, 4])

    def sf(self) -> str:
        while True:
            d = "1" + self._digits(12)
            if not luhn_ok(d) and not d.startswith(("13", "14", "15", "16", "17", "18", "19")):
                return "SF" + d

    def ups(self) -> str:
        alnum = string.ascii_uppercase + string.digits
        return "1Z" + "".join(self.rng.choice(alnum) for _ in range(6)) + self._digits(10)

    def isbn(self) -> str:
        while True:
            value = isbn13(self.rng)
            if not luhn_ok(value):
                return f"{value[:3]}-{value[3]}-{value[4:7]}-{value[7:12]}-{value[12]}"

    def uuid(self) -> str:
        h = "".join(self.rng.choice("0123456789abcdef") for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def usd(self) -> str:
        return f"${self.rng.randrange(1, 3000):,}.{self.rng.randrange(0, 100):02d}"

    def cny(self) -> str:
        return f"¥{self.rng.randrange(10, 60000):,}"

    def yuan(self) -> str:
        return f"{self.rng.randrange(20, 90000)}元"

    def day(self) -> str:
        d = date(2026, 1, 1) + timedelta(days=self.rng.randrange(0, 365))
        return d.isoformat()

    def zh_day(self) -> str:
        d = date(2026, 1, 1) + timedelta(days=self.rng.randrange(0, 365))
        return f"{d.year}年{d.month}月{d.day}日"

    def version(self) -> str:
        r = self.rng
        return f"v{r.randrange(1, 9)}.{r.randrange(0, 30)}.{r.randrange(0, 20)}"

    def sku(self) -> str:
        r = self.rng
        return (
            f"{r.choice(['SKU', 'HX', 'TS', 'BK'])}-{r.randrange(10000, 99999)}-"
            f"{r.choice(['BLK', 'WHT', 'RED', 'NVY'])}-{r.choice(['S', 'M', 'L', 'XL'])}"
        )

    def invoice(self) -> str:
        return f"INV-2026-{self.rng.randrange(1, 99999):05d}"

    def pct(self) -> str:
        return f"{self.rng.randrange(1, 99)}.{self.rng.randrange(0, 10)}%"

    def room(self) -> str:
        return str(self.rng.randrange(2, 30) * 100 + self.rng.randrange(1, 40))

    def flight(self) -> str:
        r = self.rng
        return (
            f"{r.choice(['CA', 'MU', 'CZ', 'HU', 'UA', 'BA', 'LH', 'NH'])}{r.randrange(100, 9999)}"
        )

    def n(self) -> str:
        return str(self.rng.randrange(2, 500))

    def make(self, name: str) -> str:
        if name.startswith("order") and name[5:].isdigit():
            return self.order(int(name[5:]))
        fn: Callable[[], str] = getattr(self, name)
        return fn()


PHONE_LIKE = re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)")
US_PHONE = re.compile(r"\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b")
NUMBER_RUN = re.compile(r"\d(?:[ \-]?\d)*")  # digits, maybe grouped by spaces or hyphens


def benign_is_clean(text: str) -> bool:
    """A benign text holds no number a careful reader would take for a secret."""
    flat = unicodedata.normalize("NFKC", text)
    for m in NUMBER_RUN.finditer(flat):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            return False
        if len(digits) == 18 and gb11643_ok(digits):
            return False
        if PHONE_LIKE.fullmatch(digits):
            return False
    if any(len(run) in (10, 11) for run in re.findall(r"\d+", flat)) or US_PHONE.search(flat):
        return False  # a bare 10/11-digit number reads as a phone number
    return not any(gb11643_ok(m) for m in re.findall(r"\d{17}[Xx]", flat))


# A benign template: (phrasing id, lang, encoding, lookalike, text with {{slots}}).
BenignTemplate = tuple[str, str, str, str, str]


def benign_rows(templates: list[BenignTemplate], bv: BenignValues, per: int = 3) -> list[Row]:
    rows: list[Row] = []
    seen: set[str] = set()
    for i, (pid, lang, enc, look, tpl) in enumerate(templates):
        made = 0
        for _attempt in range(50):
            if made >= (per if SLOT.search(tpl) else 1):
                break
            text = SLOT.sub(lambda m: bv.make(m.group(1)), tpl)
            if text in seen or not benign_is_clean(text):
                continue
            seen.add(text)
            rows.append(Row(lang, "benign", enc, pid, look, text, []))
            made += 1
        if enc == "plain" and i % 4 == 0:  # the same look-alike typed in full-width
            text = to_fullwidth(SLOT.sub(lambda m: bv.make(m.group(1)), tpl))
            if text not in seen and benign_is_clean(text):
                seen.add(text)
                rows.append(Row(lang, "benign", "fullwidth", pid, look, text, []))
    return rows


def emit(rows: list[Row], split: str, rng: random.Random) -> None:
    """Shuffle (so kinds interleave) and write UTF-8 JSON lines, whatever the locale."""
    rng.shuffle(rows)
    lines = []
    for n, row in enumerate(rows, 1):
        record = {
            "id": f"{split}-{n:04d}",
            "split": split,
            "lang": row.lang,
            "kind": row.kind,
            "encoding": row.encoding,
            "phrasing": row.phrasing,
            "lookalike": row.lookalike,
            "text": row.text,
            "secrets": row.secrets,
        }
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.buffer.write("".join(lines).encode("utf-8"))


# ======================================================================
# The test split's own pools and templates (make_dev.py has disjoint ones).
# ======================================================================

SEED = 31_0001

POOLS = Pools(
    words=(
        "Marmot Glacier Pelican Juniper Canyon Walrus Saffron Lantern Osprey Cobalt "
        "Tundra Pumpkin Falcon Meadow Harbor Thistle Badger Cactus Orchid Comet "
        "Sunflower Biscuit Maple Otter Pebble Velvet Dolphin Mango Cricket Zephyr"
    ).split(),
    pinyin="xiaoyu lanmao tiantian huahua dabai mingyue qingfeng xingxing baobao "
    "jinhua yunduo haitao".split(),
    en_names=[
        ("dana", "whitfield"),
        ("marcus", "oyelaran"),
        ("priya", "nair"),
        ("tom", "becker"),
        ("elena", "kowalski"),
        ("sam", "okafor"),
        ("hannah", "lindqvist"),
        ("jorge", "ortiz"),
        ("grace", "mbeki"),
        ("oliver", "tran"),
    ],
    zh_names="wangfang liwei zhangmin chenjing liuyang zhaolei sunli zhoujie "
    "huangyan wuhao".split(),
    domains="gmail.com outlook.com yahoo.com protonmail.com northwind-labs.com "
    "fastmail.fm harbourline.co.uk brightpath.io".split(),
    zh_domains="163.com 126.com qq.com foxmail.com sina.com aliyun.com huaxin-tech.cn".split(),
    id_areas="110105 110108 310104 310115 440305 440106 510107 330106 320102 420106 "
    "370202 610113".split(),
)

# fmt: off
T: dict[str, list[Template]] = {
    "password": [
        ("t-en-pw-01", "en", "chat", "my password is {{password}}"),
        ("t-en-pw-02", "en", "chat", "I use {{password}} as my password for pretty much everything, is that bad?"),
        ("t-en-pw-03", "en", "chat", "My passcode is {{password}}."),
        ("t-en-pw-04", "en", "chat", "the wifi password is {{password}} btw"),
        ("t-en-pw-05", "en", "plain", "Password: {{password}}"),
        ("t-en-pw-06", "en", "linebreak", "password:\n{{password}}"),
        ("t-en-pw-07", "en", "json", '{"username": "mchen", "password": "{{password}}"}'),
        ("t-en-pw-08", "en", "env", "DB_HOST=10.0.4.12\nDB_USER=app\nDB_PASSWORD={{password}}"),
        ("t-en-pw-09", "en", "log", "2026-12-02 09:41:07 DEBUG auth.login user=jdoe pwd={{password}} result=ok"),
        ("t-en-pw-10", "en", "markdown", "```sql\nCREATE USER 'report'@'%' IDENTIFIED BY '{{password}}';\n```"),
        ("t-en-pw-11", "en", "url", "https://portal.lakeside-college.edu/login?user=kpatel&password={{password}}"),
        ("t-en-pw-12", "en", "chat", "I changed my password to {{password}} yesterday, remind me if I forget"),
        ("t-en-pw-13", "en", "chat", "my password was {{password}} before they made me reset it"),
        ("t-en-pw-14", "en", "plain", "Temporary password {{password}} - please change it at first login."),
        ("t-zh-pw-01", "zh", "chat", "我的密码是{{password}}"),
        ("t-zh-pw-02", "zh", "plain", "密码为{{password}}。"),
        ("t-zh-pw-03", "zh", "chat", "我的口令是 {{password}}"),
        ("t-zh-pw-04", "zh", "plain", "登录密码：{{password}}"),
        ("t-zh-pw-05", "zh", "linebreak", "密码：\n{{password}}"),
        ("t-zh-pw-06", "zh", "chat", "家里WiFi密码是{{password}}，连上就能用"),
        ("t-zh-pw-07", "zh", "json", '{"用户名": "liuyang", "密码": "{{password}}"}'),
        ("t-zh-pw-08", "zh", "env", "# 数据库配置\nMYSQL_ROOT_PASSWORD={{password}}"),
        ("t-zh-pw-09", "zh", "log", "[2026-12-02 09:41:07] 登录成功 用户=zhaolei 密码={{password}}"),
        ("t-zh-pw-10", "zh", "chat", "我所有网站都用{{password}}当密码，安全吗？"),
        ("t-zh-pw-11", "zh", "chat", "帮我记一下，邮箱密码改成了{{password}}。"),
        ("t-zh-pw-12", "zh", "url", "登录链接 https://oa.huaxin-tech.cn/login?user=chenjing&pwd={{password}}"),
        ("t-zh-pw-13", "zh", "markdown", "```sql\nALTER USER root@localhost IDENTIFIED BY '{{password}}';\n```\n改完密码后重启一下"),
        ("t-zh-pw-14", "zh", "plain", "初始密码{{password}}，首次登录后请修改。"),
        ("t-mx-pw-01", "mixed", "chat", "我的 password 是 {{password}}"),
        ("t-mx-pw-02", "mixed", "plain", "Wi-Fi 密码: {{password}}，guest network 不用密码"),
    ],
    "api_key": [
        ("t-en-api-01", "en", "plain", "Here's the API key for the staging account: {{api_key}}"),
        ("t-en-api-02", "en", "env", "OPENAI_API_KEY={{api_key}}"),
        ("t-en-api-03", "en", "json", '{"service": "billing", "api_key": "{{api_key}}", "region": "eu-west-1"}'),
        ("t-en-api-04", "en", "url", "curl 'https://api.weatherly.io/v2/forecast?city=Leeds&api_key={{api_key}}'"),
        ("t-en-api-05", "en", "chat", "can you check why this isn't working? my api key is {{api_key}}"),
        ("t-en-api-06", "en", "linebreak", "API key:\n{{api_key}}"),
        ("t-en-api-07", "en", "markdown", '```python\nclient = Client(api_key="{{api_key}}")\nprint(client.status())\n```'),
        ("t-en-api-08", "en", "log", "2026-11-30 14:02:11 WARN request rejected x-api-key={{api_key}} status=401"),
        ("t-en-api-09", "en", "plain", "Use apikey {{api_key}} for the Mailgun integration until Friday."),
        ("t-en-api-10", "en", "chat", "I pasted {{api_key}} as the key in the plugin settings and it still says invalid"),
        ("t-en-api-11", "en", "plain", "X-API-Key: {{api_key}}"),
        ("t-zh-api-01", "zh", "plain", "这是测试环境的API密钥：{{api_key}}，别外传。"),
        ("t-zh-api-02", "zh", "chat", "我的 api key 是 {{api_key}}，帮我看看为什么调用报 401"),
        ("t-zh-api-03", "zh", "json", '{"接口": "短信", "api_key": "{{api_key}}"}'),
        ("t-zh-api-04", "zh", "env", "# 生产环境\nSMS_API_KEY={{api_key}}"),
        ("t-zh-api-05", "zh", "url", "请求地址是 https://api.mapvendor.cn/v3/geocode?address=杭州&key={{api_key}} 返回为空"),
        ("t-zh-api-06", "zh", "linebreak", "接口密钥：\n{{api_key}}"),
        ("t-zh-api-07", "zh", "chat", "把 apikey 换成 {{api_key}} 就能用了。"),
        ("t-zh-api-08", "zh", "markdown", "配置如下：\n```yaml\nprovider: deepseek\napi_key: {{api_key}}\n```"),
        ("t-zh-api-09", "zh", "log", "[2026-12-01 08:31:55] ERROR 调用失败 apiKey={{api_key}} code=403"),
        ("t-zh-api-10", "zh", "plain", "开放平台给我的AppKey为{{api_key}}。"),
        ("t-zh-api-11", "zh", "plain", "API Key：{{api_key}}（有效期一年）"),
        ("t-mx-api-01", "mixed", "chat", "这个 API key 是 {{api_key}}, please keep it private"),
    ],
    "aws_access_key": [
        ("t-en-aak-01", "en", "env", "AWS_ACCESS_KEY_ID={{aws_ak}}\nAWS_SECRET_ACCESS_KEY={{aws_sk}}"),
        ("t-en-aak-02", "en", "env", "[default]\naws_access_key_id = {{aws_ak}}\naws_secret_access_key = {{aws_sk}}\nregion = us-east-1"),
        ("t-en-aak-03", "en", "plain", "The access key ID is {{aws_ak}}, I rotated it last week."),
        ("t-en-aak-04", "en", "markdown", "```python\ns3 = boto3.client('s3', aws_access_key_id='{{aws_ak}}', aws_secret_access_key='{{aws_sk}}')\n```"),
        ("t-en-aak-05", "en", "json", '{"AccessKeyId": "{{aws_ak}}", "SecretAccessKey": "{{aws_sk}}", "Expiration": "2026-12-08T09:00:00Z"}'),
        ("t-en-aak-06", "en", "chat", "hey, I think I leaked our key {{aws_ak}} in a public gist, how do I revoke it?"),
        ("t-en-aak-07", "en", "log", "2026-12-02T10:11:09Z AccessDenied: User with access key {{aws_ak}} is not authorized to perform s3:PutObject"),
        ("t-en-aak-08", "en", "linebreak", "Access key ID:\n{{aws_ak}}"),
        ("t-en-aak-09", "en", "url", "https://reports-bucket.s3.amazonaws.com/q3.pdf?AWSAccessKeyId={{aws_ak}}&Expires=1765184400"),
        ("t-en-aak-10", "en", "plain", "aws configure set aws_access_key_id {{aws_ak}}"),
        ("t-en-aak-11", "en", "chat", "the IAM user for the backup job uses {{aws_ak}}"),
        ("t-zh-aak-01", "zh", "plain", "AWS 访问密钥 ID：{{aws_ak}}"),
        ("t-zh-aak-02", "zh", "chat", "我们的 AccessKeyId 是 {{aws_ak}}，SecretKey 是 {{aws_sk}}。"),
        ("t-zh-aak-03", "zh", "env", "# 运维给的\naws_access_key_id={{aws_ak}}"),
        ("t-zh-aak-04", "zh", "chat", "这个 key {{aws_ak}} 昨天被 GitHub 扫描到泄露了，怎么吊销？"),
        ("t-zh-aak-05", "zh", "json", '{"账号": "日志归档", "access_key_id": "{{aws_ak}}"}'),
        ("t-zh-aak-06", "zh", "linebreak", "访问密钥ID：\n{{aws_ak}}"),
        ("t-zh-aak-07", "zh", "log", "2026-12-03 16:20:41 上传失败：密钥 {{aws_ak}} 没有 s3:GetObject 权限"),
        ("t-zh-aak-08", "zh", "markdown", "部署脚本：\n```bash\nexport AWS_ACCESS_KEY_ID={{aws_ak}}\naws s3 sync ./dist s3://web-static\n```"),
        ("t-zh-aak-09", "zh", "url", "预签名链接 https://oss-bucket.s3.amazonaws.com/a.zip?AWSAccessKeyId={{aws_ak}}&Expires=1765184400 打不开"),
        ("t-zh-aak-10", "zh", "plain", "备份任务用的 IAM 用户 AK 为{{aws_ak}}。"),
        ("t-zh-aak-11", "zh", "chat", "帮我看下 {{aws_ak}} 这个 AK 属于哪个账号"),
    ],
    "aws_secret_key": [
        ("t-en-ask-01", "en", "env", "aws_secret_access_key = {{aws_sk}}"),
        ("t-en-ask-02", "en", "plain", "Secret access key: {{aws_sk}}"),
        ("t-en-ask-03", "en", "plain", "The secret key for the backup user is {{aws_sk}}."),
        ("t-en-ask-04", "en", "chat", "I accidentally committed my AWS secret {{aws_sk}} to the repo"),
        ("t-en-ask-05", "en", "json", '{"aws": {"secret_access_key": "{{aws_sk}}"}}'),
        ("t-en-ask-06", "en", "linebreak", "AWS secret access key:\n{{aws_sk}}"),
        ("t-en-ask-07", "en", "markdown", "```\nAWS_SECRET_ACCESS_KEY={{aws_sk}}\n```"),
        ("t-en-ask-08", "en", "log", "DEBUG botocore.credentials: loaded secret_key={{aws_sk}} from env"),
        ("t-en-ask-09", "en", "env", "docker run -e AWS_SECRET_ACCESS_KEY={{aws_sk}} backup:latest"),
        ("t-en-ask-10", "en", "plain", "SecretAccessKey {{aws_sk}} (do not share)"),
        ("t-en-ask-11", "en", "chat", "use {{aws_sk}} as the secret key when you set up the CLI"),
        ("t-zh-ask-01", "zh", "plain", "Secret Access Key：{{aws_sk}}（只读账号）"),
        ("t-zh-ask-02", "zh", "chat", "SecretKey是{{aws_sk}}，你先用着。"),
        ("t-zh-ask-03", "zh", "chat", "我不小心把 AWS 的 secret key {{aws_sk}} 提交到仓库了"),
        ("t-zh-ask-04", "zh", "env", "AWS_SECRET_ACCESS_KEY={{aws_sk}}  # 运维给的"),
        ("t-zh-ask-05", "zh", "json", '{"secretAccessKey": "{{aws_sk}}", "说明": "只读账号"}'),
        ("t-zh-ask-06", "zh", "linebreak", "私有访问密钥：\n{{aws_sk}}"),
        ("t-zh-ask-07", "zh", "markdown", "凭证文件：\n```ini\n[prod]\naws_secret_access_key = {{aws_sk}}\n```"),
        ("t-zh-ask-08", "zh", "log", "[WARN] 凭证加载 secret_access_key={{aws_sk}} 来源=环境变量"),
        ("t-zh-ask-09", "zh", "plain", "访问密钥对的私钥部分为 {{aws_sk}}。"),
        ("t-zh-ask-10", "zh", "chat", "把 {{aws_sk}} 填到 SK 那一栏就行"),
        ("t-zh-ask-11", "zh", "plain", "S3 账号的 SK：{{aws_sk}}"),
    ],
    "github_token": [
        ("t-en-gh-01", "en", "env", "GITHUB_TOKEN={{gh}}"),
        ("t-en-gh-02", "en", "url", "git clone https://{{gh}}@github.com/acme/infra.git"),
        ("t-en-gh-03", "en", "chat", "my GitHub personal access token is {{gh}}"),
        ("t-en-gh-04", "en", "json", '{"github": {"token": "{{gh}}", "org": "acme"}}'),
        ("t-en-gh-05", "en", "markdown", "```yaml\n- uses: actions/checkout@v4\n  with:\n    token: {{gh}}\n```"),
        ("t-en-gh-06", "en", "linebreak", "GitHub PAT:\n{{gh}}"),
        ("t-en-gh-07", "en", "log", "2026-12-04 11:02:17 ERROR push failed: remote rejected for token {{gh}}"),
        ("t-en-gh-08", "en", "plain", "Use {{gh}} for the release bot, it has repo scope."),
        ("t-en-gh-09", "en", "plain", "Authorization: token {{gh}}"),
        ("t-en-gh-10", "en", "chat", "I generated a new PAT ({{gh}}) but the CI still fails"),
        ("t-en-gh-11", "en", "plain", "echo {{gh}} | gh auth login --with-token"),
        ("t-zh-gh-01", "zh", "plain", "GitHub 的个人访问令牌是 {{gh}}"),
        ("t-zh-gh-02", "zh", "chat", "我的 github token：{{gh}}，权限只有 repo。"),
        ("t-zh-gh-03", "zh", "env", "# CI 变量\nGH_TOKEN={{gh}}"),
        ("t-zh-gh-04", "zh", "url", "克隆地址 https://{{gh}}@github.com/team/app.git 提示认证失败"),
        ("t-zh-gh-05", "zh", "json", '{"仓库": "team/app", "token": "{{gh}}"}'),
        ("t-zh-gh-06", "zh", "linebreak", "令牌：\n{{gh}}"),
        ("t-zh-gh-07", "zh", "markdown", "流水线里这样配：\n```bash\nexport GITHUB_TOKEN={{gh}}\n```"),
        ("t-zh-gh-08", "zh", "log", "[2026-12-04 09:12:40] 推送失败 token={{gh}} 403"),
        ("t-zh-gh-09", "zh", "chat", "帮我看看 {{gh}} 这个 token 为什么没权限"),
        ("t-zh-gh-10", "zh", "plain", "机器人账号用的 PAT 为{{gh}}。"),
        ("t-zh-gh-11", "zh", "chat", "新生成的令牌 {{gh}} 已经配到流水线里了"),
        ("t-mx-gh-01", "mixed", "chat", "GitHub token 给你：{{gh}}, expires in 30 days"),
    ],
    "slack_token": [
        ("t-en-slk-01", "en", "env", "SLACK_BOT_TOKEN={{slack}}"),
        ("t-en-slk-02", "en", "plain", "Our Slack bot token is {{slack}}, it can post to #alerts."),
        ("t-en-slk-03", "en", "json", '{"slack_token": "{{slack}}", "channel": "#deploys"}'),
        ("t-en-slk-04", "en", "markdown", "```js\nconst app = new App({ token: '{{slack}}' });\n```"),
        ("t-en-slk-05", "en", "linebreak", "Slack token:\n{{slack}}"),
        ("t-en-slk-06", "en", "log", "slack_sdk.errors.SlackApiError: invalid_auth (token={{slack}})"),
        ("t-en-slk-07", "en", "chat", "the token I'm using is {{slack}} - is that a bot or a user token?"),
        ("t-en-slk-08", "en", "url", "https://slack.com/api/chat.postMessage?token={{slack}}&channel=C024BE91L"),
        ("t-en-slk-09", "en", "plain", "Bot User OAuth Token: {{slack}}"),
        ("t-en-slk-10", "en", "chat", "I put {{slack}} in the config but the bot stays offline"),
        ("t-en-slk-11", "en", "plain", "Please revoke {{slack}}, it was posted in a public channel."),
        ("t-zh-slk-01", "zh", "plain", "Slack 机器人令牌：{{slack}}"),
        ("t-zh-slk-02", "zh", "chat", "我们的 slack token 是 {{slack}}"),
        ("t-zh-slk-03", "zh", "env", "# 告警通知\nSLACK_TOKEN={{slack}}"),
        ("t-zh-slk-04", "zh", "json", '{"通知渠道": "slack", "token": "{{slack}}"}'),
        ("t-zh-slk-05", "zh", "linebreak", "机器人的 Slack Bot Token：\n{{slack}}"),
        ("t-zh-slk-06", "zh", "log", "[告警] slack 推送失败 token={{slack}} error=invalid_auth"),
        ("t-zh-slk-07", "zh", "markdown", "机器人初始化：\n```python\nWebClient(token=\"{{slack}}\")\n```"),
        ("t-zh-slk-08", "zh", "url", "回调里带着 https://slack.com/api/auth.test?token={{slack}}"),
        ("t-zh-slk-09", "zh", "chat", "把 {{slack}} 配进去以后机器人还是不上线"),
        ("t-zh-slk-10", "zh", "plain", "这个令牌 {{slack}} 被发到公开频道了，麻烦吊销。"),
        ("t-zh-slk-11", "zh", "plain", "用于发告警的 OAuth 令牌为 {{slack}}。"),
    ],
    "google_api_key": [
        ("t-en-gak-01", "en", "env", "GOOGLE_MAPS_API_KEY={{gkey}}"),
        ("t-en-gak-02", "en", "url", '<script src="https://maps.googleapis.com/maps/api/js?key={{gkey}}&callback=initMap"></script>'),
        ("t-en-gak-03", "en", "json", '{"apiKey": "{{gkey}}", "authDomain": "tripnotes-4821.firebaseapp.com", "projectId": "tripnotes-4821"}'),
        ("t-en-gak-04", "en", "chat", "my google api key is {{gkey}}, why does geocoding say REQUEST_DENIED?"),
        ("t-en-gak-05", "en", "linebreak", "Google API key:\n{{gkey}}"),
        ("t-en-gak-06", "en", "log", "2026-12-05 07:44:10 INFO calling youtube/v3/search key={{gkey}} quota=ok"),
        ("t-en-gak-07", "en", "markdown", '```kotlin\nPlaces.initialize(context, "{{gkey}}")\n```'),
        ("t-en-gak-08", "en", "plain", "The Gemini key {{gkey}} belongs to the research project."),
        ("t-en-gak-09", "en", "plain", "Restrict {{gkey}} to our Android app before launch."),
        ("t-en-gak-10", "en", "url", 'curl "https://www.googleapis.com/youtube/v3/videos?id=Ks-_Mh1QhMc&part=snippet&key={{gkey}}"'),
        ("t-en-gak-11", "en", "chat", "I use {{gkey}} as the Maps key in both apps"),
        ("t-zh-gak-01", "zh", "plain", "谷歌地图的 API 密钥是 {{gkey}}"),
        ("t-zh-gak-02", "zh", "env", "# 地图服务\nGOOGLE_API_KEY={{gkey}}"),
        ("t-zh-gak-03", "zh", "json", '{"apiKey": "{{gkey}}", "projectId": "xiaochengxu-2291", "备注": "测试"}'),
        ("t-zh-gak-04", "zh", "url", "页面里引用了 https://maps.googleapis.com/maps/api/geocode/json?address=上海&key={{gkey}}"),
        ("t-zh-gak-05", "zh", "linebreak", "Google 密钥：\n{{gkey}}"),
        ("t-zh-gak-06", "zh", "log", "[2026-12-05 10:20:31] 调用 Gemini 失败 key={{gkey}} 429"),
        ("t-zh-gak-07", "zh", "markdown", "前端这样写的：\n```js\nconst genAI = new GoogleGenerativeAI(\"{{gkey}}\");\n```"),
        ("t-zh-gak-08", "zh", "chat", "我用的 key 是 {{gkey}}，地理编码一直报 REQUEST_DENIED"),
        ("t-zh-gak-09", "zh", "plain", "Firebase 项目的 apiKey 为{{gkey}}。"),
        ("t-zh-gak-10", "zh", "plain", "请把 {{gkey}} 限制到安卓应用，别让别人盗刷。"),
        ("t-zh-gak-11", "zh", "chat", "帮我查下这个谷歌 key {{gkey}} 还有多少配额"),
    ],
    "jwt": [
        ("t-en-jwt-01", "en", "plain", "Authorization: Bearer {{jwt}}"),
        ("t-en-jwt-02", "en", "chat", "here's the id_token I got back: {{jwt}}"),
        ("t-en-jwt-03", "en", "json", '{"access_token": "{{jwt}}", "token_type": "Bearer", "expires_in": 3600}'),
        ("t-en-jwt-04", "en", "url", "https://app.northwindcrm.com/sso/callback?id_token={{jwt}}"),
        ("t-en-jwt-05", "en", "linebreak", "JWT:\n{{jwt}}"),
        ("t-en-jwt-06", "en", "log", "2026-12-06 13:05:44 DEBUG session verified jwt={{jwt}} sub=4821"),
        ("t-en-jwt-07", "en", "markdown", "```http\nGET /v1/orders HTTP/1.1\nHost: api.shopline.dev\nAuthorization: Bearer {{jwt}}\n```"),
        ("t-en-jwt-08", "en", "plain", "Cookie: session={{jwt}}; Path=/; HttpOnly"),
        ("t-en-jwt-09", "en", "plain", "Decode this token for me: {{jwt}}"),
        ("t-en-jwt-10", "en", "chat", "my session token is {{jwt}} and it expired after 5 minutes, why?"),
        ("t-en-jwt-11", "en", "env", "AUTH_JWT={{jwt}}"),
        ("t-zh-jwt-01", "zh", "plain", "登录后返回的 token 是 {{jwt}}"),
        ("t-zh-jwt-02", "zh", "chat", "帮我解析一下这个 JWT：{{jwt}}"),
        ("t-zh-jwt-03", "zh", "json", '{"code": 0, "data": {"token": "{{jwt}}"}, "msg": "登录成功"}'),
        ("t-zh-jwt-04", "zh", "url", "回调地址 https://h5.youzan-shop.cn/auth?token={{jwt}} 打开是空白页"),
        ("t-zh-jwt-05", "zh", "linebreak", "令牌：\n{{jwt}}"),
        ("t-zh-jwt-06", "zh", "log", "[2026-12-06 21:40:02] 鉴权失败 jwt={{jwt}} 原因=过期"),
        ("t-zh-jwt-07", "zh", "markdown", "抓包看到的请求头：\n```\nAuthorization: Bearer {{jwt}}\n```"),
        ("t-zh-jwt-08", "zh", "chat", "我的登录凭证{{jwt}}过期太快了"),
        ("t-zh-jwt-09", "zh", "plain", "请求头里带的 Authorization 为 Bearer {{jwt}}。"),
        ("t-zh-jwt-10", "zh", "env", "# 联调用\nJWT_TOKEN={{jwt}}"),
        ("t-zh-jwt-11", "zh", "plain", "小程序缓存里的 token：{{jwt}}"),
        ("t-mx-jwt-01", "mixed", "chat", "这个 id_token {{jwt}} decode 出来 exp 不对"),
    ],
    "bearer_token": [
        ("t-en-brr-01", "en", "plain", "Authorization: Bearer {{bearer}}"),
        ("t-en-brr-02", "en", "plain", 'curl -H "Authorization: Bearer {{bearer}}" https://api.ledgerly.io/v1/accounts'),
        ("t-en-brr-03", "en", "chat", "the bearer token I'm sending is {{bearer}}"),
        ("t-en-brr-04", "en", "json", '{"headers": {"Authorization": "Bearer {{bearer}}"}}'),
        ("t-en-brr-05", "en", "log", '2026-12-06 08:00:12 INFO GET /api/me 200 auth="Bearer {{bearer}}"'),
        ("t-en-brr-06", "en", "linebreak", "Bearer token:\n{{bearer}}"),
        ("t-en-brr-07", "en", "markdown", '```python\nrequests.get(url, headers={"Authorization": "Bearer {{bearer}}"})\n```'),
        ("t-en-brr-08", "en", "env", "API_BEARER_TOKEN={{bearer}}"),
        ("t-en-brr-09", "en", "url", "wss://stream.tradeview.io/v2?access_token={{bearer}}"),
        ("t-en-brr-10", "en", "plain", "Access token: {{bearer}} (expires in 1h)"),
        ("t-en-brr-11", "en", "chat", "I use bearer {{bearer}} for the Postman collection"),
        ("t-zh-brr-01", "zh", "plain", "请求头 Authorization: Bearer {{bearer}}，还是返回 401"),
        ("t-zh-brr-02", "zh", "chat", "我的访问令牌是 {{bearer}}"),
        ("t-zh-brr-03", "zh", "json", '{"access_token": "{{bearer}}", "expires_in": 7200, "说明": "测试"}'),
        ("t-zh-brr-04", "zh", "log", "[2026-12-06 19:22:10] 请求 /api/user/info 返回 401，Bearer {{bearer}}"),
        ("t-zh-brr-05", "zh", "linebreak", "登录接口返回的 access_token：\n{{bearer}}"),
        ("t-zh-brr-06", "zh", "markdown", "调试命令：\n```bash\ncurl -H 'Authorization: Bearer {{bearer}}' https://open.feishu-demo.cn/api/v1/me\n```"),
        ("t-zh-brr-07", "zh", "url", "接口 https://api.yunpay.cn/v1/bill?access_token={{bearer}} 一直报错"),
        ("t-zh-brr-08", "zh", "env", "# 网关\nACCESS_TOKEN={{bearer}}"),
        ("t-zh-brr-09", "zh", "chat", "帮我看看 Bearer {{bearer}} 这个令牌是不是过期了"),
        ("t-zh-brr-10", "zh", "plain", "接口调用凭证为{{bearer}}。"),
        ("t-zh-brr-11", "zh", "plain", "临时访问令牌：{{bearer}}，两小时后失效。"),
    ],
    "basic_auth": [
        ("t-en-bas-01", "en", "url", "git remote add origin https://deploy:{{basic}}@git.internal.acme.io/ops/infra.git"),
        ("t-en-bas-02", "en", "url", "DATABASE_URL=postgres://app_user:{{basic}}@db.prod.internal:5432/orders"),
        ("t-en-bas-03", "en", "plain", "Authorization: Basic {{basic_b64}}"),
        ("t-en-bas-04", "en", "chat", "I connect with https://admin:{{basic}}@192.168.1.20:8443/ but the browser warns"),
        ("t-en-bas-05", "en", "json", '{"proxy": "http://squid:{{basic}}@proxy.corp.local:3128"}'),
        ("t-en-bas-06", "en", "log", "2026-12-01 12:12:12 INFO connecting to amqp://guest:{{basic}}@mq.internal:5672//"),
        ("t-en-bas-07", "en", "markdown", "```bash\ncurl -u ci-bot:{{basic}} https://jenkins.acme.io/job/build/api/json\n```"),
        ("t-en-bas-08", "en", "linebreak", "Basic auth header:\nBasic {{basic_b64}}"),
        ("t-en-bas-09", "en", "url", "The feed is at https://reader:{{basic}}@feeds.harbourline.co.uk/rss"),
        ("t-en-bas-10", "en", "chat", "my redis url is redis://default:{{basic}}@cache-1.internal:6379/0"),
        ("t-en-bas-11", "en", "env", "MONGO_URI=mongodb+srv://svc:{{basic}}@cluster0.x8k2p.mongodb.net/app"),
        ("t-zh-bas-01", "zh", "url", "仓库地址是 https://zhangwei:{{basic}}@gitee.com/team/app.git"),
        ("t-zh-bas-02", "zh", "plain", "数据库连接串：mysql://root:{{basic}}@10.0.3.15:3306/shop"),
        ("t-zh-bas-03", "zh", "plain", "请求头加上 Authorization: Basic {{basic_b64}} 就能访问"),
        ("t-zh-bas-04", "zh", "json", '{"代理": "http://proxyuser:{{basic}}@10.1.1.1:8080"}'),
        ("t-zh-bas-05", "zh", "log", "[2026-12-02 03:14:15] 连接 amqp://admin:{{basic}}@mq01:5672 失败"),
        ("t-zh-bas-06", "zh", "markdown", "查索引：\n```bash\ncurl -u admin:{{basic}} http://192.168.1.8:9200/_cat/indices\n```"),
        ("t-zh-bas-07", "zh", "linebreak", "Basic 认证头：\nBasic {{basic_b64}}"),
        ("t-zh-bas-08", "zh", "chat", "我用 https://admin:{{basic}}@nas.local:5001 登录群晖"),
        ("t-zh-bas-09", "zh", "env", "# 缓存\nREDIS_URL=redis://:{{basic}}@127.0.0.1:6379/1"),
        ("t-zh-bas-10", "zh", "url", "摄像头的 RTSP 地址为 rtsp://admin:{{basic}}@192.168.1.64:554/stream1。"),
        ("t-zh-bas-11", "zh", "chat", "FTP 用 ftp://upload:{{basic}}@ftp.huaxin-tech.cn 传文件就行"),
    ],
    "private_key": [
        ("t-en-pem-01", "en", "plain", "Here's the deploy key:\n{{pem}}"),
        ("t-en-pem-02", "en", "markdown", "```\n{{pem}}\n```"),
        ("t-en-pem-03", "en", "json", '{"type": "service_account", "project_id": "tripnotes-4821", "private_key": "{{pem_json}}"}'),
        ("t-en-pem-04", "en", "chat", "can you tell me why ssh rejects this key?\n{{pem}}"),
        ("t-en-pem-05", "en", "env", 'SSH_PRIVATE_KEY="{{pem_json}}"'),
        ("t-en-pem-06", "en", "linebreak", "private key:\n{{pem}}"),
        ("t-en-pem-07", "en", "log", "[deploy] writing key to ~/.ssh/id_rsa:\n{{pem}}"),
        ("t-en-pem-08", "en", "plain", "{{pem}}"),
        ("t-en-pem-09", "en", "plain", "$ cat ~/.ssh/id_ed25519\n{{pem}}"),
        ("t-en-pem-10", "en", "chat", "My TLS server key is below, is it 2048-bit?\n{{pem}}"),
        ("t-zh-pem-01", "zh", "plain", "这是服务器的私钥：\n{{pem}}"),
        ("t-zh-pem-02", "zh", "chat", "帮我看下这个私钥格式对不对\n{{pem}}"),
        ("t-zh-pem-03", "zh", "markdown", "部署用的 SSH 私钥：\n```\n{{pem}}\n```"),
        ("t-zh-pem-04", "zh", "json", '{"app_id": "2021004137650412", "private_key": "{{pem_json}}", "备注": "沙箱"}'),
        ("t-zh-pem-05", "zh", "env", '# 支付宝\nALIPAY_PRIVATE_KEY="{{pem_json}}"'),
        ("t-zh-pem-06", "zh", "linebreak", "私钥：\n{{pem}}"),
        ("t-zh-pem-07", "zh", "plain", "{{pem}}\n上面是证书对应的私钥"),
        ("t-zh-pem-08", "zh", "log", "[2026-12-03 10:00:00] 加载签名私钥成功：\n{{pem}}"),
        ("t-zh-pem-09", "zh", "chat", "我把 id_rsa 的内容贴出来：\n{{pem}}"),
        ("t-zh-pem-10", "zh", "plain", "支付宝应用私钥如下\n{{pem}}\n公钥已经上传了。"),
    ],
    "secret": [
        ("t-en-sec-01", "en", "plain", "client secret: {{secret}}"),
        ("t-en-sec-02", "en", "plain", "The OAuth client secret is {{secret}}."),
        ("t-en-sec-03", "en", "env", "JWT_SIGNING_KEY={{secret}}"),
        ("t-en-sec-04", "en", "json", '{"client_id": "web-portal", "client_secret": "{{secret}}"}'),
        ("t-en-sec-05", "en", "linebreak", "Webhook signing secret:\n{{secret}}"),
        ("t-en-sec-06", "en", "log", "2026-12-04 17:30:00 WARN webhook verify failed secret={{secret}}"),
        ("t-en-sec-07", "en", "markdown", '```python\nSECRET_KEY = "{{secret}}"\n```'),
        ("t-en-sec-08", "en", "chat", "our HMAC key is {{secret}}, can you compute the signature for this payload?"),
        ("t-en-sec-09", "en", "url", "https://hooks.partnerpay.com/notify?secret={{secret}}"),
        ("t-en-sec-10", "en", "chat", "I set the encryption key to {{secret}} in the vault"),
        ("t-en-sec-11", "en", "plain", "TOTP seed {{secret}} - scan it into your authenticator."),
        ("t-zh-sec-01", "zh", "plain", "客户端密钥：{{secret}}"),
        ("t-zh-sec-02", "zh", "chat", "商户密钥是 {{secret}}，签名一直不对"),
        ("t-zh-sec-03", "zh", "plain", "AppSecret为{{secret}}。"),
        ("t-zh-sec-04", "zh", "env", "# 公众号\nAPP_SECRET={{secret}}"),
        ("t-zh-sec-05", "zh", "json", '{"appid": "wx8f2c1a9b3d4e5f60", "secret": "{{secret}}", "备注": "公众号"}'),
        ("t-zh-sec-06", "zh", "linebreak", "签名密钥：\n{{secret}}"),
        ("t-zh-sec-07", "zh", "log", "[2026-12-04 17:30:00] 验签失败 密钥={{secret}}"),
        ("t-zh-sec-08", "zh", "markdown", "常量定义：\n```java\nprivate static final String SIGN_KEY = \"{{secret}}\";\n```"),
        ("t-zh-sec-09", "zh", "chat", "加密用的密钥我设成了{{secret}}"),
        ("t-zh-sec-10", "zh", "url", "回调 https://pay.shopxx.cn/notify?sign_key={{secret}} 验签失败"),
        ("t-zh-sec-11", "zh", "plain", "动态口令种子为 {{secret}}，请用身份验证器扫描。"),
        ("t-zh-sec-12", "zh", "plain", "内部服务调用令牌为{{secret}}"),
        ("t-mx-sec-01", "mixed", "plain", "client secret 是 {{secret}}，别提交到 git"),
    ],
    "email": [
        ("t-en-em-01", "en", "chat", "You can reach me at {{email}}"),
        ("t-en-em-02", "en", "chat", "my email is {{email}}."),
        ("t-en-em-03", "en", "json", '{"name": "Dana Whitfield", "email": "{{email}}"}'),
        ("t-en-em-04", "en", "plain", "Email: {{email}}"),
        ("t-en-em-05", "en", "linebreak", "Email address:\n{{email}}"),
        ("t-en-em-06", "en", "log", "2026-12-01 10:10:10 INFO password reset requested for {{email}}"),
        ("t-en-em-07", "en", "markdown", "| name | email |\n|---|---|\n| Priya Nair | {{email}} |"),
        ("t-en-em-08", "en", "url", "mailto:{{email}}?subject=Invoice%20question"),
        ("t-en-em-09", "en", "chat", "send the contract to {{email}} please"),
        ("t-en-em-10", "en", "env", "ADMIN_EMAIL={{email}}"),
        ("t-en-em-11", "en", "plain", "From: Tom Becker <{{email}}>"),
        ("t-en-em-12", "en", "chat", "I signed up with {{email}} but never got the confirmation"),
        ("t-zh-em-01", "zh", "chat", "我的邮箱是{{email_zh}}"),
        ("t-zh-em-02", "zh", "plain", "联系邮箱：{{email_zh}}。"),
        ("t-zh-em-03", "zh", "chat", "请把发票发到{{email_zh}}，谢谢"),
        ("t-zh-em-04", "zh", "json", '{"姓名": "王芳", "邮箱": "{{email_zh}}"}'),
        ("t-zh-em-05", "zh", "linebreak", "邮箱：\n{{email_zh}}"),
        ("t-zh-em-06", "zh", "log", "[2026-12-01 10:10:10] 发送验证邮件到 {{email_zh}} 成功"),
        ("t-zh-em-07", "zh", "markdown", "| 姓名 | 邮箱 |\n|---|---|\n| 李娜 | {{email_zh}} |"),
        ("t-zh-em-08", "zh", "url", "简历请投递 mailto:{{email_zh}}?subject=应聘"),
        ("t-zh-em-09", "zh", "chat", "我注册用的是 {{email_zh}}，一直收不到验证码"),
        ("t-zh-em-10", "zh", "env", "# 告警邮件\nNOTIFY_EMAIL={{email_zh}}"),
        ("t-zh-em-11", "zh", "plain", "有问题发邮件给张老师（{{email_zh}}）。"),
        ("t-mx-em-01", "mixed", "chat", "my 邮箱 is {{email_zh}}"),
    ],
    "phone": [
        ("t-en-ph-01", "en", "chat", "call me at {{phone_us}}"),
        ("t-en-ph-02", "en", "chat", "My cell is {{phone_us}}."),
        ("t-en-ph-03", "en", "plain", "Phone: {{phone_uk}}"),
        ("t-en-ph-04", "en", "json", '{"contact": {"name": "Sam Okafor", "phone": "{{phone_us}}"}}'),
        ("t-en-ph-05", "en", "linebreak", "Mobile:\n{{phone_us}}"),
        ("t-en-ph-06", "en", "log", "2026-12-03 08:00:01 INFO SMS sent to {{phone_us_e164}} status=delivered"),
        ("t-en-ph-07", "en", "markdown", "| name | phone |\n|---|---|\n| Carlos | {{phone_uk}} |"),
        ("t-en-ph-08", "en", "url", "Click to call: tel:{{phone_us_e164}}"),
        ("t-en-ph-09", "en", "chat", "text me on {{phone_uk}} when you land"),
        ("t-en-ph-10", "en", "env", "ALERT_PHONE={{phone_us_e164}}"),
        ("t-en-ph-11", "en", "chat", "you can reach my wife at {{phone_us}} if I don't answer"),
        ("t-zh-ph-01", "zh", "chat", "我的手机号是{{phone_cn}}"),
        ("t-zh-ph-02", "zh", "plain", "联系电话：{{phone_cn}}。"),
        ("t-zh-ph-03", "zh", "plain", "手机号码为 {{phone_cn86}}"),
        ("t-zh-ph-04", "zh", "json", '{"收货人": "刘洋", "手机": "{{phone_cn}}"}'),
        ("t-zh-ph-05", "zh", "linebreak", "手机：\n{{phone_cn}}"),
        ("t-zh-ph-06", "zh", "log", "[2026-12-03 08:00:01] 短信验证码已发送至 {{phone_cn}}"),
        ("t-zh-ph-07", "zh", "markdown", "| 姓名 | 电话 |\n|---|---|\n| 陈静 | {{phone_cn}} |"),
        ("t-zh-ph-08", "zh", "url", "一键拨号 tel:{{phone_cn86}}"),
        ("t-zh-ph-09", "zh", "chat", "有事打我电话 {{phone_cn}}"),
        ("t-zh-ph-10", "zh", "env", "# 值班\nADMIN_MOBILE={{phone_cn}}"),
        ("t-zh-ph-11", "zh", "chat", "快递员说送到了，我留的号码是{{phone_cn}}"),
        ("t-zh-ph-12", "zh", "plain", "收货人：王磊，{{phone_cn}}，北京市朝阳区望京街道"),
        ("t-mx-ph-01", "mixed", "chat", "call me 手机 {{phone_cn}} anytime"),
    ],
    "cn_id": [
        ("t-zh-id-01", "zh", "chat", "我的身份证号是{{cn_id}}"),
        ("t-zh-id-02", "zh", "plain", "身份证号码：{{cn_id}}。"),
        ("t-zh-id-03", "zh", "json", '{"姓名": "张伟", "身份证号": "{{cn_id}}"}'),
        ("t-zh-id-04", "zh", "linebreak", "身份证：\n{{cn_id}}"),
        ("t-zh-id-05", "zh", "log", "[2026-12-02 14:00:00] 实名认证通过 id_card={{cn_id}}"),
        ("t-zh-id-06", "zh", "markdown", "| 姓名 | 证件号 |\n|---|---|\n| 李强 | {{cn_id}} |"),
        ("t-zh-id-07", "zh", "url", "实名核验链接 https://zwfw.hz-demo.cn/verify?idcard={{cn_id}}&from=app"),
        ("t-zh-id-08", "zh", "chat", "帮我订票，乘客身份证{{cn_id}}"),
        ("t-zh-id-09", "zh", "env", "# 联调账号\nTEST_ID_CARD={{cn_id}}"),
        ("t-zh-id-10", "zh", "plain", "证件类型：居民身份证 证件号：{{cn_id}}"),
        ("t-zh-id-11", "zh", "chat", "我妈的身份证号码为{{cn_id}}，帮她挂个号"),
        ("t-en-id-01", "en", "chat", "My Chinese ID number is {{cn_id}}."),
        ("t-en-id-02", "en", "plain", "Resident ID: {{cn_id}}"),
        ("t-en-id-03", "en", "json", '{"name": "Wei Zhang", "id_number": "{{cn_id}}"}'),
        ("t-en-id-04", "en", "linebreak", "ID card number:\n{{cn_id}}"),
        ("t-en-id-05", "en", "log", "2026-12-02 14:00:00 INFO KYC passed id_card={{cn_id}}"),
        ("t-en-id-06", "en", "markdown", "| passenger | ID |\n|---|---|\n| Li Na | {{cn_id}} |"),
        ("t-en-id-07", "en", "url", "https://kyc.fintrail.io/check?national_id={{cn_id}}"),
        ("t-en-id-08", "en", "chat", "for the visa form, my national ID is {{cn_id}}"),
        ("t-en-id-09", "en", "env", "KYC_TEST_ID={{cn_id}}"),
        ("t-en-id-10", "en", "plain", "Passenger: Liu Yang, PRC ID {{cn_id}}, seat 32A"),
        ("t-en-id-11", "en", "chat", "can you check if {{cn_id}} is a valid ID card number?"),
        ("t-mx-id-01", "mixed", "plain", "ID card 身份证: {{cn_id}}"),
    ],
    "bank_card": [
        ("t-en-card-01", "en", "chat", "my card number is {{card}}"),
        ("t-en-card-02", "en", "plain", "Card: {{card}} exp 08/28"),
        ("t-en-card-03", "en", "json", '{"card_number": "{{card}}", "exp": "08/28"}'),
        ("t-en-card-04", "en", "linebreak", "Card number:\n{{card}}"),
        ("t-en-card-05", "en", "log", "2026-12-05 19:19:19 ERROR payment declined pan={{card}}"),
        ("t-en-card-06", "en", "markdown", "| holder | card |\n|---|---|\n| J. Ortiz | {{card}} |"),
        ("t-en-card-07", "en", "url", "https://checkout.sample-store.com/pay?card={{card}}&amount=42"),
        ("t-en-card-08", "en", "chat", "charge it to my Visa {{card}}"),
        ("t-en-card-09", "en", "env", "TEST_PAN={{card}}"),
        ("t-en-card-10", "en", "chat", "I paid with my Amex {{card_amex}}, can you refund to it?"),
        ("t-en-card-11", "en", "plain", "Please update the billing card to {{card}}."),
        ("t-zh-card-01", "zh", "chat", "我的银行卡号是{{card_up}}"),
        ("t-zh-card-02", "zh", "plain", "卡号：{{card_up}}。"),
        ("t-zh-card-03", "zh", "plain", "工资卡 {{card_up}}，开户行招商银行"),
        ("t-zh-card-04", "zh", "json", '{"持卡人": "周杰", "卡号": "{{card_up}}"}'),
        ("t-zh-card-05", "zh", "linebreak", "银行卡号：\n{{card_up}}"),
        ("t-zh-card-06", "zh", "log", "[2026-12-05 19:19:19] 代扣失败 card_no={{card_up}}"),
        ("t-zh-card-07", "zh", "markdown", "| 姓名 | 收款账号 |\n|---|---|\n| 孙丽 | {{card_up}} |"),
        ("t-zh-card-08", "zh", "url", "绑卡链接 https://pay.xx-mall.cn/bind?cardNo={{card}}"),
        ("t-zh-card-09", "zh", "chat", "退款请打到这张卡{{card_up}}"),
        ("t-zh-card-10", "zh", "env", "# 测试卡\nTEST_CARD_NO={{card}}"),
        ("t-zh-card-11", "zh", "chat", "我信用卡号{{card}}，有效期08/28"),
        ("t-mx-card-01", "mixed", "chat", "refund to 我的卡 {{card_up}} please"),
    ],
}

# Benign look-alikes: (phrasing id, lang, encoding, lookalike, text).
B: list[BenignTemplate] = [
    # order numbers (13-19 digits failing Luhn, 18 digits failing GB 11643)
    ("t-en-bn-ord-01", "en", "plain", "order_number", "Where is my order {{order18}}? It said 3-5 days."),
    ("t-en-bn-ord-02", "en", "plain", "order_number", "Order #{{order16}} was cancelled but I was still charged."),
    ("t-en-bn-ord-03", "en", "json", "order_number", '{"order_id": "{{order19}}", "status": "shipped", "items": 3}'),
    ("t-en-bn-ord-04", "en", "spacing", "order_number", "Your order number is {{order_grouped}}, keep it for returns."),
    ("t-en-bn-ord-05", "en", "log", "order_number", "2026-12-01 10:02:33 INFO order={{order_plain}} state=PAID"),
    ("t-en-bn-ord-06", "en", "plain", "order_number", "Reference number {{order14}} for your refund request."),
    ("t-zh-bn-ord-01", "zh", "plain", "order_number", "订单号{{order18}}怎么还没发货？"),
    ("t-zh-bn-ord-02", "zh", "plain", "order_number", "订单编号：{{order19}}，申请退款"),
    ("t-zh-bn-ord-03", "zh", "json", "order_number", '{"订单号": "{{order18}}", "状态": "已签收"}'),
    ("t-zh-bn-ord-04", "zh", "plain", "order_number", "我的淘宝订单 {{order_plain}} 一直显示待发货"),
    ("t-zh-bn-ord-05", "zh", "spacing", "order_number", "外卖订单号 {{order_grouped}}，骑手说找不到地址"),
    ("t-zh-bn-ord-06", "zh", "plain", "order_number", "交易单号{{order16}}，付款成功但没到账。"),
    # tracking numbers
    ("t-en-bn-trk-01", "en", "plain", "tracking_number", "UPS tracking {{ups}} shows out for delivery."),
    ("t-en-bn-trk-02", "en", "plain", "tracking_number", "The parcel {{ups}} is stuck in Louisville since Monday."),
    ("t-en-bn-trk-03", "en", "url", "tracking_number", "Track it here: https://www.ups.com/track?tracknum={{ups}}"),
    ("t-en-bn-trk-04", "en", "plain", "tracking_number", "Tracking number: {{order_plain}} (DHL Express)"),
    ("t-zh-bn-trk-01", "zh", "plain", "tracking_number", "顺丰单号{{sf}}，麻烦帮我查一下到哪了"),
    ("t-zh-bn-trk-02", "zh", "plain", "tracking_number", "快递单号：{{sf}}。"),
    ("t-zh-bn-trk-03", "zh", "plain", "tracking_number", "中通快递 {{order13}} 显示已签收但我没收到"),
    ("t-zh-bn-trk-04", "zh", "json", "tracking_number", '{"快递公司": "顺丰", "运单号": "{{sf}}"}'),
    # invoices
    ("t-en-bn-inv-01", "en", "plain", "invoice_number", "Invoice {{invoice}} is due on the 15th."),
    ("t-en-bn-inv-02", "en", "plain", "invoice_number", "Please reference {{invoice}} when you pay {{usd}}."),
    ("t-zh-bn-inv-01", "zh", "plain", "invoice_number", "发票号码 {{invoice}}，金额{{yuan}}"),
    ("t-zh-bn-inv-02", "zh", "plain", "invoice_number", "请开具发票，对应订单 {{order18}}。"),
    # prices and amounts
    ("t-en-bn-price-01", "en", "plain", "price", "The laptop is {{usd}} on sale, down from $1,499.00."),
    ("t-en-bn-price-02", "en", "plain", "price", "Rent went up to {{usd}} a month."),
    ("t-en-bn-price-03", "en", "json", "price", '{"sku": "{{sku}}", "price": 129.99, "currency": "USD"}'),
    ("t-en-bn-price-04", "en", "plain", "price", "Budget for the trip is about $5,000 including flights."),
    ("t-zh-bn-price-01", "zh", "plain", "price", "这个月房租{{cny}}，水电另算"),
    ("t-zh-bn-price-02", "zh", "plain", "price", "报价是{{yuan}}，能便宜点吗？"),
    ("t-zh-bn-price-03", "zh", "plain", "price", "年终奖到手¥5,000，比去年少。"),
    ("t-zh-bn-price-04", "zh", "plain", "price", "双十一买的空调花了{{yuan}}。"),
    # dates and times
    ("t-en-bn-date-01", "en", "plain", "date", "The meeting moved to {{day}} at 14:30."),
    ("t-en-bn-date-02", "en", "plain", "date", "My flight lands on {{day}} at 06:45 local time."),
    ("t-en-bn-date-03", "en", "log", "date", "{{day}} 23:59:59 INFO nightly backup finished in 412s"),
    ("t-zh-bn-date-01", "zh", "plain", "date", "{{zh_day}}下午3点开会"),
    ("t-zh-bn-date-02", "zh", "plain", "date", "预约的时间是{{day}} 09:30，别迟到。"),
    ("t-zh-bn-date-03", "zh", "plain", "date", "孩子生日是{{zh_day}}，提醒我订蛋糕"),
    # versions
    ("t-en-bn-ver-01", "en", "plain", "version", "Upgrading to {{version}} fixed the crash."),
    ("t-en-bn-ver-02", "en", "markdown", "version", "```\npip install requests==2.32.3\n```\nthen restart the worker"),
    ("t-en-bn-ver-03", "en", "plain", "version", "We're still on Python 3.11.9 and Node 20.18.1."),
    ("t-zh-bn-ver-01", "zh", "plain", "version", "升级到{{version}}之后就不闪退了"),
    ("t-zh-bn-ver-02", "zh", "plain", "version", "微信版本 8.0.54，安卓14"),
    # ISBNs
    ("t-en-bn-isbn-01", "en", "plain", "isbn", "The textbook's ISBN is {{isbn}}."),
    ("t-en-bn-isbn-02", "en", "plain", "isbn", "Can you find ISBN {{isbn}} at the library?"),
    ("t-zh-bn-isbn-01", "zh", "plain", "isbn", "这本书的书号是 ISBN {{isbn}}"),
    ("t-zh-bn-isbn-02", "zh", "plain", "isbn", "教材 ISBN：{{isbn}}，第3版"),
    # flights, rooms, postcodes, SKUs
    ("t-en-bn-flt-01", "en", "plain", "flight_number", "I'm on {{flight}}, departing gate 23 at 7:40."),
    ("t-en-bn-flt-02", "en", "plain", "flight_number", "Flight {{flight}} was delayed by two hours."),
    ("t-zh-bn-flt-01", "zh", "plain", "flight_number", "我坐{{flight}}航班，明早8点到"),
    ("t-zh-bn-flt-02", "zh", "plain", "flight_number", "{{flight}}延误了，改签到晚上。"),
    ("t-en-bn-room-01", "en", "plain", "room_number", "I'm in room {{room}} at the Hilton."),
    ("t-en-bn-room-02", "en", "plain", "room_number", "The workshop is in Room {{room}}, second floor."),
    ("t-zh-bn-room-01", "zh", "plain", "room_number", "我住{{room}}房间，早餐几点？"),
    ("t-zh-bn-room-02", "zh", "plain", "room_number", "会议室在3号楼{{room}}室"),
    ("t-en-bn-post-01", "en", "plain", "postcode", "Ship it to 221B Baker Street, London NW1 6XE."),
    ("t-en-bn-post-02", "en", "plain", "postcode", "The office zip code is 94105."),
    ("t-zh-bn-post-01", "zh", "plain", "postcode", "邮编100020，北京市朝阳区建国路88号"),
    ("t-zh-bn-post-02", "zh", "plain", "postcode", "上海的邮政编码200120是浦东的"),
    ("t-en-bn-sku-01", "en", "plain", "sku", "Is {{sku}} back in stock?"),
    ("t-en-bn-sku-02", "en", "json", "sku", '{"sku": "{{sku}}", "qty": 2}'),
    ("t-zh-bn-sku-01", "zh", "plain", "sku", "商品编码{{sku}}还有货吗"),
    ("t-zh-bn-sku-02", "zh", "plain", "sku", "货号 {{sku}} 尺码偏小"),
    # password and key talk without a value
    ("t-en-bn-pwn-01", "en", "plain", "password_reset_notice", "Your password reset link was sent to your email."),
    ("t-en-bn-pwn-02", "en", "plain", "password_reset_notice", "We received a request to reset your password. The link expires in 30 minutes."),
    ("t-en-bn-pwn-03", "en", "chat", "password_talk", "I forgot my password again, how do I reset it?"),
    ("t-en-bn-pwn-04", "en", "plain", "password_policy", "Change your password every 90 days."),
    ("t-en-bn-pwn-05", "en", "plain", "password_policy", "Passwords must be at least 12 characters and include a number."),
    ("t-en-bn-pwn-06", "en", "chat", "password_talk", "The password is case-sensitive, so check caps lock."),
    ("t-en-bn-pwn-07", "en", "chat", "password_talk", "I changed my password yesterday and now the app logs me out."),
    ("t-en-bn-pwn-08", "en", "log", "password_talk", "2026-12-03 12:00:01 WARN login failed for user=mchen reason=wrong_password attempts=3"),
    ("t-en-bn-pwn-09", "en", "chat", "password_talk", "Should I use a password manager like Bitwarden?"),
    ("t-zh-bn-pwn-01", "zh", "plain", "password_error", "密码错误，请重试"),
    ("t-zh-bn-pwn-02", "zh", "plain", "password_reset_notice", "重置密码的链接已发送到您的邮箱，请在30分钟内完成操作。"),
    ("t-zh-bn-pwn-03", "zh", "chat", "password_talk", "我忘记密码了，怎么找回？"),
    ("t-zh-bn-pwn-04", "zh", "plain", "password_policy", "密码长度至少8位，需包含字母和数字"),
    ("t-zh-bn-pwn-05", "zh", "plain", "password_policy", "为了安全，请每90天修改一次密码。"),
    ("t-zh-bn-pwn-06", "zh", "chat", "password_talk", "昨天改了密码，今天又登不上了"),
    ("t-zh-bn-pwn-07", "zh", "plain", "password_error", "密码输入错误次数过多，账户已锁定15分钟"),
    ("t-zh-bn-pwn-08", "zh", "chat", "password_talk", "支付密码和登录密码是一个吗？"),
    ("t-zh-bn-pwn-09", "zh", "plain", "verification_prompt", "请输入验证码"),
    ("t-zh-bn-pwn-10", "zh", "plain", "verification_prompt", "验证码已发送，请注意查收短信"),
    ("t-en-bn-key-01", "en", "plain", "token_count", "The token count is 4096 for this model."),
    ("t-en-bn-key-02", "en", "plain", "api_key_policy", "Our API key rotation policy: rotate every 90 days and never commit keys."),
    ("t-en-bn-key-03", "en", "chat", "api_key_talk", "Where do I find my API key in the dashboard?"),
    ("t-en-bn-key-04", "en", "plain", "token_count", "Max tokens: {{n}}, temperature 0.7"),
    ("t-en-bn-key-05", "en", "chat", "idiom", "The secret to good pasta is salting the water."),
    ("t-en-bn-key-06", "en", "chat", "idiom", "The key is under the doormat, the door sticks a bit."),
    ("t-en-bn-key-07", "en", "plain", "api_key_talk", "Error: missing API key. Set the environment variable before running."),
    ("t-zh-bn-key-01", "zh", "plain", "api_key_policy", "API密钥请定期轮换，不要提交到代码仓库。"),
    ("t-zh-bn-key-02", "zh", "chat", "api_key_talk", "在哪里申请接口密钥？"),
    ("t-zh-bn-key-03", "zh", "plain", "token_count", "这个模型的上下文是128k token，输出最多{{n}}个token"),
    ("t-zh-bn-key-04", "zh", "chat", "token_talk", "令牌过期了怎么办，要重新登录吗"),
    ("t-zh-bn-key-05", "zh", "chat", "idiom", "成功的秘诀就是坚持。"),
    # hashtags, uuids in URLs, model names, percentages, math
    ("t-en-bn-tag-01", "en", "plain", "hashtag", "Great run this morning #marathon2026 #nevergiveup"),
    ("t-zh-bn-tag-01", "zh", "plain", "hashtag", "今天的晚霞太美了 #随手拍 #上海"),
    ("t-en-bn-uuid-01", "en", "url", "uuid_url", "See https://shop.brightpath.io/orders/{{uuid}}/receipt for the receipt."),
    ("t-en-bn-uuid-02", "en", "url", "uuid_url", "https://docs.northwind-labs.com/share/{{uuid}}"),
    ("t-zh-bn-uuid-01", "zh", "url", "uuid_url", "订单详情 https://m.xx-mall.cn/order/detail/{{uuid}}"),
    ("t-en-bn-model-01", "en", "plain", "model_name", "Switch the summarizer from gpt-4o to gpt-4o-mini to save cost."),
    ("t-en-bn-model-02", "en", "plain", "model_name", "claude-3-5-sonnet and llama-3.1-70b both passed the eval."),
    ("t-zh-bn-model-01", "zh", "plain", "model_name", "我们用 qwen2.5-72b-instruct 做摘要，效果还行"),
    ("t-en-bn-pct-01", "en", "plain", "percentage", "Conversion went up {{pct}} week over week."),
    ("t-zh-bn-pct-01", "zh", "plain", "percentage", "本季度毛利率{{pct}}，同比上升"),
    ("t-en-bn-math-01", "en", "plain", "math", "If 3x + 7 = 22, then x = 5."),
    ("t-en-bn-math-02", "en", "plain", "math", "1234 * 5678 = 7006652, double-check it."),
    ("t-zh-bn-math-01", "zh", "plain", "math", "12的平方是144，144开根号是12"),
    ("t-zh-bn-math-02", "zh", "plain", "math", "2的16次方是65536，别算错了"),
    # more order / tracking / reference numbers, as tools and shops write them
    ("t-en-bn-ord-07", "en", "markdown", "order_number", "| order | total |\n|---|---|\n| {{order17}} | {{usd}} |"),
    ("t-en-bn-ord-08", "en", "url", "order_number", "https://shop.brightpath.io/account/orders?id={{order16}}&view=details"),
    ("t-en-bn-ord-09", "en", "chat", "order_number", "hi, my order {{order15}} arrived damaged, can I get a replacement?"),
    ("t-en-bn-ord-10", "en", "plain", "order_number", "Confirmation number: {{order13}}. Total charged: {{usd}}."),
    ("t-zh-bn-ord-07", "zh", "log", "order_number", "[2026-12-04 11:20:03] 支付回调 out_trade_no={{order18}} trade_state=SUCCESS"),
    ("t-zh-bn-ord-08", "zh", "url", "order_number", "订单链接 https://m.xx-mall.cn/order?orderId={{order19}}"),
    ("t-zh-bn-ord-09", "zh", "markdown", "order_number", "| 订单号 | 金额 |\n|---|---|\n| {{order17}} | {{yuan}} |"),
    ("t-zh-bn-ord-10", "zh", "chat", "order_number", "你好，订单{{order16}}能改地址吗？"),
    ("t-zh-bn-ord-11", "zh", "plain", "order_number", "退款单号：{{order15}}，预计3个工作日到账。"),
    ("t-zh-bn-ord-12", "zh", "linebreak", "order_number", "订单号：\n{{order18}}"),
    ("t-en-bn-ord-11", "en", "linebreak", "order_number", "Order number:\n{{order16}}"),
    ("t-en-bn-trk-05", "en", "json", "tracking_number", '{"carrier": "UPS", "tracking_number": "{{ups}}", "eta": "{{day}}"}'),
    ("t-en-bn-trk-06", "en", "chat", "tracking_number", "the tracking says {{ups}} was delivered but nothing is at my door"),
    ("t-zh-bn-trk-05", "zh", "log", "tracking_number", "[物流] 运单 {{sf}} 已到达【深圳宝安集散中心】"),
    ("t-zh-bn-trk-06", "zh", "chat", "tracking_number", "我寄的件{{sf}}三天了还没揽收"),
    ("t-zh-bn-trk-07", "zh", "url", "tracking_number", "查件 https://www.sf-express.com/track?billno={{sf}}"),
    # shop and payment talk with amounts
    ("t-en-bn-price-05", "en", "log", "price", "2026-12-02 14:22:10 INFO charge succeeded amount={{usd}} currency=USD"),
    ("t-en-bn-price-06", "en", "chat", "price", "is {{usd}} a fair price for a used road bike?"),
    ("t-en-bn-price-07", "en", "plain", "price", "Total: {{usd}} including tax and shipping."),
    ("t-zh-bn-price-05", "zh", "json", "price", '{"商品": "{{sku}}", "单价": "{{cny}}", "数量": 2}'),
    ("t-zh-bn-price-06", "zh", "chat", "price", "这件羽绒服{{yuan}}值不值？"),
    ("t-zh-bn-price-07", "zh", "plain", "price", "本月工资到账{{cny}}，扣了社保公积金"),
    ("t-en-bn-card4-01", "en", "chat", "card_last4", "I paid with the card ending in 4821, can you check the charge?"),
    ("t-zh-bn-card4-01", "zh", "chat", "card_last4", "尾号6637的银行卡扣款失败了"),
    # dates, times, durations
    ("t-en-bn-date-04", "en", "json", "date", '{"start": "{{day}}T09:00:00Z", "end": "{{day}}T17:30:00Z"}'),
    ("t-en-bn-date-05", "en", "chat", "date", "can we push the dentist to {{day}}? mornings are better"),
    ("t-zh-bn-date-04", "zh", "log", "date", "[{{day}} 08:00:00] 定时任务开始执行"),
    ("t-zh-bn-date-05", "zh", "chat", "date", "签证{{zh_day}}到期，来得及续吗"),
    ("t-zh-bn-date-06", "zh", "plain", "date", "合同期限自{{zh_day}}起至{{zh_day}}止"),
    # technical identifiers that are not secrets
    ("t-en-bn-tech-01", "en", "plain", "commit_hash", "Fixed in commit 3f9c2ab, will ship in the next release."),
    ("t-en-bn-tech-02", "en", "log", "http_status", "2026-12-05 10:00:00 ERROR GET /api/orders 503 Service Unavailable (took 30012ms)"),
    ("t-en-bn-tech-03", "en", "plain", "error_code", "Windows update fails with error 0x80070005."),
    ("t-en-bn-tech-04", "en", "markdown", "version", "```bash\ndocker pull postgres:16.4-alpine\n```"),
    ("t-en-bn-tech-05", "en", "plain", "port", "The dev server runs on localhost:8080 and the db on 5432."),
    ("t-en-bn-tech-06", "en", "env", "config", "LOG_LEVEL=debug\nWORKERS=4\nPORT=8080"),
    ("t-en-bn-tech-07", "en", "json", "config", '{"timeout_ms": 30000, "retries": 3, "region": "eu-west-1"}'),
    ("t-en-bn-tech-08", "en", "plain", "password_talk", "Set DB_PASSWORD in your .env file; see .env.example for the other variables."),
    ("t-zh-bn-tech-01", "zh", "plain", "error_code", "报错代码 ERR_CONNECTION_RESET，换了网络也不行"),
    ("t-zh-bn-tech-02", "zh", "env", "config", "# 日志配置\nLOG_LEVEL=info\nMAX_WORKERS=8"),
    ("t-zh-bn-tech-03", "zh", "json", "config", '{"超时": 30, "重试次数": 3, "区域": "cn-hangzhou"}'),
    ("t-zh-bn-tech-04", "zh", "log", "http_status", "[2026-12-05 10:00:00] 请求 /api/user 返回 502，耗时 1203ms"),
    ("t-zh-bn-tech-05", "zh", "markdown", "version", "```bash\npip install torch==2.5.1\n```\n装完提示 CUDA 版本不匹配"),
    ("t-zh-bn-tech-06", "zh", "plain", "commit_hash", "这个问题在提交 9e41c07 里修好了"),
    ("t-zh-bn-tech-07", "zh", "plain", "username", "我的用户名是 xiaoyu_lin，不是邮箱"),
    ("t-en-bn-tech-09", "en", "plain", "username", "My username is dana_w, I can't remember if I used my email."),
    ("t-en-bn-tech-10", "en", "plain", "wifi_name", "The wifi network is called CoffeeHouse_5G, ask the barista for access."),
    # everyday numbers
    ("t-en-bn-num-01", "en", "plain", "measurement", "Preheat to 220C and bake 1.5kg of potatoes for 45 minutes."),
    ("t-en-bn-num-02", "en", "plain", "coordinates", "The trailhead is at 47.6062, -122.3321."),
    ("t-en-bn-num-03", "en", "plain", "stock_ticker", "AAPL closed at 231.40, up 1.2%."),
    ("t-en-bn-num-04", "en", "plain", "score", "Final score 3-1, and I ran 11.2 km in 58 minutes."),
    ("t-en-bn-num-05", "en", "plain", "service_number", "Call 911 in an emergency, or 311 for city services."),
    ("t-zh-bn-num-01", "zh", "plain", "measurement", "血压130/85，医生说要少吃盐"),
    ("t-zh-bn-num-02", "zh", "plain", "stock_ticker", "贵州茅台600519今天跌了2.3%"),
    ("t-zh-bn-num-03", "zh", "plain", "train_number", "我坐G1234次高铁，7车12F"),
    ("t-zh-bn-num-04", "zh", "plain", "service_number", "有问题可以拨打12345市民热线"),
    ("t-zh-bn-num-05", "zh", "plain", "service_number", "移动客服10086一直占线"),
    ("t-zh-bn-num-06", "zh", "plain", "measurement", "今天步数18236步，体重68.5公斤"),
    ("t-zh-bn-num-07", "zh", "plain", "coordinates", "坐标31.2304, 121.4737是人民广场"),
    ("t-en-bn-num-06", "en", "plain", "percentage", "Battery health is at 87% after two years."),
    ("t-zh-bn-num-08", "zh", "plain", "percentage", "手机电量还剩{{pct}}"),
    ("t-en-bn-num-07", "en", "plain", "room_number", "Apartment {{room}}, buzz twice."),
    ("t-zh-bn-num-09", "zh", "plain", "room_number", "快递放到{{room}}门口就行"),
    # more password and credential talk without a value
    ("t-en-bn-pwn-10", "en", "plain", "password_reset_notice", "If you didn't request a password change, ignore this email."),
    ("t-en-bn-pwn-11", "en", "chat", "password_talk", "how often should I change my wifi password?"),
    ("t-en-bn-pwn-12", "en", "json", "password_error", '{"error": "invalid_password", "message": "The password you entered is incorrect."}'),
    ("t-en-bn-pwn-13", "en", "plain", "verification_prompt", "Enter the 6-digit code we sent to your phone."),
    ("t-en-bn-pwn-14", "en", "plain", "password_policy", "Never share your PIN or password with anyone, including our staff."),
    ("t-en-bn-pwn-15", "en", "chat", "password_talk", "What makes a strong password? Length or symbols?"),
    ("t-zh-bn-pwn-11", "zh", "plain", "verification_prompt", "请勿将验证码告诉他人，客服不会向您索要验证码。"),
    ("t-zh-bn-pwn-12", "zh", "json", "password_error", '{"code": 40101, "msg": "用户名或密码错误"}'),
    ("t-zh-bn-pwn-13", "zh", "chat", "password_talk", "路由器的管理密码在哪里改？"),
    ("t-zh-bn-pwn-14", "zh", "plain", "password_reset_notice", "您的密码已修改成功，如非本人操作请及时联系客服。"),
    ("t-zh-bn-pwn-15", "zh", "chat", "password_talk", "密码管理器推荐用哪个？"),
    ("t-zh-bn-pwn-16", "zh", "plain", "password_policy", "初始密码请在首次登录后修改"),
    ("t-en-bn-key-08", "en", "plain", "token_talk", "Tokenization splits the sentence into 12 tokens."),
    ("t-en-bn-key-09", "en", "chat", "api_key_talk", "My API key stopped working after I upgraded the plan."),
    ("t-en-bn-key-10", "en", "plain", "secret_talk", "Store secrets in a vault, never in the repository."),
    ("t-en-bn-key-11", "en", "plain", "token_count", "Prompt used {{n}} tokens, completion {{n}} tokens."),
    ("t-zh-bn-key-06", "zh", "plain", "secret_talk", "密钥不要硬编码在代码里，用配置中心管理"),
    ("t-zh-bn-key-07", "zh", "chat", "api_key_talk", "API Key 失效了，是不是欠费了？"),
    ("t-zh-bn-key-08", "zh", "plain", "token_count", "这段话一共{{n}}个token"),
    ("t-zh-bn-key-09", "zh", "chat", "idiom", "这家店的秘方是多放花椒。"),
    ("t-en-bn-tag-02", "en", "plain", "hashtag", "Loving the new release #python #opensource #v3"),
    ("t-zh-bn-tag-02", "zh", "plain", "hashtag", "#双十一# 今年买了啥"),
    ("t-en-bn-uuid-03", "en", "log", "uuid_url", "2026-12-06 09:15:00 INFO request_id={{uuid}} path=/v1/orders 200"),
    ("t-zh-bn-uuid-02", "zh", "json", "uuid_url", '{"订单ID": "{{uuid}}", "状态": "待支付"}'),
    ("t-en-bn-model-03", "en", "json", "model_name", '{"model": "gpt-4o-2024-08-06", "max_tokens": 1024, "temperature": 0.2}'),
    ("t-zh-bn-model-02", "zh", "plain", "model_name", "deepseek-v3 和 glm-4-plus 哪个中文更好？"),
    ("t-mx-bn-price-01", "mixed", "plain", "price", "这个 plan 每月 {{usd}}，比 annual 贵"),
    ("t-mx-bn-date-01", "mixed", "plain", "date", "meeting 改到 {{day}} 下午三点"),
    ("t-mx-bn-key-01", "mixed", "chat", "api_key_talk", "API key 在 settings 页面哪里找？"),
    ("t-mx-bn-trk-01", "mixed", "plain", "tracking_number", "SF 单号 {{sf}}, please check the status"),
    ("t-mx-bn-ord-01", "mixed", "plain", "order_number", "我的 order {{order18}} still not shipped"),
    ("t-mx-bn-pwn-01", "mixed", "plain", "password_talk", "忘记 password 了，reset link 一直收不到"),
]
# fmt: on


def main() -> None:
    rng = random.Random(SEED)
    values = Values(rng, POOLS)
    rows = secret_rows(T, values) + benign_rows(B, BenignValues(rng))
    emit(rows, "test", rng)


if __name__ == "__main__":
    main()
