"""Detectors that read a text's structure rather than a phrase: cookie headers, the
user:password of a command line's ``-u``/``--user``, markdown tables whose header
names a secret column, and keys wrapped onto the next line.

Each starts from a rare anchor found with ``str.find`` (``cookie``, ``-u``, a table's
``|---|`` rule), so a text without one costs a few C scans.
"""

from __future__ import annotations

import re
from itertools import pairwise

from memstrata.gateway.anchors import masked_or_counted, prose_word, random_shaped
from memstrata.gateway.kinds import PLACEHOLDER_LITERAL, Kind, Match, field_kind

# --- cookies -------------------------------------------------------------------------

# "Cookie:", "Set-Cookie:", a JSON or header dump's "cookie": "..." / cookie = "...".
_COOKIE_HEAD_RE = re.compile(r"cookie[\"']?[ \t]*[:=][ \t]*[\"']?", re.ASCII)
_COOKIE_PAIR_RE = re.compile(r"[ \t]*(?P<name>[!#-'*+\-.0-9A-Z^_`a-z|~]+)[ \t]*=[ \t]*")
# Where a cookie's value ends: its ";", the line's end, or the quote around the header.
_COOKIE_VALUE_RE = re.compile(r"[^;\s\"',]*")
# Names a session or sign-in cookie goes by (PHPSESSID, JSESSIONID, connect.sid,
# _gh_sess, remember_user_token, auth_token, XSRF-TOKEN...).
_SESSION_NAME_RE = re.compile(r"sess|sid|auth|token|login|remember|jwt|csrf|xsrf|key|secret")
# Set-Cookie attributes: their values are no secrets.
_COOKIE_ATTRIBUTES = frozenset(
    {"path", "domain", "expires", "max-age", "samesite", "priority", "partitioned", "version"}
)
_MIN_SESSION_VALUE = 6


def find_cookies(text: str, lowered: str) -> list[Match]:
    """The values of session-like cookies in ``Cookie``/``Set-Cookie`` headers: a value
    under a session-like name, or one shaped like a generated token under any name."""
    found: list[Match] = []
    at = lowered.find("cookie")
    while at != -1:
        head = _COOKIE_HEAD_RE.match(lowered, at)
        if head is not None:
            _cookie_pairs(text, lowered, head.end(), found)
        at = lowered.find("cookie", at + 6)
    return found


def _cookie_pairs(text: str, lowered: str, pos: int, found: list[Match]) -> None:
    line_end = text.find("\n", pos)
    stop = len(text) if line_end == -1 else line_end
    while pos < stop:
        pair = _COOKIE_PAIR_RE.match(text, pos, stop)
        if pair is None:
            return
        value = _COOKIE_VALUE_RE.match(text, pair.end(), stop)
        assert value is not None  # the pattern matches the empty string
        name = lowered[pair.start("name") : pair.end("name")]
        raw = value.group()
        if (
            name not in _COOKIE_ATTRIBUTES
            and raw
            and PLACEHOLDER_LITERAL not in raw
            and (
                (_SESSION_NAME_RE.search(name) and len(raw) >= _MIN_SESSION_VALUE)
                or random_shaped(raw)
            )
        ):
            found.append(Match(Kind.SECRET, value.start(), value.end()))
        pos = value.end()
        if text.startswith(";", pos):
            pos += 1
        else:
            return


# --- command-line user:password --------------------------------------------------------

# curl -u alice:pw, curl --user alice:pw, wget --http-user... (the user:password form
# only: "-u alice" alone prompts for the password). A $VARIABLE is no value.
_USER_FLAG_RE = re.compile(
    r"(?:-u[ \t]*|--(?:proxy-)?user[ \t=]+)[\"']?"
    r"(?P<user>[^\s:\"'$][^\s:\"']*):(?P<value>(?!\$)(?!\[REDACTED:)[^\s\"']{3,})",
    re.ASCII,
)


def find_user_flags(text: str) -> list[Match]:
    """The password of a ``-u user:password`` / ``--user user:password`` flag."""
    found: list[Match] = []
    at = text.find("-u")
    while at != -1:
        if at == 0 or text[at - 1] in " \t-":
            m = _USER_FLAG_RE.match(text, at if text[at - 1 : at] != "-" else at - 1)
            if m is not None:
                found.append(Match(Kind.BASIC_AUTH, m.start("value"), m.end("value")))
        at = text.find("-u", at + 2)
    return found


# --- markdown tables ---------------------------------------------------------------------

_RULE_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$", re.M)
_CELL_STRIP = " \t*_`"
# Cells that say a value is absent or describe one, not a value.
_EMPTY_CELLS = frozenset({"-", "--", "—", "n/a", "na", "none", "null", "yes", "no", "无", "空"})


def _cells(line: str, offset: int) -> list[tuple[int, int]]:
    """Each cell's span (stripped of spaces, emphasis and code marks) in a table row."""
    spans: list[tuple[int, int]] = []
    if "|" not in line:
        return spans
    edges = [i for i, ch in enumerate(line) if ch == "|"]
    if line[: edges[0]].strip():
        edges.insert(0, -1)  # a row without a leading pipe
    if line[edges[-1] + 1 :].strip():
        edges.append(len(line))
    for left, right in pairwise(edges):
        start, end = left + 1, right
        while start < end and line[start] in _CELL_STRIP:
            start += 1
        while end > start and line[end - 1] in _CELL_STRIP:
            end -= 1
        spans.append((offset + start, offset + end))
    return spans


def _cell_value(value: str, kind: Kind) -> bool:
    if not value or PLACEHOLDER_LITERAL in value or value.lower() in _EMPTY_CELLS:
        return False
    if masked_or_counted(value, value, len(value)) or prose_word(value):
        return False
    if " " in value:
        return False  # words describing a value ("at least 12 characters")
    return kind is Kind.PASSWORD or random_shaped(value)


def find_table_cells(text: str) -> list[Match]:
    """Cells under a markdown table header that names a secret ("| 服务 | 密码 |",
    "| user | password |"): the header is the row above the ``|---|`` rule."""
    found: list[Match] = []
    rules = list(_RULE_RE.finditer(text))
    for number, rule in enumerate(rules):
        # A table's rows end where the next table's header starts (the line above its
        # rule): each row is read once, however many tables follow.
        stop = len(text)
        if number + 1 < len(rules):
            stop = text.rfind("\n", 0, max(0, rules[number + 1].start() - 1)) + 1
        head_end = rule.start() - 1
        if head_end <= 0:
            continue
        head_start = text.rfind("\n", 0, head_end) + 1
        header = text[head_start:head_end]
        columns: dict[int, Kind] = {}
        for index, (start, end) in enumerate(_cells(header, head_start)):
            kind = field_kind(text[start:end]) if end > start else None
            if kind is not None:
                columns[index] = kind
        if not columns:
            continue
        row_start = rule.end() + 1
        while row_start < stop:
            row_end = text.find("\n", row_start)
            row_end = len(text) if row_end == -1 else row_end
            row = text[row_start:row_end]
            if "|" not in row:
                break
            for index, (start, end) in enumerate(_cells(row, row_start)):
                kind = columns.get(index)
                if kind is not None and _cell_value(text[start:end], kind):
                    found.append(Match(kind, start, end))
            row_start = row_end + 1
    return found


# --- keys wrapped onto the next line ---------------------------------------------------

# A line holding nothing but more key characters, right after a found key.
_WRAPPED_RE = re.compile(r"\r?\n[ \t]*(?P<more>[A-Za-z0-9+/=_\-]{6,})[ \t]*(?=\r?\n|\Z)", re.ASCII)
_MIN_WRAPPED = 16
_MAX_WRAPS = 8


def wrapped_end(text: str, start: int, end: int) -> int:
    """Where a key found at ``text[start:end]`` really ends when it was broken across
    lines: each following line that is one run of key characters continues it."""
    if end - start < _MIN_WRAPPED or not text.startswith(("\n", "\r\n"), end):
        return end
    if not _key_chars_only(text[start:end]):
        return end
    for _ in range(_MAX_WRAPS):
        more = _WRAPPED_RE.match(text, end)
        if more is None or not random_shaped(more.group("more")):
            break
        end = more.end("more")
    return end


def _key_chars_only(value: str) -> bool:
    return value.isascii() and not any(ch.isspace() for ch in value)
