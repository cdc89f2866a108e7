"""Detectors found from an anchor outwards: emails from each ``@``, secret-named
fields from each keyword (``password``, ``token``, ``密码``...).

Both would be slow as one regex (a local part or a field name can start almost
anywhere), but their anchors are rare and ``str.find`` locates them in one fast
scan; the rest is a short walk backwards and an anchored ``match`` forwards.
"""

from __future__ import annotations

import re

from memstrata.gateway.kinds import PLACEHOLDER_LITERAL, Kind, Match, field_kind

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
    """Email addresses whose ``@`` lies in ``text[pos:endpos]`` (one space on either
    side of the ``@`` allowed: "alice @ example.com" is still an address)."""
    found: list[Match] = []
    stop = len(text) if endpos is None else endpos
    at = text.find("@", pos, stop)
    while at != -1:
        after = at + 1 if text[at + 1 : at + 2] != " " else at + 2
        start = at if text[at - 1 : at] != " " or at < 2 or text[at - 2] == " " else at - 1
        while start > 0 and text[start - 1] in _EMAIL_LOCAL and at - start < _EMAIL_MAX_LOCAL:
            start -= 1
        # Too long a local part is not an address; a leading dot or dash is dropped.
        if not (start > 0 and text[start - 1] in _EMAIL_LOCAL):
            while start < at and not text[start].isalnum():
                start += 1
            domain = _EMAIL_DOMAIN_RE.match(text, after)
            if start < at and domain is not None:
                found.append(Match(Kind.EMAIL, start, domain.end()))
        at = text.find("@", at + 1, stop)
    return found


# An address written around a spam filter: "alice[at]example[dot]com", "bob (at) x.org".
_AT_WORDS = ("[at]", "(at)", "{at}", "<at>")
_DOT = r"(?:[ \t]*(?:\[dot\]|\(dot\)|\{dot\}|<dot>)[ \t]*|\.)"
_SPELLED_EMAIL_RE = re.compile(
    r"[A-Za-z0-9._%+-]{1,64}[ \t]*(?:\[at\]|\(at\)|\{at\}|<at>)[ \t]*"
    r"[A-Za-z0-9-]{1,63}(?:" + _DOT + r"[A-Za-z0-9-]{1,63})*" + _DOT + r"[A-Za-z]{2,24}" + _NA,
    re.IGNORECASE,
)


def find_spelled_emails(lowered: str) -> list[Match]:
    """Addresses with the ``@`` (and dots) spelled out in brackets."""
    if not any(word in lowered for word in _AT_WORDS):
        return []
    return [Match(Kind.EMAIL, m.start(), m.end()) for m in _SPELLED_EMAIL_RE.finditer(lowered)]


# --- secret-named fields, found from each keyword outwards ------------------------

FIELD_PRIORITY = 60
#: Needles looked up with str.find in the lowercased text (one fast scan each; a
#: regex alternation would try every position), and the keywords each can start
#: or end: "pass" covers password/passwd/passphrase, "令" covers 口令 and 令牌.
_ASCII_KEYWORDS = (
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "pincode",
    "pass",
    "pin",
    "pwd",
    "pw",
    "bearer",
    "secret",
    "token",
    "credentials",
    "credential",
    "creds",
    "key",
)
# Simplified and traditional forms (NFKC does not map one to the other).
_CJK_KEYWORDS = ("密码", "密碼", "密钥", "密鑰", "口令", "令牌", "秘钥", "秘鑰", "私钥", "私鑰")
_NEEDLES = ("pass", "pw", "pin", "secret", "token", "cred", "key", "bearer")
_CJK_NEEDLES = ("密", "令", "钥", "鑰")
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
_BARE_FIRST = r"[!#-%(-+\--:=?-Z^_a-~\u00c0-\u024f]"
_BARE_GLUE = r"[,;&](?![A-Za-z0-9_.\-]+[ \t]*[=:])(?=" + _BARE_FIRST + ")"
_BARE = _BARE_FIRST + r"(?:" + _BARE_FIRST + "|" + _BARE_GLUE + ")*"
# Chinese separators: "是", "为" and the verbs of a change ("改成了", "设置为"), after
# an optional adverb ("已经改为", "就是").
_CJK_SEPARATOR = (
    r"(?:已经?|现在|目前|都|也|就|还)?"
    r"(?:改成了?|改为|换成了?|换为|设成了?|设为|设置为|设置成|设定为|设定成|变成了?|变为|"
    r"重置为|重置成|修改为|修改成|更新为|更新成|变更为|是|为)"
)
# A Chinese password with an ASCII tail ("天王盖地虎2024"): Chinese characters, then at
# least three ASCII characters that end the value (so "使用SSO登录", Chinese again after
# the ASCII, and "至少8位", one digit, are not values).
_MIXED = r"[\u4e00-\u9fff]{1,16}[!#-%(-+\--:=?-Z^_a-~]{3,64}(?![\u4e00-\u9fff])"
# A value on the next line may open a code fence ("Password:" then ```, the value,
# ```): the fence's first line is the value.
_FENCE = r"(?:(?:```|~~~)[A-Za-z0-9_+-]{0,20}[ \t]*\r?\n[ \t]*)?"
_QUOTED = r"\"(?P<dq>(?:[^\"\\\n]|\\.)+)\"|'(?P<sq>[^'\n]+)'|`(?P<bq>[^`\n]+)`"
# Markdown emphasis around a name or its separator: **Password:** `x`, __pin__ = 1234.
_MD = r"(?:\*{1,2}|_{1,2})?"
# After the name: its closing quote (if it was quoted), a separator, then a value:
# \"escaped\" (JSON inside JSON), "double", 'single', `code` or bare. The value may
# start on the next line ("password:" then a line break); a table cell ("| pin | 4821 |")
# or a value on the next line must also look like a value, not a word (checked after).
_FIELD_TAIL_RE = re.compile(
    # A closing bracket may end the name: "客户端密钥(client secret)：X".
    r"(?P<close>\\?[\"'`]?)[)\]]?" + _MD + r"[ \t\u3000]*"
    r"(?P<sep>=>|->|→|[:=：|–—>]|-(?=[ \t])|"
    + _CJK_SEPARATOR
    + r"(?:[ \t]*[:：])?)"
    + _MD
    + r"[ \t\u3000]*(?P<gap>(?:\r?\n[ \t\u3000]*"
    + _FENCE
    + ")?)"
    + _MD
    + r"(?![:：={}|~])(?:\\\"(?P<eq>(?:[^\"\\\n]|\\[^\"\n])+)\\\"|"
    + _QUOTED
    + r"|「(?P<jq>[^」\n]{1,128})」|“(?P<cq>[^”\n]{1,128})”|(?P<bare>"
    + _BARE
    + r")|(?P<mixed>"
    + _MIXED
    + "))"
)
# Command-line flags take their value after a space: --password hunter2.
# A value that is itself a flag (--no-password --verbose) is not a value.
_FLAG_TAIL_RE = re.compile(r"(?P<close>)[ \t]+(?:" + _QUOTED + r"|(?P<bare>(?!-)" + _BARE + "))")
# A password said in English prose: "my password is X", "the password for the vpn
# was X", "password is now set to: X". The value runs to the next whitespace (a
# sentence's closing punctuation goes with it: better one character too many than
# half a password).
_PROSE_VALUE = r"[!#-&(-;=?-Z^_a-~\u00c0-\u024f][!#-;=?-Z^_a-~\u00c0-\u024f]*"
_PROSE_TAIL_RE = re.compile(
    r"(?P<close>)"
    r"(?:[ \t]+(?:for|to|of|on|at|in)(?:[ \t]+[^\s.,;:!?\"'=]{1,30}){1,4}?"
    # "the password I set is X", "the key you gave me was X"
    r"|[ \t]+(?:I|you|we|they|he|she|someone)(?:[ \t]+[A-Za-z']{1,15}){1,2}?"
    # "the password, if you need it, is X"
    r"|[ \t]*,[^,.;:\n]{1,40},)?"
    r"(?:[ \t]+(?:is|was|will[ \t]+be|has[ \t]+been|had[ \t]+been|became|remains)|['’]s)"
    r"(?:[ \t]+(?:now|still|currently|just|simply|actually|also))?"
    r"(?:[ \t]+(?:set|changed|reset|updated)[ \t]+to)?"
    r"(?:[ \t]*[:：])?(?:[ \t]+|[ \t]*\r?\n[ \t]*)"
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
    see ask check contact refer look find
    continue proceed log login sign access regain unlock confirm verify complete finish
    enable protect secure avoid keep make get use change something anything one"""
_PROSE_NOT_VALUES = frozenset(_PROSE_NOT_VALUE_WORDS.split())
_VALUE_GROUPS = ("eq", "dq", "sq", "bq", "cq", "jq", "bare", "mixed")


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


# A value named before its cue: "I use X as my password", "X is my wifi password",
# "用X作密码", "X是我的密码". Matched against the text just before the keyword.
_AS_BEFORE_RE = re.compile(
    r"(?:^|[^A-Za-z])(?:use[sd]?|using|chose|choose|chosen|pick(?:ed|s)?|set|typed?|"
    r"enter(?:ed|s)?|have|had|got|put|with|went[ \t]+with|go[ \t]+with)"
    r"[ \t]+[\"'“`]?(?P<value>[!#-&(-~]{2,128}?)[\"'”`]?[ \t]+as[ \t]+"
    r"(?:(?:my|the|our|your|his|her|their|a|an)[ \t]+)?(?:[A-Za-z-]{2,15}[ \t]+)?$",
    re.IGNORECASE,
)
_IS_BEFORE_RE = re.compile(
    r"(?:^|[\s\"'“`(\[])[\"'“`]?(?P<value>[!#-&(-~]{2,128}?)[\"'”`]?[ \t]+"
    r"(?:is|was|will[ \t]+be|has[ \t]+been|remains)[ \t]+(?:still[ \t]+|now[ \t]+)?"
    r"(?:my|the|our|your|his|her|their)[ \t]+(?:new[ \t]+|current[ \t]+)?"
    r"(?:[A-Za-z-]{2,15}[ \t]+)?$",
    re.IGNORECASE,
)
_CJK_BEFORE_RE = re.compile(
    r"(?:用|拿|以|把|将)[ \t]*[\"'“「`]?(?P<value>[!-~]{2,128}?)[\"'”」`]?[ \t]*"
    r"(?:来)?(?:作为|作|做为|做|当作|当做|当成|当|设为|设成|设置为|设置成)"
    r"(?:我的|我们的|你的|的)?[\u4e00-\u9fff]{0,4}$"
    # "用X这个密钥加密": the value pointed at, then its cue.
    r"|(?:用|拿|以|把|将)[ \t]*[\"'“「`]?(?P<value3>[!-~]{2,128}?)[\"'”」`]?[ \t]*"
    r"(?:这个|这一个|这串|这一串|这条|此)[\u4e00-\u9fff]{0,2}$"
    r"|(?<![!-~])[\"'“「`]?(?P<value2>[!-~]{2,128}?)[\"'”」`]?[ \t]*(?:就是|便是|是|为|乃)"
    r"(?:我的|我们的|你的|他的|她的|的)[\u4e00-\u9fff]{0,4}$"
)
# A Chinese cue followed straight by its value ("WiFi密码 Quokka5Ravine"): only a value
# shaped like one (letters and digits, or symbols) is taken without a separator.
# A value standing on its own starts with a letter or a digit (so "--verbose",
# "=[REDACTED:...]", "=> x" and the ")：" after "(client secret" are not one).
# (One character class, no per-character lookahead: these run after every cue.)
_LOOSE_VALUE = r"(?P<bare>[A-Za-z0-9][!#-%(-+\--:=?-Z^_a-z~\u00c0-\u024f]{0,255})"
_CJK_ADJACENT_RE = re.compile(
    r"(?:如下|如下所示)?[:：]?[ \t]*(?:\r?\n[ \t]*" + _FENCE + ")?" + _LOOSE_VALUE
)
# An English cue followed by its value on the same line or the next ("access token
# 0c99b5.h4Q...", "New password" then a line break): only a value shaped like one.
_ADJACENT_RE = re.compile(r"[ \t]*(?:\r?\n[ \t]*" + _FENCE + ")?" + _LOOSE_VALUE)
# A cue, a few words, then a colon and the value ("password please: X", "API key for
# the geocoder: X", "paste this bearer into Insomnia: X").
_WORDS_COLON_RE = re.compile(
    r"(?:[ \t]+[^\s:=\"'`<>]{1,20}){1,4}?[ \t]*(?::|=>|->|→|=)[ \t]*(?:\r?\n[ \t]*)?"
    r"(?:" + _QUOTED + "|" + _LOOSE_VALUE + ")"
)
# The short forms of password (pass, pw) are also ordinary words: only a value with the
# shape of one is taken after them.
_WEAK_NAMES = frozenset({"pass", "pw"})
_MIN_LOOSE_PASSWORD = 6
_MIN_LOOSE_SECRET = 16
# English prose also names other secrets ("the client secret is X", "our signing key
# was X"): their values are random strings, so only such a value is taken.
_BEFORE_WINDOW = 80
_MAX_COUNT = 5
_CJK_BEFORE_CHARS = "用拿以把将是为乃"
_IS_WORDS = (" is ", " was ", " be ", " been ", " remains ")
_PAIR_RE = re.compile(r"[ \t]*/[ \t]*" + _BARE)
_MIN_CJK_VALUE = 4
_COUNT_WORDS = frozenset("位个次天年月字")
# After a cue, a word that makes it a modifier of another noun ("password manager").
_PHRASE_GOES_ON_RE = re.compile(
    r"[ \t]+(?!(?:now|too|again|for|on|at|in|and|but|so|because|since|from|to|today|"
    r"here|there|everywhere|then|also|as|until|ever|anymore|lol|btw|ok|okay)\b)[A-Za-z]"
)
_PLACEHOLDER_MAX = 32


def _shaped(value: str) -> bool:
    """A value that looks generated or chosen, not a word: a digit, a symbol, or a
    capital after the first letter; at least 4 characters."""
    if len(value) < 4:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value.rstrip(".,;:!?)"))
    has_inner_upper = any(c.isupper() for c in value[1:])
    return has_digit or has_symbol or has_inner_upper


def _random_shaped(value: str) -> bool:
    """A generated secret: 8+ characters mixing letters with digits or cases."""
    core = value.rstrip(".,;:!?)")
    if len(core) < 8:
        return False
    letters = any(c.isalpha() for c in core)
    digits = any(c.isdigit() for c in core)
    mixed = any(c.isupper() for c in core) and any(c.islower() for c in core)
    # Digits alone are a limit or a count ("token limit: 128000000") unless long.
    return (letters and digits) or (mixed and len(core) >= 12) or (digits and len(core) >= 16)


# Words after a number that make it a length ("8-16 characters", "12 chars long").
_UNIT_AFTER_RE = re.compile(
    r"[ \t]*(?:characters?|chars?|digits?|letters?|symbols?|numbers?|words?|long|"
    r"or[ \t]+(?:more|longer|fewer))(?![A-Za-z])",
    re.IGNORECASE,
)
_MASK_CHARS = "*•●·xX#."


def _masked_or_counted(value: str, text: str, end: int) -> bool:
    """A value already hidden ("********") or a length ("8-16 characters"): none to take."""
    if value and not value.strip(_MASK_CHARS):
        return True
    core = value.rstrip(".,;:!?)")
    counted = core.replace("-", "").replace("+", "").isdigit() and len(core) <= _MAX_COUNT
    return counted and _UNIT_AFTER_RE.match(text, end) is not None


def _a_word(value: str) -> bool:
    return value.rstrip(".,;:!?)").strip("*_").lower() in _PROSE_NOT_VALUES


def _name_end(text: str, kw_end: int) -> int:
    """Where a name the keyword does not end ends (secret_key_base, password_policy)."""
    end = kw_end
    while end < len(text) and end - kw_end < _NAME_MAX and text[end] in _NAME_CHARS:
        end += 1
    return end


def _field_at(text: str, kw_start: int, kw_end: int) -> Match | None:
    opened = text.rfind(PLACEHOLDER_LITERAL, max(0, kw_start - _PLACEHOLDER_MAX), kw_start)
    if opened != -1 and "]" not in text[opened:kw_start]:
        return None  # the "key" of [REDACTED:api_key]
    keyword = text[kw_start:kw_end].lower()
    cjk = not keyword.isascii()
    if not cjk and kw_end < len(text) and text[kw_end] in _NAME_CHARS:
        # The keyword does not end the name: max_tokens and password_policy are no
        # secrets; secret_key_base is one.
        longer = _name_end(text, kw_end)
        start = _name_start(text, kw_start, cjk)
        if field_kind(text[start:longer].rstrip("_.-")) is None:
            return None
        kw_end = len(text[:longer].rstrip("_.-"))
    if (
        not cjk
        and kw_start > 0
        and keyword in ("pin", "pass", "pw")
        and text[kw_start - 1].isalnum()
    ):
        return None  # spin, bypass, npw
    if keyword == "key":
        before = text[max(0, kw_start - 12) : kw_start].lower().rstrip("_.- \t")
        qualified = before.endswith(_KEY_QUALIFIERS)
        # "secret key", "api key": the qualifier with a space is still the name; "key"
        # alone names a secret only before a value shaped like a generated one.
        kind: Kind | None = Kind.AWS_SECRET_KEY if before.endswith("secret access") else Kind.SECRET
        start = _name_start(text, kw_start, cjk)
        if field_kind(text[start:kw_end]) is not None:
            kind = field_kind(text[start:kw_end])
    else:
        qualified = True
        # Only the last _NAME_MAX characters of a longer name are looked at: the kind
        # depends on the suffix alone, and a long name must not save a secret.
        start = _name_start(text, kw_start, cjk)
        kind = field_kind(text[start:kw_end])
    if kind is None:
        return None
    weak = not qualified or text[start:kw_end].lower().rsplit("_", 1)[-1] in _WEAK_NAMES
    # A value said after the cue, one named before it, then the loosest form: a
    # shaped value straight after the cue ("I use X as my password" and more text
    # names X, not the next word).
    match = _value_after(text, start, kw_end, kind, cjk)
    # "$PASS", "${DB_PASSWORD}", "%PASSWORD%": the name used, not a label; only a
    # separator ("$password = ...") gives it a value.
    reference = start > 0 and text[start - 1] in "${%"
    if match is None and not reference:
        match = _value_before(text, kw_start, kw_end, kind, cjk)
    if match is None and not reference:
        match = _adjacent(text, kw_end, kind, cjk)
    if match is None or (weak and not _strong_enough(text[match.start : match.end], kind)):
        return None
    if _VARIABLE_RE.fullmatch(text, match.start, match.end):
        return None  # PGPASSWORD=${DB_PASSWORD}: a reference to the secret, not the secret
    if text[start:kw_end].lower().startswith("cred"):
        # Credentials come as a pair: "creds: bob / Hunter2", "credentials: bob:pw".
        pair = _PAIR_RE.match(text, match.end)
        if pair is not None:
            return Match(kind, match.start, pair.end(), match.quote)
    return match


# A shell, batch or template variable standing for a value (upper-case or braced names
# only: "$ecretPa55" is a password).
_VARIABLE_RE = re.compile(
    r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Z_][A-Z0-9_]*|%[A-Z_][A-Z0-9_]*%|"
    r"\{\{[ \t]*[A-Za-z_][A-Za-z0-9_.]*[ \t]*\}\}"
)


def _strong_enough(value: str, kind: Kind) -> bool:
    """After a cue that is also an ordinary word (pass, pw, key alone), a value must
    look generated or chosen."""
    if kind is Kind.PASSWORD:
        return len(value) >= _MIN_LOOSE_PASSWORD and _shaped(value) and not _a_word(value)
    return len(value) >= _MIN_LOOSE_SECRET and _random_shaped(value)


def _value_after(text: str, start: int, kw_end: int, kind: Kind, cjk: bool) -> Match | None:
    """The value said after the cue at ``text[start:kw_end]``, or None."""
    tail = _FIELD_TAIL_RE.match(text, kw_end)
    if tail is not None and not _tail_holds_value(tail):
        tail = None
    if tail is not None and tail.group("sep") == ">" and not text[:start].endswith("<"):
        tail = None  # only <password>value</password> is markup; "password > 8" is not
    if tail is None and text.startswith("--", start):
        tail = _FLAG_TAIL_RE.match(text, kw_end)
    if tail is None and not cjk:
        tail = _prose_tail(text, start, kw_end, kind)
    if tail is not None:
        return _tail_match(text, start, tail, kind)
    if not cjk:
        colon = _WORDS_COLON_RE.match(text, kw_end)
        if colon is not None:
            group = next(g for g in ("dq", "sq", "bq", "bare") if colon.group(g) is not None)
            value = colon.group(group)
            if _strong_enough(value, kind):
                return Match(kind, colon.start(group), colon.end(group))
    return None


def _adjacent(text: str, kw_end: int, kind: Kind, cjk: bool) -> Match | None:
    """A value shaped like one straight after its cue, or on the next line."""
    adjacent = (_CJK_ADJACENT_RE if cjk else _ADJACENT_RE).match(text, kw_end)
    if adjacent is not None:
        value = adjacent.group("bare")
        loose = _shaped(value) if cjk and kind is Kind.PASSWORD else _strong_enough(value, kind)
        if loose and not _a_word(value):
            return Match(kind, adjacent.start("bare"), adjacent.end("bare"))
    return None


def _tail_match(text: str, start: int, tail: re.Match[str], kind: Kind) -> Match | None:
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


def _tail_holds_value(tail: re.Match[str]) -> bool:
    """A value on the next line or in the next table cell is only taken when it is not
    a word of a sentence or a label ("Password:" then "Username: bob")."""
    loose = tail.group("sep") in ("|", "-", "–", "—") or "\n" in tail.group("gap")
    value = next(
        (tail.group(g) for g in _VALUE_GROUPS if g in tail.re.groupindex and tail.group(g)),
        "",
    )
    if _masked_or_counted(value, tail.string, tail.end()):
        return False
    bare = tail.group("bare")
    if bare is None:
        return True
    if not loose:
        # "Password: at least 12 characters" describes one; it holds none. So does
        # "密码是8位" (a length): after 是/为 a value has 4 characters at least and
        # is not a count ("8位", "12个字符").
        if not tail.group("sep").isascii() and tail.group("sep") != "：":
            after = tail.string[tail.end("bare") : tail.end("bare") + 1]
            return len(bare) >= _MIN_CJK_VALUE and after not in _COUNT_WORDS
        return not _a_word(bare)
    return not _a_word(bare) and not bare.endswith(":") and _shaped(bare)


def _value_before(text: str, kw_start: int, kw_end: int, kind: Kind, cjk: bool) -> Match | None:
    """A value named before its cue ("use X as my password", "用X作密码"). When the
    cue does not end its phrase ("as my password manager") the value must be shaped
    like one."""
    goes_on = not cjk and _PHRASE_GOES_ON_RE.match(text, kw_end) is not None
    before = text[max(0, kw_start - _BEFORE_WINDOW) : kw_start]
    offset = kw_start - len(before)
    if cjk:
        if not any(ch in before for ch in _CJK_BEFORE_CHARS):
            return None
        found = _CJK_BEFORE_RE.search(before)
        if found is None:
            return None
        group = next(g for g in ("value", "value2", "value3") if found.group(g) is not None)
        if not _shaped(found.group(group)) and kind is not Kind.PASSWORD:
            return None
        if _a_word(found.group(group)):
            return None
        return Match(kind, offset + found.start(group), offset + found.end(group))
    lowered = before.lower()
    for pattern, needles in ((_AS_BEFORE_RE, (" as ",)), (_IS_BEFORE_RE, _IS_WORDS)):
        # The regexes are anchored at the end but tried from every position: only
        # a window holding their verb is searched.
        if not any(needle in lowered for needle in needles):
            continue
        found = pattern.search(before)
        if found is None:
            continue
        value = found.group("value")
        if _a_word(value) or (pattern is _IS_BEFORE_RE and not _shaped(value)):
            continue
        if goes_on and not _shaped(value):
            continue  # "I use Bitwarden as my password manager"
        if kind is not Kind.PASSWORD and not _random_shaped(value):
            continue
        return Match(kind, offset + found.start("value"), offset + found.end("value"))
    return None


def _prose_tail(text: str, start: int, kw_end: int, kind: Kind) -> re.Match[str] | None:
    """The value of a password (or another named secret) said in prose after its
    keyword, or None."""
    tail = _PROSE_TAIL_RE.match(text, kw_end)
    if tail is None:
        before = text[max(0, start - 40) : start].lower()
        if _SET_BEFORE_RE.search(before) is None:
            return None
        tail = _TO_TAIL_RE.match(text, kw_end)
        if tail is None:
            return None
    bare = tail.group("bare")
    if bare is not None and _a_word(bare):
        return None
    if bare is not None and _masked_or_counted(bare, text, tail.end("bare")):
        return None
    if kind is not Kind.PASSWORD:
        value = next(
            (tail.group(g) for g in ("dq", "sq", "bq", "cq", "bare") if tail.group(g) is not None),
            "",
        )
        if not _random_shaped(value):
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


# For the structure-aware detectors (:mod:`memstrata.gateway.structured`).
random_shaped = _random_shaped
masked_or_counted = _masked_or_counted
prose_word = _a_word
