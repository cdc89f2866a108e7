"""Pure number checks that turn "a run of digits" into "a card" or "an ID number".

Digit patterns alone would redact every order number and timestamp; these checks
(Luhn, issuer prefixes, the GB 11643 checksum and a real birth date) are what keep
ordinary numeric ids untouched.
"""

from __future__ import annotations

import re
from datetime import date

from memstrata.gateway.kinds import Kind

# GB 11643-1999: weights for the first 17 digits, and the check character for
# each value of (weighted sum mod 11).
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"

# Oldest plausible holder; anything earlier is a number that merely looks like a date.
_CN_ID_MIN_YEAR = 1900
_CN_ID_MAX_YEAR = 2099


def only_digits(text: str) -> str:
    """Return the ASCII digits of ``text`` in order (separators dropped)."""
    return "".join(ch for ch in text if "0" <= ch <= "9")


def luhn_valid(digits: str) -> bool:
    """Return True if ``digits`` (ASCII digits only) passes the Luhn mod-10 check."""
    if not digits or not digits.isascii() or not digits.isdigit():
        return False
    total = 0
    for index, ch in enumerate(reversed(digits)):
        value = ord(ch) - 48
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card_prefix_ok(digits: str) -> bool:
    """Issuer prefix and length that a real payment card can have.

    Luhn alone passes one random number in ten; requiring a known issuer range
    (Visa, Mastercard, Amex, Discover, UnionPay, JCB, Diners, Maestro) for the
    length at hand keeps numeric order ids and timestamps out.
    """
    length = len(digits)
    two = int(digits[:2])
    three = int(digits[:3])
    four = int(digits[:4])
    if digits[0] == "4":  # Visa
        return length in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:  # Mastercard
        return length == 16
    if two in (34, 37):  # American Express
        return length == 15
    if two == 62:  # UnionPay (most mainland bank cards)
        return 16 <= length <= 19
    if four == 6011 or two == 65 or 644 <= three <= 649:  # Discover
        return 16 <= length <= 19
    if 3528 <= four <= 3589:  # JCB
        return 16 <= length <= 19
    if two in (36, 38, 39) or 300 <= three <= 305:  # Diners Club
        return 14 <= length <= 19
    if two in (50, 56, 57, 58) or digits[0] == "6":  # Maestro and other 6xxx debit
        return 16 <= length <= 19
    return False


def bank_card_valid(text: str) -> bool:
    """Return True if ``text`` (digits with optional spaces/dashes) is a plausible card."""
    digits = only_digits(text)
    if not 13 <= len(digits) <= 19:
        return False
    return _card_prefix_ok(digits) and luhn_valid(digits)


def cn_id_valid(text: str) -> bool:
    """Return True for an 18-char PRC resident ID with a real birth date and valid checksum."""
    if len(text) != 18 or not text[:17].isascii() or not text[:17].isdigit():
        return False
    last = text[17].upper()
    if not (last.isdigit() or last == "X"):
        return False
    year, month, day = int(text[6:10]), int(text[10:12]), int(text[12:14])
    if not _CN_ID_MIN_YEAR <= year <= _CN_ID_MAX_YEAR:
        return False
    try:
        date(year, month, day)
    except ValueError:
        return False
    total = sum(int(ch) * weight for ch, weight in zip(text[:17], _CN_ID_WEIGHTS, strict=True))
    return _CN_ID_CHECK[total % 11] == last


def phone_digits_ok(text: str) -> bool:
    """Return True if ``text`` holds as many digits as an E.164 number can (8-15)."""
    return 8 <= len(only_digits(text)) <= 15


def mask_digits(text: str, *, keep_head: int, keep_tail: int) -> str:
    """Replace digits with ``*`` except the first ``keep_head`` and last ``keep_tail``.

    Separators stay where they were, so the masked value keeps its shape
    (``138****5678``, ``+1 (5**) ***-4567``); ``X`` check characters count as digits.
    """
    positions = [i for i, ch in enumerate(text) if ch.isdigit() or ch in "Xx"]
    if len(positions) <= keep_head + keep_tail:
        # Too short to keep a hint without revealing most of it.
        return "".join("*" if i in set(positions) else ch for i, ch in enumerate(text))
    hidden = set(positions[keep_head : len(positions) - keep_tail])
    return "".join("*" if i in hidden else ch for i, ch in enumerate(text))


def mask_email(text: str) -> str:
    """Keep the first character of the local part and the domain: ``a***@example.com``."""
    local, _, domain = text.rpartition("@")
    if not local or not domain:
        return "***"
    return f"{local[0]}***@{domain}"


_ID_RUN_RE = re.compile(r"\d+(?:[-_. ]\d+)*[Xx]?", re.ASCII)
_CN_MOBILE_RE = re.compile(r"1[3-9]\d{9}", re.ASCII)
_HEX_ID_RE = re.compile(r"[0-9a-fA-F-]{16,}", re.ASCII)
_HEX_LETTERS = 4


def embedded_numbers(identifier: str) -> list[Kind]:
    """The kinds of the numbers glued into an identifier (``m-4539148803430007``,
    ``u6217003360000000009``): each run of digits, joined by ``- _ .`` or spaces,
    read whole as a card (Luhn and issuer), a resident ID (GB 11643) or a mainland
    mobile number. In free text a letter glued to a number makes it a code, not a
    card; an identifier is stored as it is, so the number inside it is what counts."""
    found: list[Kind] = []
    if _HEX_ID_RE.fullmatch(identifier) and sum(c.isalpha() for c in identifier) >= _HEX_LETTERS:
        # A generated id (a uuid, a card or event id): its digit runs are chance.
        return found
    for run in _ID_RUN_RE.finditer(identifier):
        text = run.group()
        digits = only_digits(text)
        if text[-1] in "Xx":
            if len(digits) == 17 and cn_id_valid(digits + "X"):
                found.append(Kind.CN_ID)
            continue
        if len(digits) == 18 and cn_id_valid(digits):
            found.append(Kind.CN_ID)
        elif bank_card_valid(digits):
            found.append(Kind.BANK_CARD)
        elif _CN_MOBILE_RE.fullmatch(digits):
            found.append(Kind.PHONE)
    return found
