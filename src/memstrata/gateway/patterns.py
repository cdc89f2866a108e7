"""Detectors for credentials and PII: pure functions over text, one named kind each.

Speed matters (every write and every log line passes here), and CPython's regex
engine is only fast when a pattern starts with a literal: it then jumps from
occurrence to occurrence instead of trying every position. So token patterns
start with their literal prefix and check the left boundary with a lookbehind
placed *after* it; case-insensitive ones run over the lowercased text instead;
digit patterns run only inside the few windows that hold enough digits; and
emails and secret-named fields are found from their anchor (``@``, a keyword)
outwards (:mod:`memstrata.gateway.anchors`). :mod:`memstrata.gateway.scan`
drives all of this.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass

from memstrata.gateway.checks import bank_card_valid, cn_id_valid, phone_digits_ok
from memstrata.gateway.kinds import Kind, Match

Check = Callable[[re.Match[str]], Kind | None]


@dataclass(frozen=True, slots=True)
class Detector:
    """One compiled pattern.

    ``lowered`` runs the pattern over the lowercased text (same offsets) to match
    case-insensitively while still starting with a literal. ``min_digits`` marks a digit
    detector: it runs only in digit windows holding at least that many digits
    (``plus`` also requires a ``+`` there). ``group`` is the group whose span is
    replaced; ``check`` confirms a candidate and may pick its kind (None rejects);
    ``priority`` breaks ties between equally long overlapping hits; ``min_token``
    marks a pattern that cannot start with a literal: it runs only when the text holds a
    whitespace-separated token at least that long. ``needle``: a substring every match
    holds; a text without it is skipped with one ``in`` test.
    """

    name: str
    kind: Kind
    pattern: re.Pattern[str]
    lowered: bool = False
    min_digits: int = 0
    plus: bool = False
    group: int | str = 0
    check: Check | None = None
    priority: int = 50
    min_token: int = 0
    needle: str = ""

    def candidate(self, m: re.Match[str]) -> Match | None:
        """The span to replace for regex match ``m``, or None if the check rejects it."""
        kind = self.kind
        if self.check is not None:
            checked = self.check(m)
            if checked is None:
                return None
            kind = checked
        start, end = m.span(self.group)
        return Match(kind, start, end) if end > start else None


def _check_auth(m: re.Match[str]) -> Kind | None:
    scheme = (m.group("scheme") or "").lower()
    return Kind.BASIC_AUTH if scheme == "basic" else Kind.BEARER_TOKEN


# A number a text calls an order, a parcel or a book is that, even when it happens to
# pass Luhn: unless the same stretch also names a card or an ID.
# The cue must name the number itself: "order no. 4539...", "订单号：6217...".
_OTHER_NUMBER_CUE_RE = re.compile(
    r"(?:order|tracking|parcel|shipment|invoice|receipt|isbn|sku|serial|reference|"
    r"confirmation|booking|ticket|transaction|txn|订单|运单|快递|物流|流水)"
    r"(?:[ \t]*(?:number|numbers|no\.?|num|id|#|code|号码?|编号|单号))?"
    r"[ \t]*[:：#=]?[ \t]*(?:is[ \t]+)?$",
    re.IGNORECASE,
)
_CARD_CUE_RE = re.compile(
    r"card|visa|master|amex|unionpay|debit|credit|卡|银行|身份证|证件|\bid\b|identity|passport",
    re.IGNORECASE,
)
_CUE_WINDOW = 24


def named_otherwise(text: str, start: int) -> bool:
    """True when the words just before ``start`` call the number an order, parcel,
    invoice... and do not call it a card or an ID."""
    before = text[max(0, start - _CUE_WINDOW) : start]
    return _OTHER_NUMBER_CUE_RE.search(before) is not None and _CARD_CUE_RE.search(before) is None


def _check_card(m: re.Match[str]) -> Kind | None:
    if not bank_card_valid(m.group(0)) or named_otherwise(m.string, m.start()):
        return None
    return Kind.BANK_CARD


def _check_cn_id(m: re.Match[str]) -> Kind | None:
    if not cn_id_valid(m.group(0)) or named_otherwise(m.string, m.start()):
        return None
    return Kind.CN_ID


def _check_basic(m: re.Match[str]) -> Kind | None:
    # "Basic" is a word too: only a credential that decodes to "user:password" is one.
    try:
        # UTF-8: a user or password may be "José:contraseña".
        decoded = base64.b64decode(m.group("value"), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    printable = decoded.isprintable()
    return Kind.BASIC_AUTH if colon and user and password and printable else None


def _check_national_phone(m: re.Match[str]) -> Kind | None:
    return Kind.PHONE if 10 <= sum(c.isdigit() for c in m.group(0)) <= 11 else None


def _check_aws_secret(m: re.Match[str]) -> Kind | None:
    value = m.group(0)
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    return Kind.AWS_SECRET_KEY if lower and upper and digit else None


def _check_intl_phone(m: re.Match[str]) -> Kind | None:
    return Kind.PHONE if phone_digits_ok(m.group(0)) else None


_A = re.ASCII
# Boundaries are ASCII-only on purpose: Chinese text glues numbers straight onto
# characters ("手机13812345678"), and \b would treat those characters as word chars.
_NA = r"(?![A-Za-z0-9])"
# Digit runs end at a non-alphanumeric that does not continue them as "-123".
_DIGITS_END = r"(?![A-Za-z0-9*]|-\d)"
# A masked hint's "*" continues a number as a digit would: masking one number must
# not turn its neighbour into a new finding.
_DIGIT_NA = r"(?![A-Za-z0-9*])"

#: Detectors run over the whole text (literal-first or gated).
TOKEN_DETECTORS: tuple[Detector, ...] = (
    Detector(
        "pem_private_key",
        Kind.PRIVATE_KEY,
        # A truncated block (no END line) is redacted to the end of the text:
        # losing the tail is better than leaking half a key.
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
        priority=95,
        needle="-----BEGIN",
    ),
    Detector(
        "jwt",
        Kind.JWT,
        re.compile(
            r"eyJ(?<![A-Za-z0-9]eyJ)[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", _A
        ),
        priority=85,
        needle="eyJ",
    ),
    Detector(
        "github_token",
        Kind.GITHUB_TOKEN,
        re.compile(r"gh[pousr]_(?<![A-Za-z0-9]gh[a-z]_)[A-Za-z0-9]{30,}" + _NA, _A),
        priority=85,
        needle="gh",
    ),
    Detector(
        "github_pat",
        Kind.GITHUB_TOKEN,
        re.compile(r"github_pat_(?<![A-Za-z0-9]github_pat_)[A-Za-z0-9_]{22,}", _A),
        priority=85,
        needle="github_pat_",
    ),
    Detector(
        "aws_access_key",
        Kind.AWS_ACCESS_KEY,
        re.compile(r"A(?:KIA|SIA|GPA|IDA|ROA|NPA|IPA)(?<![A-Z0-9][A-Z]{4})[A-Z0-9]{16}" + _NA, _A),
        priority=85,
    ),
    Detector(
        "slack_token",
        Kind.SLACK_TOKEN,
        re.compile(r"xox[abposre]-(?<![A-Za-z0-9]xox[a-z]-)[A-Za-z0-9-]{10,}", _A),
        priority=85,
        needle="xox",
    ),
    Detector(
        "slack_app_token",
        Kind.SLACK_TOKEN,
        re.compile(r"xapp-(?<![A-Za-z0-9]xapp-)[A-Za-z0-9-]{10,}", _A),
        priority=85,
        needle="xapp-",
    ),
    Detector(
        "google_api_key",
        Kind.GOOGLE_API_KEY,
        re.compile(r"AIza(?<![A-Za-z0-9]AIza)[0-9A-Za-z_-]{35}", _A),
        priority=85,
        needle="AIza",
    ),
    Detector(
        "api_key",
        Kind.API_KEY,
        # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), Stripe secret (sk_live_, sk_test_).
        re.compile(r"sk[-_](?<![A-Za-z0-9]sk[-_])(?:(?:live|test)_)?[A-Za-z0-9_-]{20,}", _A),
        priority=80,
        needle="sk",
    ),
    Detector(
        # Mailgun-style keys: "key-" and 32 hex digits.
        "hex_key",
        Kind.API_KEY,
        re.compile(r"key-(?<![A-Za-z0-9]key-)[0-9a-f]{32}" + _NA, _A),
        priority=80,
        needle="key-",
    ),
    Detector(
        # Stripe webhook signing secrets.
        "webhook_secret",
        Kind.SECRET,
        re.compile(r"whsec_(?<![A-Za-z0-9]whsec_)[A-Za-z0-9]{24,}", _A),
        priority=80,
        needle="whsec_",
    ),
    Detector(
        # Google OAuth access tokens.
        "google_oauth_token",
        Kind.BEARER_TOKEN,
        re.compile(r"ya29\.(?<![A-Za-z0-9]ya29\.)[0-9A-Za-z_-]{20,}", _A),
        priority=80,
        needle="ya29.",
    ),
    Detector(
        # "Basic <base64 of user:password>" wherever it stands (a header's value on the
        # next line, a log line); the check decodes it.
        "basic_credentials",
        Kind.BASIC_AUTH,
        re.compile(
            # A literal first (fast); BASIC in capitals is the next detector.
            r"asic(?<=[Bb]asic)(?<![A-Za-z0-9][Bb]asic)"
            # The value may stand on the next line (a folded header).
            r"(?:[ \t]+|[ \t]*\r?\n[ \t]*)(?P<value>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",
            _A,
        ),
        group="value",
        check=_check_basic,
        priority=72,
        needle="asic",
    ),
    Detector(
        "basic_credentials_upper",
        Kind.BASIC_AUTH,
        re.compile(
            r"BASIC(?<![A-Za-z0-9]BASIC)"
            r"(?:[ \t]+|[ \t]*\r?\n[ \t]*)(?P<value>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",
            _A,
        ),
        group="value",
        check=_check_basic,
        priority=72,
        needle="BASIC",
    ),
    Detector(
        # mysql's password flag takes its value glued on: mysql -u root -pS3cret.
        "mysql_password_flag",
        Kind.PASSWORD,
        re.compile(
            r"mysql(?:dump|admin|import|sh)?[ \t][^\n]*?[ \t]-p['\"]?(?P<value>[^\s'\"]{3,})", _A
        ),
        group="value",
        priority=65,
        needle="mysql",
    ),
    Detector(
        "stripe_restricted_key",
        Kind.API_KEY,
        re.compile(r"rk_(?<![A-Za-z0-9]rk_)(?:live|test)_[A-Za-z0-9]{20,}", _A),
        priority=80,
        needle="rk_",
    ),
    Detector(
        "authorization_header",
        Kind.BEARER_TOKEN,
        # Matched against the lowercased text (same offsets), so the pattern can
        # start with a literal instead of a slow case-insensitive group.
        re.compile(
            r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?:(?P<scheme>bearer|basic|token|apikey)(?:[ \t]+|[ \t]*\r?\n[ \t]*))?"
            # The value may not be a bare scheme word: on a second pass that is
            # all that precedes the placeholder, and it must stay as it is.
            r"(?P<value>(?!\[redacted:)(?!(?:bearer|basic|token|apikey)(?:\s|$))"
            r"[a-z0-9\-._~+/=:]+)",
            _A,
        ),
        lowered=True,
        group="value",
        check=_check_auth,
        priority=75,
        needle="authorization",
    ),
    Detector(
        "bearer_token",
        Kind.BEARER_TOKEN,
        # Outside a header, "bearer" is an ordinary word: demand a token-sized value.
        re.compile(r"bearer(?<![a-z]bearer)[ \t]+(?P<value>[a-z0-9\-._~+/]{16,}=*)", _A),
        lowered=True,
        group="value",
        priority=70,
        needle="bearer",
    ),
    Detector(
        "aws_secret_key",
        Kind.AWS_SECRET_KEY,
        # 40 characters of base64 standing alone, mixing cases and digits: the shape of
        # an AWS secret access key (a hex digest has one case, a word no digits).
        re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _A),
        check=_check_aws_secret,
        priority=60,
        min_token=40,
    ),
    Detector(
        "url_password",
        Kind.PASSWORD,
        re.compile(r"://[^\s/@:]*:(?P<value>(?!\[REDACTED:)[^\s/@]+)@"),
        group="value",
        priority=65,
        needle="://",
    ),
)

#: Stretches of a text worth handing to the digit detectors: at least ten digits
#: joined by at most two separators each (no detector accepts fewer without a "+"),
#: or a "+" and at least eight. Everything else (dates, amounts, versions) is
#: skipped by these two scans alone.
# The lookbehind after the first digit keeps the scan from restarting inside a run.
DIGIT_RUN_RE = re.compile(r"\d(?<!\d\d)(?:[ \-().]{0,2}+\d){9,}", _A)
#: The same runs when a line break may split a number ("4539 1488" then "0343 0007"):
#: read only for grouped cards and ID numbers, and only in a text with a line break.
DIGIT_LINES_RE = re.compile(r"\d(?<!\d\d)(?:(?:[ \t]*\r?\n[ \t]*|[ \-().]{0,2}+)\d){9,}", _A)
PLUS_RUN_RE = re.compile(r"\+[ (]{0,2}\d(?:[ \-().]{0,2}+\d){7,}", _A)

#: Detectors run only inside digit windows (see :data:`DIGIT_RUN_RE`).
DIGIT_DETECTORS: tuple[Detector, ...] = (
    Detector(
        "cn_id",
        Kind.CN_ID,
        re.compile(
            r"(?<![A-Za-z0-9*])[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
            r"\d{3}[\dXx]" + _DIGIT_NA,
            _A,
        ),
        min_digits=17,
        check=_check_cn_id,
        priority=40,
    ),
    Detector(
        "bank_card",
        Kind.BANK_CARD,
        re.compile(
            r"(?<![A-Za-z0-9\-*])(?:\d{13,19}|\d{4}(?P<sep>[ -])\d{4}(?:(?P=sep)\d{4}){1,2}"
            r"|\d{4}[ -]\d{6}[ -]\d{4,5})" + _DIGITS_END,
            _A,
        ),
        min_digits=13,
        check=_check_card,
        priority=35,
    ),
    Detector(
        # 17-19 digit cards shown as 4-4-4-4-n. A separate pattern, not an optional
        # tail: a regex returns one grouping, and "4000 0000 0000 0002 0" must still
        # yield the 16-digit card when the 17-digit reading fails Luhn.
        "bank_card_long",
        Kind.BANK_CARD,
        re.compile(
            r"(?<![A-Za-z0-9\-*])\d{4}(?P<sep>[ -])\d{4}(?:(?P=sep)\d{4}){2}(?P=sep)\d{1,3}"
            + _DIGITS_END,
            _A,
        ),
        min_digits=17,
        check=_check_card,
        priority=35,
    ),
    Detector(
        "cn_mobile",
        Kind.PHONE,
        re.compile(
            r"(?<![A-Za-z0-9+*])(?:(?:\+|00)?86[ -]?)?1[3-9]\d(?P<sep>[ -]?)\d{4}(?P=sep)\d{4}"
            + _DIGIT_NA,
            _A,
        ),
        min_digits=11,
        priority=30,
    ),
    Detector(
        "intl_phone",
        Kind.PHONE,
        re.compile(
            r"(?<![A-Za-z0-9+*])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?)(?:[ .-]?\d{2,5}){1,4}" + _DIGIT_NA,
            _A,
        ),
        min_digits=8,
        plus=True,
        check=_check_intl_phone,
        priority=25,
    ),
    Detector(
        # Dotted or spaced North American numbers: 415.555.0199, (415) 555 0199.
        "us_phone_spaced",
        Kind.PHONE,
        re.compile(
            r"(?<![A-Za-z0-9\-.*])"
            r"(?:\(\d{3}\)[ .-]?\d{3}[ .-]?\d{4}|\d{3}(?P<sep>[. ])\d{3}(?P=sep)\d{4})"
            + _DIGITS_END
            + r"(?!\.\d)",
            _A,
        ),
        min_digits=10,
        priority=25,
    ),
    Detector(
        # Mainland landlines with their area code: 010-12345678, (021) 8888 6666.
        "cn_landline",
        Kind.PHONE,
        re.compile(
            r"(?<![A-Za-z0-9\-*])(?:\(0\d{2,3}\)[ -]?|0\d{2,3}-)\d{3,4}[ -]?\d{4}" + _DIGITS_END,
            _A,
        ),
        min_digits=10,
        priority=25,
    ),
    Detector(
        # National numbers with a trunk 0, in groups: 020 7946 0958, 07700 900123,
        # 0755 8888 6666 (10 or 11 digits).
        "national_phone",
        Kind.PHONE,
        re.compile(
            r"(?<![A-Za-z0-9\-*+.])0\d{1,4}[ ]\d{3,6}(?:[ ]\d{3,4})?" + _DIGITS_END + r"(?!\.\d)",
            _A,
        ),
        min_digits=10,
        check=_check_national_phone,
        priority=20,
    ),
    Detector(
        "us_phone",
        Kind.PHONE,
        re.compile(
            r"(?<![A-Za-z0-9\-*])(?:1[ .-])?(?:\(\d{3}\)[ ]?\d{3}-\d{4}|\d{3}-\d{3}-\d{4})"
            + _DIGITS_END,
            _A,
        ),
        min_digits=10,
        priority=25,
    ),
)
