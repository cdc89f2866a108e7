"""Detectors found from an anchor outwards: emails from each ``@``, secret-named
fields from each keyword (``password``, ``token``, ``密码``...).

Both would be slow as one regex (a local part or a field name can start almost
anywhere), but their anchors are rare and ``str.find`` locates them in one fast
scan; the rest is a short walk backwards and an anchored ``match`` forwards.
"""

from __future__ import annotations

import re

from memstrata.gateway.kinds import Kind, Match, field_kind

_NA = r"(?![A-Za-z0-9])"

# --- emails, found from each "@" outwards ---------------------------------------------

EMAIL_PRIORITY = 20
_EMAIL_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_EMAIL_MAX_LOCAL = 64
_EMAIL_DOMAIN_RE = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}" + _NA,
    re.ASCII,
)


def find_emails(text: str, pos: int = 0, endpos: int | None = None) -> list[Match]:
    """Email addresses whose ``@`` lies in ``text[pos:endpos]``."""
    found: list[Match] = []
    stop = len(text) if endpos is None else endpos
    at = text.find("@", pos, stop)
    while at != -1:
        start = at
        while start > 0 and text[start - 1] in _EMAIL_LOCAL and at - start < _EMAIL_MAX_LOCAL:
            start -= 1
        # Too long a local part is not an address; a leading dot or dash is dropped.
        if not (start > 0 and text[start - 1] in _EMAIL_LOCAL):
            while start < at and not text[start].isalnum():
                start += 1
            domain = _EMAIL_DOMAIN_RE.match(text, at + 1)
            if start < at and domain is not None:
                found.append(Match(Kind.EMAIL, start, domain.end()))
        at = text.find("@", at + 1, stop)
    return found


# --- secret-named fields, found from each keyword outwards ------------------------

FIELD_PRIORITY = 60
#: Needles looked up with str.find in the lowercased text (one fast scan each; a
#: regex alternation would try every position), and the keywords each can start
#: or end: "pass" covers password/passwd/passphrase, "令" covers 口令 and 令牌.
_ASCII_KEYWORDS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "credentials",
    "credential",
    "key",
)
_CJK_KEYWORDS = ("密码", "密钥", "口令", "令牌", "秘钥")
_NEEDLES = ("pass", "pwd", "secret", "token", "credential", "key")
_CJK_NEEDLES = ("密", "令", "钥")
# "key" alone is too common (monkey, primary_key): it must follow one of these.
_KEY_QUALIFIERS = ("api", "secret", "access", "private", "signing", "encryption", "master")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_NAME_MAX = 64
_CJK_MAX_PREFIX = 8
# A bare value is printable ASCII (so Chinese prose after a label, "密码是什么", is not
# a value) without quotes, brackets, backslashes or backticks (the JSON, markup or
# placeholder around it). ',', ';' and '&' separate the next field
# ("?token=abc&page=2", "Password=abc;Database=x") but may also be part of a
# password ("Tr0ub4dor&3"): one is kept inside the value unless whitespace, the end,
# or the next "name=" follows it, so a value is never cut at such a character.
_BARE_FIRST = r"[!#-%(-+\--:=?-Z^_a-~]"
_BARE_GLUE = r"[,;&](?![A-Za-z0-9_.\-]+[ \t]*[=:])(?=" + _BARE_FIRST + ")"
_BARE = _BARE_FIRST + r"(?:" + _BARE_FIRST + "|" + _BARE_GLUE + ")*"
# Chinese separators: "是", "为" and the verbs of a change ("改成了", "设置为"), after
# an optional adverb ("已经改为", "就是").
_CJK_SEPARATOR = (
    r"(?:已经?|现在|目前|都|也|就|还)?"
    r"(?:改成了?|改为|换成了?|设成了?|设为|设置为|设置成|变成了?|是|为)"
)
_QUOTED = r"\"(?P<dq>(?:[^\"\\\n]|\\.)+)\"|'(?P<sq>[^'\n]+)'"
# After the name: its closing quote (if it was quoted), a separator, then a value:
# \"escaped\" (JSON inside JSON), "double", 'single' or bare.
_FIELD_TAIL_RE = re.compile(
    r"(?P<close>\\?[\"']?)[ \t\u3000]*(?:=>|[:=：]|" + _CJK_SEPARATOR + r")[ \t\u3000]*"
    r"(?:\\\"(?P<eq>(?:[^\"\\\n]|\\[^\"\n])+)\\\"|" + _QUOTED + r"|(?P<bare>" + _BARE + "))"
)
# Command-line flags take their value after a space: --password hunter2.
# A value that is itself a flag (--no-password --verbose) is not a value.
_FLAG_TAIL_RE = re.compile(r"(?P<close>)[ \t]+(?:" + _QUOTED + r"|(?P<bare>(?!-)" + _BARE + "))")
# A password said in English prose: "my password is X", "the password for the vpn
# was X", "password is now set to: X". The value runs to the next whitespace (a
# sentence's closing punctuation goes with it: better one character too many than
# half a password).
_PROSE_VALUE = r"[!#-&(-;=?-Z^_a-~][!#-;=?-Z^_a-~]*"
_PROSE_TAIL_RE = re.compile(
    r"(?P<close>)"
    r"(?:[ \t]+(?:for|to|of|on|at|in)(?:[ \t]+[^\s.,;:!?\"'=]{1,30}){1,4}?)?"
    r"[ \t]+(?:is|was|will[ \t]+be|has[ \t]+been|had[ \t]+been|became|remains)"
    r"(?:[ \t]+(?:now|still|currently|just|simply|actually|also))?"
    r"(?:[ \t]+(?:set|changed|reset|updated)[ \t]+to)?"
    r"(?:[ \t]*[:：])?[ \t]+"
    r"(?:" + _QUOTED + r"|“(?P<cq>[^”\n]+)”|(?P<bare>" + _PROSE_VALUE + "))",
    re.IGNORECASE,
)
# "I changed my password to X", "set the password to X": "to" introduces the value
# only after a verb of setting, a few words before the keyword.
_SET_BEFORE_RE = re.compile(
    r"(?:^|[^a-z])(?:set|setting|change[ds]?|changing|reset|resetting|update[ds]?|updating)"
    r"(?:[ \t]+[a-z]+){0,2}[ \t]+$"
)
_TO_TAIL_RE = re.compile(
    r"(?P<close>)[ \t]+to(?:[ \t]*[:：])?[ \t]+"
    r"(?:" + _QUOTED + r"|“(?P<cq>[^”\n]+)”|(?P<bare>" + _PROSE_VALUE + "))",
    re.IGNORECASE,
)
# Words that follow "password is" in ordinary sentences ("the password is required",
# "your password is too short"): not a value.
_PROSE_NOT_VALUE_WORDS = """a an the not too very so also only just still now never always
    required needed mandatory optional wrong incorrect correct invalid valid expired
    expiring empty blank missing unknown known set reset changed changing updated same
    different weak strong secure insecure safe unsafe long short case sensitive
    insensitive being visible hidden stored saved encrypted hashed protected secret
    private public forgotten lost compromised leaked stolen new old good bad fine ok
    okay right important simple easy hard complex enabled disabled locked unlocked
    shared used reused generated random temporary sent included attached below above
    here there that this it what which my your his her our their in on at to for of
    with by from as like and or but if when
    continue proceed log login sign access regain unlock confirm verify complete finish
    enable protect secure avoid keep make get use change something anything one"""
_PROSE_NOT_VALUES = frozenset(_PROSE_NOT_VALUE_WORDS.split())
_VALUE_GROUPS = ("eq", "dq", "sq", "cq", "bare")


def _name_start(text: str, end: int, cjk: bool) -> int:
    start = end
    if cjk:
        while (
            start > 0 and end - start < _CJK_MAX_PREFIX and "\u4e00" <= text[start - 1] <= "\u9fff"
        ):
            start -= 1
        return start
    while start > 0 and end - start < _NAME_MAX and text[start - 1] in _NAME_CHARS:
        start -= 1
    return start


def _field_at(text: str, kw_start: int, kw_end: int) -> Match | None:
    keyword = text[kw_start:kw_end].lower()
    cjk = not keyword.isascii()
    if not cjk and kw_end < len(text) and text[kw_end] in _NAME_CHARS:
        return None  # the keyword does not end the name: max_tokens, password_policy
    if keyword == "key":
        before = text[max(0, kw_start - 12) : kw_start].lower().rstrip("_.-")
        if not before.endswith(_KEY_QUALIFIERS):
            return None
    # Only the last _NAME_MAX characters of a longer name are looked at: the kind
    # depends on the suffix alone, and a freakishly long name must not save a secret.
    start = _name_start(text, kw_start, cjk)
    kind = field_kind(text[start:kw_end])
    if kind is None:
        return None
    tail = _FIELD_TAIL_RE.match(text, kw_end)
    if tail is None and text.startswith("--", start):
        tail = _FLAG_TAIL_RE.match(text, kw_end)
    if tail is None and kind is Kind.PASSWORD and not cjk:
        tail = _prose_tail(text, start, kw_end)
    if tail is None:
        return None
    opening = ""
    if start > 0 and text[start - 1] in "\"'":
        opening = (
            text[start - 2 : start] if start > 1 and text[start - 2] == "\\" else text[start - 1]
        )
    # A quote before the name that is not closed after it belongs to something
    # else (the JSON string the "name = value" text sits in): the name is bare.
    quoted = bool(opening) and tail.group("close") == opening
    for group in _VALUE_GROUPS:
        if group in tail.re.groupindex and tail.group(group) is not None:
            # A bare value after a quoted key is JSON: keep the output valid JSON.
            quote = '"' if group == "bare" and quoted and opening == '"' else ""
            return Match(kind, tail.start(group), tail.end(group), quote)
    return None


def _prose_tail(text: str, start: int, kw_end: int) -> re.Match[str] | None:
    """The value of a password said in prose after its keyword, or None."""
    tail = _PROSE_TAIL_RE.match(text, kw_end)
    if tail is None:
        before = text[max(0, start - 40) : start].lower()
        if _SET_BEFORE_RE.search(before) is None:
            return None
        tail = _TO_TAIL_RE.match(text, kw_end)
        if tail is None:
            return None
    bare = tail.group("bare")
    if bare is not None and bare.rstrip(".,;:!?)").lower() in _PROSE_NOT_VALUES:
        return None
    return tail


def find_fields(text: str, lowered: str, pos: int = 0, endpos: int | None = None) -> list[Match]:
    """Values of secret-named fields whose name's keyword lies in ``text[pos:endpos]``.

    ``lowered`` is ``text`` lowercased with the same length (offsets must agree).
    """
    found: list[Match] = []
    stop = len(text) if endpos is None else endpos
    needles = _NEEDLES if text.isascii() else _NEEDLES + _CJK_NEEDLES
    seen: set[tuple[int, int]] = set()
    for needle in needles:
        at = lowered.find(needle, pos, stop)
        while at != -1:
            next_at = at + 1
            for kw_start, kw_end in _keywords_at(lowered, at, needle):
                if (kw_start, kw_end) not in seen:
                    seen.add((kw_start, kw_end))
                    match = _field_at(text, kw_start, kw_end)
                    if match is not None:
                        found.append(match)
                        # A keyword inside this value is covered already; jumping
                        # past it keeps "password=password=..." linear.
                        next_at = max(next_at, match.end)
            at = lowered.find(needle, next_at, stop)
    return found


def _keywords_at(lowered: str, at: int, needle: str) -> list[tuple[int, int]]:
    """The keyword spans a needle found at ``at`` belongs to (longest ASCII form only)."""
    if needle.isascii():
        for keyword in _ASCII_KEYWORDS:
            if lowered.startswith(keyword, at):
                return [(at, at + len(keyword))]
        return []
    spans = []
    for keyword in _CJK_KEYWORDS:
        offset = keyword.find(needle)
        if offset != -1 and at >= offset and lowered.startswith(keyword, at - offset):
            spans.append((at - offset, at - offset + len(keyword)))
    return spans
