"""Runs every detector over a text and resolves the hits into non-overlapping spans."""

from __future__ import annotations

import re
from bisect import bisect_right

from memstrata.gateway.anchors import (
    EMAIL_PRIORITY,
    FIELD_PRIORITY,
    find_emails,
    find_fields,
    find_spelled_emails,
)
from memstrata.gateway.checks import bank_card_valid, cn_id_valid
from memstrata.gateway.kinds import (
    CREDENTIAL_KINDS,
    PLACEHOLDER_LITERAL,
    PLACEHOLDER_RE,
    Kind,
    Match,
)
from memstrata.gateway.normalize import normalize
from memstrata.gateway.patterns import (
    DIGIT_DETECTORS,
    DIGIT_LINES_RE,
    DIGIT_RUN_RE,
    PLUS_RUN_RE,
    TOKEN_DETECTORS,
    Detector,
    named_otherwise,
)
from memstrata.gateway.structured import (
    find_cookies,
    find_table_cells,
    find_user_flags,
    wrapped_end,
)

Rank = tuple[bool, bool, int, int]
Candidate = tuple[Match, Rank]

# Re-scans after filling in the matches; two passes are almost always enough.
_MAX_PASSES = 4
# Digit windows: room before a run for "+1 (" and after it for a trailing "X" and
# the two characters a lookahead inspects.
_WINDOW_BEFORE = 3
_WINDOW_AFTER = 2
# A match whose neighbours are all of these cannot change what the neighbours
# match once it is replaced (none of them starts or ends a detection whose
# boundary check looks across it), so no re-scan is needed: the common case.
_NEUTRAL = frozenset(" \t\r\n,;，。、；！？!?=:：\"'{}[]")


_PLAIN_DIGIT_DETECTORS = tuple(d for d in DIGIT_DETECTORS if not d.plus)
_PLUS_DIGIT_DETECTORS = tuple(d for d in DIGIT_DETECTORS if d.plus)


# Kinds read from a cue alone ("API key is X", "password: X"): a cluster that also
# holds a vendor's shape (sk-proj-..., ghp_..., a JWT) is named by the shape.
_CUE_KINDS = frozenset({Kind.SECRET, Kind.PASSWORD})


def _rank(match: Match, priority: int) -> Rank:
    # Credentials beat PII whatever the length: a cluster holding a credential is
    # always redacted, never masked or allowed. Then a shape's kind over a cue's,
    # then longest, then most specific. The rank names a cluster; its span is the
    # union of its members whatever the rank.
    return (
        match.kind in CREDENTIAL_KINDS,
        match.kind not in _CUE_KINDS,
        match.end - match.start,
        priority,
    )


def _lower_same_length(text: str) -> str:
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    # A few characters lowercase to two ("İ"): keep those as they are so that
    # offsets in the lowered copy stay offsets in the text.
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def _run(det: Detector, text: str, pos: int, endpos: int, out: list[Candidate]) -> None:
    while (m := det.pattern.search(text, pos, endpos)) is not None:
        cand = det.candidate(m)
        if cand is not None:
            out.append((cand, _rank(cand, det.priority)))
            # Anything this pattern finds inside a confirmed hit is merged into
            # it anyway; skipping ahead keeps "sk-sk-sk-..." linear.
            pos = max(m.end(), m.start() + 1)
        else:
            # A rejected candidate (bad checksum, odd grouping) may hide a real
            # one that starts inside it: resume just after its start.
            pos = m.start() + 1


def _digit_count(run: str) -> int:
    return sum(map(str.isdigit, run))  # runs are ASCII: DIGIT_RUN_RE uses re.ASCII


def _run_window(
    text: str, run_start: int, run_end: int, detectors: tuple[Detector, ...], out: list[Candidate]
) -> int:
    """Run ``detectors`` in the window around a digit run; how many digits it holds."""
    digits = _digit_count(text[run_start:run_end])
    start = max(0, run_start - _WINDOW_BEFORE)
    end = min(len(text), run_end + _WINDOW_AFTER)
    for det in detectors:
        if digits >= det.min_digits:
            _run(det, text, start, end, out)
    return digits


_GROUP_RE = re.compile(r"\d+", re.ASCII)
_SPACED_PRIORITY = 30
_YEARS = ("18", "19", "20")
_MIN_CARD_DIGITS = 13
_MAX_CARD_DIGITS = 19
_MAX_PHONE_DIGITS = 13
_MOBILE_DIGITS = 11
_MOBILE_RE = re.compile(
    r"1[3-9]\d{9}", re.ASCII
)  # 10-11 digits, and a run's window may hold a country code


def _spaced_numbers(text: str, run_start: int, run_end: int, out: list[Candidate]) -> None:
    """Cards and ID numbers written in groups the fixed patterns do not know
    ("110105 19491231 002X", "4539 148803 430007"): every stretch of whole groups of
    a run is read as one number and checked (Luhn and issuer, or GB 11643)."""
    if text[max(0, run_start - 1) : run_start] == "*":
        return  # the tail of a masked hint
    groups = [(g.start(), g.end()) for g in _GROUP_RE.finditer(text, run_start, run_end)]
    if len(groups) < 2:
        return
    run_digits = "".join(text[start:end] for start, end in groups)
    at = 0  # where group i starts in run_digits
    for i in range(len(groups)):
        here, at = at, at + groups[i][1] - groups[i][0]
        card = run_digits[here] in "23456"  # the issuers' first digits
        mobile = i == 0 and run_digits[here] == "1"
        # Without an issuer's digit or a mobile's 1, only an ID number may start here,
        # and one has a birth year at digits 7-8 (checked first: a long run of groups
        # that can be none of them costs one slice per group).
        if not (card or mobile or run_digits[here + 6 : here + 8] in _YEARS):
            continue
        if _glued_before(text, groups[i][0]):
            continue  # glued to a word or part of a dashed id: not a number of its own
        digits = ""
        for j in range(i, len(groups)):
            if j > i and "." in text[groups[j - 1][1] : groups[j][0]]:
                break  # a decimal point or a version's dot ends a number
            digits += text[groups[j][0] : groups[j][1]]
            size = len(digits)
            # An ID number has a birth year at digits 7-10; without it only a card may
            # still come of this stretch.
            ident = digits[0] != "0" and (size < 8 or digits[6:8] in ("18", "19", "20"))
            if size > _MAX_CARD_DIGITS or not (card or ident or mobile):
                break
            if j == i:
                continue
            whole = i == 0 and j == len(groups) - 1
            # Only a stretch of a size some reading accepts is looked at further.
            if not (
                size >= _MIN_CARD_DIGITS
                or (ident and size == 17)
                or (size == _MOBILE_DIGITS and whole)
            ):
                continue
            start, end = groups[i][0], groups[j][1]
            if _glued_after(text, end):
                continue
            if ident and size == 17 and end < len(text) and text[end] in "Xx":
                if cn_id_valid(digits + "X") and not named_otherwise(text, start):
                    _add(out, Match(Kind.CN_ID, start, end + 1), _SPACED_PRIORITY + 10)
                continue
            # A whole run spelling a mainland mobile number group by group
            # ("1 3 8 1 2 3 4 5 6 7 8").
            if size == _MOBILE_DIGITS and whole and _MOBILE_RE.fullmatch(digits):
                _add(out, Match(Kind.PHONE, start, end), _SPACED_PRIORITY - 5)
            if ident and size == 18 and cn_id_valid(digits) and not named_otherwise(text, start):
                _add(out, Match(Kind.CN_ID, start, end), _SPACED_PRIORITY + 10)
            elif (
                card
                and size >= _MIN_CARD_DIGITS
                and bank_card_valid(digits)
                and not named_otherwise(text, start)
            ):
                _add(out, Match(Kind.BANK_CARD, start, end), _SPACED_PRIORITY)


# A bare run of 10 or 11 digits is a phone number when the words before it say so
# ("call me on 2125550147", "手机 13812345678" is found by its own pattern).
_PHONE_CUE_RE = re.compile(
    r"(?:phone|mobile|cell|call|tel|text|sms|whatsapp|wechat|signal|fax|reach|my[ \t]+number|"
    r"电话|手机|致电|联系|拨打|打给|微信)[^\n\d]{0,16}$",
    re.IGNORECASE,
)
_PHONE_RUN_RE = re.compile(r"(?<![\dA-Za-z*])\+?\d{10,11}(?![\dA-Za-z*])", re.ASCII)
_PHONE_CUE_WINDOW = 24


def _cued_phones(text: str, run_start: int, run_end: int, out: list[Candidate]) -> None:
    for run in _PHONE_RUN_RE.finditer(text, run_start, run_end):
        before = text[max(0, run.start() - _PHONE_CUE_WINDOW) : run.start()]
        # A placeholder's tag ("[REDACTED:phone]") is no cue: sanitizing stays idempotent.
        if _PHONE_CUE_RE.search(PLACEHOLDER_RE.sub("", before)) is not None:
            _add(out, Match(Kind.PHONE, run.start(), run.end()), 20)


def _word_char(ch: str) -> bool:
    # ASCII only: Chinese glues numbers straight onto characters ("证件号4201…").
    return ch.isascii() and ch.isalnum()


def _glued_before(text: str, start: int) -> bool:
    """A letter or digit right before ``start``, or one before a dash there (a uuid)."""
    before = text[max(0, start - 2) : start]
    return bool(before) and (
        _word_char(before[-1]) or (len(before) == 2 and _word_char(before[0]) and before[1] == "-")
    )


def _glued_after(text: str, end: int) -> bool:
    """A letter or digit right after ``end`` (an ID's X excepted), or one after a dash."""
    after = text[end : end + 2]
    if not after:
        return False
    if _word_char(after[0]):
        return after[0] not in "Xx"
    return len(after) == 2 and after[0] == "-" and _word_char(after[1])


def _add(out: list[Candidate], match: Match, priority: int) -> None:
    out.append((match, _rank(match, priority)))


_LONG_TOKEN = 40


# Every byte that can be part of such a token becomes "x", every other one a space
# (one C pass); a run of 40 "x" is then found with a substring search, also in C.
_TOKEN_BYTES = bytes(
    120 if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "/+=_-") else 32 for b in range(256)
)
_TOKEN_NEEDLE = b"x" * _LONG_TOKEN
# Room for the boundary lookarounds of a detector run inside a token's span.
_TOKEN_MARGIN = 1


def _long_tokens(text: str) -> list[tuple[int, int]]:
    """The spans of the runs of key characters in ``text`` long enough for a detector
    that cannot start from a literal (a bare 40-character key): looked for with the
    regex only when a C pass (encode, translate, find) says there is one."""
    if len(text) < _LONG_TOKEN:
        return []
    # "ascii"/"replace" keeps one byte per character, so byte offsets are offsets.
    translated = text.encode("ascii", "replace").translate(_TOKEN_BYTES)
    spans = []
    # The first 40 "x" of a run are at its start: each find lands on a run's start.
    at = translated.find(_TOKEN_NEEDLE)
    while at != -1:
        end = translated.find(b" ", at)
        end = len(text) if end == -1 else end
        spans.append((max(0, at - _TOKEN_MARGIN), min(len(text), end + _TOKEN_MARGIN)))
        at = translated.find(_TOKEN_NEEDLE, end)
    return spans


def _scan(text: str) -> list[Candidate]:
    """All confirmed candidates in ``text``, overlapping ones included."""
    found: list[Candidate] = []
    size = len(text)
    lowered = _lower_same_length(text)
    long_tokens = _long_tokens(text)
    for det in TOKEN_DETECTORS:
        if det.needle and det.needle not in (lowered if det.lowered else text):
            # A C substring search (fast) instead of the regex's literal scan.
            continue
        if det.min_token:
            for start, end in long_tokens:
                _run(det, lowered if det.lowered else text, start, end, found)
            continue
        _run(det, lowered if det.lowered else text, 0, size, found)
    if "@" in text:
        found.extend((m, _rank(m, EMAIL_PRIORITY)) for m in find_emails(text))
    found.extend((m, _rank(m, EMAIL_PRIORITY)) for m in find_spelled_emails(lowered))
    found.extend((m, _rank(m, FIELD_PRIORITY)) for m in find_fields(text, lowered))
    if "cookie" in lowered:
        found.extend((m, _rank(m, _COOKIE_PRIORITY)) for m in find_cookies(text, lowered))
    if "-u" in text:
        found.extend((m, _rank(m, _USER_FLAG_PRIORITY)) for m in find_user_flags(text))
    if "|" in text and "-" in text and "\n" in text:
        found.extend((m, _rank(m, FIELD_PRIORITY)) for m in find_table_cells(text))
    for run in DIGIT_RUN_RE.finditer(text):
        digits = _run_window(text, run.start(), run.end(), _PLAIN_DIGIT_DETECTORS, found)
        if digits >= _MOBILE_DIGITS:
            _spaced_numbers(text, run.start(), run.end(), found)
        if digits <= _MAX_PHONE_DIGITS:
            _cued_phones(text, run.start(), run.end(), found)
    if "\n" in text:
        for run in DIGIT_LINES_RE.finditer(text):
            if "\n" in run.group():
                _spaced_numbers(text, run.start(), run.end(), found)
    if "+" in text:
        for run in PLUS_RUN_RE.finditer(text):
            _run_window(text, run.start(), run.end(), _PLUS_DIGIT_DETECTORS, found)
    if "\n" in text:
        found = [_wrapped(text, cand) for cand in found]
    return found


_COOKIE_PRIORITY = 62
_USER_FLAG_PRIORITY = 66


def _wrapped(text: str, cand: Candidate) -> Candidate:
    """A credential broken across lines takes the lines that continue it."""
    match, rank = cand
    if match.kind not in CREDENTIAL_KINDS:
        return cand
    end = wrapped_end(text, match.start, match.end)
    if end == match.end:
        return cand
    longer = Match(match.kind, match.start, end, match.quote)
    return (longer, _rank(longer, rank[2]))


def _has_content(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    """True if text[start:end] holds an alphanumeric character outside ``spans``.

    ``spans`` are sorted and disjoint; bisection keeps texts with thousands of
    placeholders linear rather than quadratic.
    """
    index = bisect_right(spans, (start, start))
    if index > 0 and spans[index - 1][1] > start:
        index -= 1
    cursor = start
    while index < len(spans) and spans[index][0] < end:
        p_start, p_end = spans[index]
        if any(ch.isalnum() for ch in text[cursor:p_start]):
            return True
        cursor = max(cursor, p_end)
        index += 1
    return any(ch.isalnum() for ch in text[cursor:end])


def _with_content(text: str, found: list[Candidate]) -> list[Candidate]:
    # Spans that cover nothing but placeholders are what an earlier pass left:
    # finding them again would break idempotence.
    if not found or PLACEHOLDER_LITERAL not in text:
        return found
    spans = [p.span() for p in PLACEHOLDER_RE.finditer(text)]
    return [(c, r) for c, r in found if _has_content(text, c.start, c.end, spans)]


def _merge(candidates: list[Candidate]) -> list[Candidate]:
    """Union overlapping candidates; each cluster takes the kind of its best member."""
    merged: list[Candidate] = []
    for cand, rank in sorted(candidates, key=lambda cr: (cr[0].start, cr[0].end)):
        if merged and cand.start < merged[-1][0].end:
            last, best = merged[-1]
            end = max(last.end, cand.end)
            if rank > best:
                merged[-1] = (Match(cand.kind, last.start, end, cand.quote), rank)
            else:
                merged[-1] = (Match(last.kind, last.start, end, last.quote), best)
            continue
        merged.append((cand, rank))
    return merged


def _fill(text: str, matches: list[Candidate]) -> str:
    """``text`` with each match replaced by a same-length stand-in for its placeholder.

    The stand-in starts with ``[`` and ends with ``]`` like a placeholder and holds
    no alphanumerics, and every offset stays where it was.
    """
    parts: list[str] = []
    cursor = 0
    for match, _ in matches:
        length = match.end - match.start
        parts.append(text[cursor : match.start])
        parts.append("[]"[:length] if length <= 2 else "[" + " " * (length - 2) + "]")
        cursor = match.end
    parts.append(text[cursor:])
    return "".join(parts)


def _touches_content(text: str, matches: list[Candidate]) -> bool:
    size = len(text)
    for match, _ in matches:
        if match.start > 0 and text[match.start - 1] not in _NEUTRAL:
            return True
        if match.end < size and text[match.end] not in _NEUTRAL:
            return True
    return False


def find_matches(text: str) -> list[Match]:
    """Return the non-overlapping spans of ``text`` to replace, in text order.

    The detectors read the normalized form of ``text`` (NFKC, zero-width characters
    removed: :mod:`memstrata.gateway.normalize`); each span found there is mapped back
    to the text as written.
    """
    norm = normalize(text)
    if not norm.changed:
        return _find_in(text)
    mapped = [
        Match(m.kind, norm.start(m.start), norm.end(m.end), m.quote) for m in _find_in(norm.text)
    ]
    return [m for m in mapped if m.end > m.start]


def _find_in(text: str) -> list[Match]:
    """The spans of an already normalized ``text`` (see :func:`find_matches`).

    Overlapping candidates are merged into one span (their union, so no part of
    either leaks) labelled with the best candidate's kind. Candidates covering
    nothing but existing placeholders are dropped. Because replacing a span
    changes what its neighbours touch (``+86…`` glued to an API key is only a
    phone number once the key is gone), the text is re-scanned with stand-ins in
    place of the matches until nothing new appears; this makes sanitizing
    idempotent.
    """
    matches = _merge(_with_content(text, _scan(text)))
    for _ in range(_MAX_PASSES):
        if not matches or not _touches_content(text, matches):
            break
        filled = _fill(text, matches)
        spans = [(m.start, m.end) for m, _ in matches]
        extra = [
            (c, r)
            for c, r in _with_content(filled, _scan(filled))
            if _has_content(filled, c.start, c.end, spans)
        ]
        if not extra:
            break
        matches = _merge(matches + extra)
    return [m for m, _ in matches]
