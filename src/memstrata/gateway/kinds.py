"""The kinds the gateway detects, their placeholders, and which field names are secret.

Kept apart from the detectors so policy, audit and sanitizer can share the
vocabulary without importing any regular expression.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """Every kind the gateway detects; the value is the placeholder's tag."""

    API_KEY = "api_key"
    AWS_ACCESS_KEY = "aws_access_key"
    AWS_SECRET_KEY = "aws_secret_key"
    GITHUB_TOKEN = "github_token"
    SLACK_TOKEN = "slack_token"
    GOOGLE_API_KEY = "google_api_key"
    JWT = "jwt"
    BEARER_TOKEN = "bearer_token"
    BASIC_AUTH = "basic_auth"
    PRIVATE_KEY = "private_key"
    PASSWORD = "password"
    SECRET = "secret"
    EMAIL = "email"
    PHONE = "phone"
    CN_ID = "cn_id"
    BANK_CARD = "bank_card"
    # Not detected in text: the tag used when a policy redacts a whole field.
    FIELD = "field"


#: Kinds that are never stored in any form: always replaced by a placeholder.
CREDENTIAL_KINDS: frozenset[Kind] = frozenset(
    {
        Kind.API_KEY,
        Kind.AWS_ACCESS_KEY,
        Kind.AWS_SECRET_KEY,
        Kind.GITHUB_TOKEN,
        Kind.SLACK_TOKEN,
        Kind.GOOGLE_API_KEY,
        Kind.JWT,
        Kind.BEARER_TOKEN,
        Kind.BASIC_AUTH,
        Kind.PRIVATE_KEY,
        Kind.PASSWORD,
        Kind.SECRET,
    }
)

#: Personal data: a policy may mask or allow these.
PII_KINDS: frozenset[Kind] = frozenset({Kind.EMAIL, Kind.PHONE, Kind.CN_ID, Kind.BANK_CARD})

PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z_]+\]")
PLACEHOLDER_LITERAL = "[REDACTED:"


def placeholder(kind: Kind) -> str:
    """The replacement text for ``kind``, e.g. ``[REDACTED:email]``."""
    return f"[REDACTED:{kind.value}]"


@dataclass(frozen=True, slots=True)
class Match:
    """One span of a text to replace; ``quote`` wraps the placeholder (bare JSON values)."""

    kind: Kind
    start: int
    end: int
    quote: str = ""


# --- field names -----------------------------------------------------------------

# Names are compared with separators removed and lowercased, by suffix, so that
# db_password, x-api-key and AWS_SECRET_ACCESS_KEY hit while max_tokens,
# token_count, primary_key and password_policy do not.
_PASSWORD_SUFFIXES = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "passcode",
    "pincode",
    "密码",
    "密碼",
    "口令",
)
# "pin" ends too many words (spin, lapin) to be a suffix: it names a password only as
# a word of its own (PIN, card_pin, sim-pin), checked on the name as written.
# The same for the short forms of password (pass, pw, pword: db_pass, user-pw; never
# bypass or compass).
_PIN_RE = re.compile(r"(?:^|[_\-. ])(?:pin(?:[_\-. ]?code)?|pass|pw|pword)$", re.IGNORECASE)
# A secret's name may go on with a word saying what form the value takes
# (secret_key_base, api_token_value, password_b64): the kind is read before it.
_FORM_SUFFIX_RE = re.compile(r"(?:base|value|val|str|string|b64|base64|hex|raw|plain|plaintext)$")
_SECRET_SUFFIXES = (
    "secret",
    "token",
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "credential",
    "credentials",
    "creds",
    "密钥",
    "密鑰",
    "秘钥",
    "秘鑰",
    "私钥",
    "私鑰",
    "令牌",
)
# Header-like names that only make sense as dict keys: in free text the
# Authorization detector keeps the scheme and redacts just the credential.
_KEY_ONLY_NAMES = frozenset({"authorization", "proxyauthorization", "cookie", "setcookie"})
_NAME_SEPARATORS = str.maketrans("", "", "_-. ")


def field_kind(name: str) -> Kind | None:
    """Kind of secret a field called ``name`` holds in free text, or None if ordinary."""
    norm = name.lower().translate(_NAME_SEPARATORS)
    form = _FORM_SUFFIX_RE.search(norm)
    if form is not None and form.start() > 0:
        stem = field_kind(norm[: form.start()])
        if stem is not None:
            return stem
    if norm.endswith("secretaccesskey"):
        return Kind.AWS_SECRET_KEY
    if norm.endswith("bearer"):
        return Kind.BEARER_TOKEN
    if norm.endswith(_PASSWORD_SUFFIXES) or _PIN_RE.search(name) is not None:
        return Kind.PASSWORD
    if norm.endswith(_SECRET_SUFFIXES):
        return Kind.SECRET
    return None


def key_kind(name: str) -> Kind | None:
    """Kind of secret a dict key ``name`` names (its whole value is redacted), or None."""
    kind = field_kind(name)
    if kind is None and name.lower().translate(_NAME_SEPARATORS) in _KEY_ONLY_NAMES:
        return Kind.SECRET
    return kind
