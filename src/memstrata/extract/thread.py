"""A turn read in its conversation, and change cues that no rule turned into a value.

The rules read one turn; what a user says often needs the turns before it. With
``Turn.previous`` (the last few turns of the thread and the facts stored from them,
passed by the write path) :func:`in_thread` reads:

* a bare correction ("不对，是6月3号。", "我记错了，是6月3号。", "Actually it's June 3",
  "I meant 10,000", "no wait, Tuesday"): the value alone corrects the attribute just
  stated whose value type (:mod:`memstrata.attributes`) it fits - a date a birthday,
  an amount a budget - or the attribute it names by its label ("不对，预算应该是一万元。");
* "me too" (我也是, same here): what the other speaker's last turn said of themselves
  holds for the user too;
* "not anymore" (现在不是了, no longer): a retraction of the value just stated;
* "that changed" (变了, that's not right anymore): the value just stated is in doubt;
* a held value said to have ended ("running is out now", "my Dutch is gone", "Quit
  keto", 胃炎治好了, 鸡蛋现在可以吃了, 兔子送给朋友了, Sushi去年走了, 生酮停了): the
  user's fact of the thread holding that value loses it (:func:`ended`); an item
  named with a cue of eating it again (开始吃羊肉了, "X is fine now") leaves only
  what is kept away from (allergies, avoids, dislikes);
* a change verb with the new value (改成轻断食, 降到十五万, "switched to decaf", and
  "going X now" after a value the turn ended): the held single-valued slot the value
  fits takes it (:func:`_switched`).

Whatever the thread, :func:`disputes` finds the change cues of a sentence that no rule
turned into a value ("我搬家了", "I changed jobs"): the attributes of that topic (the
registry's ``states`` words) are disputed. A ``dispute`` candidate stores nothing; the
write path marks the user's current fact disputed (:mod:`memstrata.write.disputes`).

Questions and hypotheticals give nothing; only the user's own turns are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from memstrata.attributes import ATTRIBUTES, MULTI_VALUED, Attribute, by_name
from memstrata.extract.candidates import Candidate, PriorFact, Turn
from memstrata.extract.corrections import correction_at
from memstrata.extract.fit import fits, shape
from memstrata.extract.patterns import CN_QUESTION_END, HYPOTHETICAL, QUESTION_START
from memstrata.extract.text import fold_quotes, split_sentences

__all__ = ["disputes", "in_thread", "just_stated", "with_disputes"]

_I = re.IGNORECASE
BARE_CONFIDENCE = 0.85
"""A value read against the thread is a little less sure than one the rules read."""
DISPUTE_CONFIDENCE = 0.7
_IMPORTANCE = 0.7

# Words that open a correction without naming what it corrects; with
# :func:`~memstrata.extract.corrections.correction_at` they mark a bare correction.
_BARE_CUE = re.compile(
    r"^\s*(?:no\s+wait|wait|oops|sorry|no|nope|actually|I\s+mean|rather|make\s+that|"
    r"correction|typo|autocorrect(?:ed)?|er+m?|um+)\b|\bI\s+mean\b|\bmake\s+that\b"
    r"|^\s*(?:哦|噢|啊)?(?:不是|等等|等一下|抱歉|对不起|不好意思|口误|笔误|其实|准确地说|应该说)"
    r"|应该是|其实是|实际上是|准确(?:地)?说是",
    _I,
)
# What leads the value in a correcting clause: the cue words, a subject, a copula.
_LEAD = re.compile(
    r"^(?:\s*(?:no\s+wait|wait|oops|sorry|no|nope|actually|rather|well|so|correction|"
    r"I\s+(?:meant|mean)|make\s+that|I\s+(?:got|had)\s+(?:that|it)\s+wrong|my\s+(?:bad|mistake)|"
    r"it'?s|it\s+is|it\s+was|that'?s|that\s+is|that\s+was|the\s+right\s+one\s+is|is|was|"
    r"should\s+be|must\s+be|=|"
    r"typo|autocorrect(?:ed)?|"
    r"不对|不是|等等|等一下|抱歉|对不起|不好意思|口误|笔误|哦|噢|啊|嗯|我|记错了|说错了|搞错了|弄错了|打错了|"
    r"写错了|"
    r"其实|实际上|准确地?说|应该说|应该|算是|算|是|为|才对|的)[\s,:：，]*)+",
    _I,
)
_TRAIL = re.compile(
    r"(?:\s+(?:actually|instead|then|sorry|not\s+.*|rather)|才对|才是|吧|啦|了|呢|哦|的|啊|呀)+$",
    _I,
)
# Clauses of a sentence; "10,000" keeps its comma.
_CLAUSE = re.compile(r"[，。！!;；:：—–]|,(?!\d{3})|\.(?!\d)|\s-\s")
# A clause that answers or waves off rather than giving a value.
_REPLY = re.compile(
    r"算了|没事|谢谢|随便|不知道|不用了|再说|想想|\bnever\s*mind\b|\bthanks?\b|\bwhatever\b|"
    r"\blet\s+me\s+(?:think|check|see)\b|\bnot\s+sure\b|\bforget\s+it\b",
    _I,
)
# A clause spelling the value out ("with an h", 诗歌的诗): no value of its own.
_SPELLING = re.compile(r"^\s*(?:with\s+an?\s+\w|spel(?:led|t)\b)|^\s*(\w)\w*的\1\s*$", _I)
_NEGATED_CLAUSE = re.compile(r"^\s*(?:not|isn'?t|wasn'?t|不是|而不是)\b", _I)

_ME_TOO = re.compile(
    r"^\s*(?:me\s+too|me\s+as\s+well|same\s+(?:here|for\s+me|with\s+me)|so\s+(?:am|do|have)\s+I|"
    r"ditto|我也是|我也一样|我也同样|我也这样|同上|一样)\W*$",
    _I,
)
_NOT_ANYMORE = re.compile(
    r"^\s*(?:(?:well|oh|um|actually|but)[\s,]*)?(?:not\s+any\s*more|no\s+longer|not\s+now|"
    r"(?:that'?s|that\s+is|it'?s|it\s+is)\s+not\s+(?:true|the\s+case|so)\s+any\s*more|"
    r"I\s+(?:don'?t|am\s+not|'m\s+not)\s+any\s*more)\W*$"
    r"|^\s*(?:但是?|不过)?(?:现在|已经|早就|如今)*(?:不再是了|不是了|不这样了|没有了|不了)\W*$",
    _I,
)
_CHANGED = re.compile(
    r"^\s*(?:(?:well|oh|actually|but)[\s,]*)?(?:(?:that|it|this)\s+(?:has\s+|'s\s+)?changed|"
    r"things\s+(?:have\s+)?changed|(?:that'?s|that\s+is|it'?s)\s+(?:not\s+(?:right|true|correct)|"
    r"wrong|outdated|out\s+of\s+date)\s+(?:any\s*more|now))\W*$"
    r"|^\s*(?:但是?|不过)?(?:这个?|那个?)?(?:现在)?(?:已经)?(?:变了|改了|不一样了|不对了|"
    r"不是这样了|有变化了?)\W*$",
    _I,
)
# A change said without its new value; the topic (the registry's ``states`` words of
# an attribute) says which facts it puts in doubt.
_CHANGE_CUE = re.compile(
    r"\b(?:I|we)\s+(?:just\s+|recently\s+|finally\s+|have\s+|'ve\s+)?(?:moved|relocated)\b"
    r"(?!\s+(?:to|in|into|from)\b)"
    r"|\b(?:I|we)\s+(?:just\s+|recently\s+|have\s+|'ve\s+)?(?:changed|switched)\s+(?:my\s+|our\s+)?"
    r"(?:jobs?|careers?|work|roles?|positions?|companies|company|employers?|diet|address|place|"
    r"plans?|budget|phone|number|email|name)\b"
    r"|\b(?:I|we)\s+(?:just\s+|recently\s+|have\s+|'ve\s+)?(?:quit|left|lost)\s+(?:my\s+|the\s+|"
    r"our\s+)?(?:job|work|company|position|role|employer|(?-i:[A-Z][\w&.-]+))"
    r"|\b(?:I|we)\s+(?:got|have|found)\s+a\s+new\s+(?:job|address|place|apartment|flat|house|role)\b"
    r"|\b(?:is|are|'s)\s+(?:different|not\s+(?:right|true|correct))\s+(?:now|any\s*more)\b"
    r"|\b(?:not\s+(?:right|true|correct|accurate)\s+any\s*more|no\s+longer\s+(?:right|true|"
    r"correct|accurate))\b"
    r"|搬家了|搬走了|搬了家|换工作了?|换了(?:工作|份工作|地方|城市|地址|房子|公司)|跳槽了|辞职了|"
    r"离职了|不干了|(?:已经|现在)?(?:变了|改了|不一样了|不对了|不是这样了)",
    _I,
)
_NOT_DONE = re.compile(
    r"\b(?:haven'?t|hasn'?t|didn'?t|never|not\s+yet|won'?t|will|going\s+to|plan\w*|want\w*|"
    r"might|may|should|thinking\s+(?:of|about)|hope)\b|没有?|还没|不会|打算|准备|想|要|可能|也许",
    _I,
)
_THIRD_PERSON = re.compile(
    r"^\s*(?:he|she|they|my\s+(?:friend|brother|sister|mother|mom|father|dad|wife|husband|"
    r"son|daughter|boss|colleague))\b|^\s*(?:他|她|他们|她们|朋友|同事|老板|我(?:的)?(?:朋友|哥哥|"
    r"姐姐|弟弟|妹妹|妈妈|爸爸|老婆|老公|儿子|女儿|同事))",
    _I,
)

# A clause saying that what it names is over: given up, gone, healed, forgotten,
# given away, died. Read only in a clause that names a value the thread holds.
_ENDED = re.compile(
    r"\b(?:is|are|'s|'re|was|were)\s+(?:out|gone|over|done|history)\b"
    r"|\b(?:cleared\s+up|went\s+away|no\s+longer|not\s+any\s*more|gave\s+up|gave\s+away|"
    r"quit|dropped|stopped|ditched|lost|passed\s+away|died|outgrew|grew\s+out\s+of|"
    r"forgot(?:ten)?|was\s+my\s+(?:last|old|previous|former))\b"
    r"|不\S{0,2}?了|不再|没有了|没了|(?:治|已经|早就|都)好了|痊愈|康复|忘光|忘了|忘得|"
    r"走了|去世|死了|送(?:给|人|走)|卖了|停了|放弃|戒了|退了|断了",
    _I,
)
# A clause saying that what is kept away from is taken again ("eggs are fine now",
# 鸡蛋现在可以吃了, 开始吃羊肉了, milk现在OK了).
_TAKEN_AGAIN = re.compile(
    r"\b(?:is|are|'s|'re)\s+(?:fine|ok(?:ay)?|no\s+problem)\b|\bcan\s+(?:eat|have)\b"
    r"|(?:可以|能|开始|又)(?:吃|喝)|(?:OK|ok|没事|没问题)了",
    _I,
)
_KEPT_AWAY = frozenset({"allergies", "avoids", "dislikes"})
_ENDED_NEGATED = re.compile(r"\b(?:not|never|haven'?t|didn'?t|won'?t)\b|没有?(?!了)|还没", _I)


# What the slot holds now, after a change verb: 改成轻断食, 降到十五万, "switched to
# decaf". "going X" / "now X" need a value the same turn ended ("Quit keto. Going
# Mediterranean now."): alone they say nothing of a slot.
_SWITCH = re.compile(
    r"(?:改成|换成|改为|换为|转成|转为|变成|换到|降到|涨到|加到|提到|提高到|降低到|减到|减少到)"
    r"(?P<v>[^，。,;；！!？?]+)"
    r"|\b(?:switch(?:ed|ing)?\s+(?:over\s+)?to|changed?\s+(?:it\s+)?to|(?:I'?m|I\s+am)\s+back\s+to|"
    r"bump(?:ed)?\s+(?:it\s+)?"
    r"(?:up\s+)?to|(?:cut|dropped|lowered|raised)\s+(?:it\s+)?to)\s+(?P<v2>[^,.;!?，。；！？]+)",
    _I,
)
_AFTER_END = re.compile(
    r"\b(?:going|gone|went|doing|trying|now\s+(?:doing|on|eating|going)|now\s+(?:I'?m|I\s+am)"
    r"(?:\s+an?)?|(?:I'?m|I\s+am)(?:\s+an?)?(?=\s+[^,.;!?]+\s+now\b))\s+(?P<v>[^,.;!?，。；！？]+)"
    r"|(?:现在|改|转)(?:是|做|吃|在做|在吃)(?P<v2>[^，。,;；！!？?]+)"
    r"|(?:去了|跳槽到|跳槽去|加入了?)(?P<v3>[^，。,;；！!？?]+)",
    _I,
)
# A change of work said without its value; the value may follow ("Got promoted, I'm
# shift manager now", 我转行了，现在做医药代表).
_WORK_CHANGE = re.compile(
    r"\bgot\s+(?:promoted|laid\s+off|fired|let\s+go)|\bwas\s+(?:promoted|laid\s+off)|"
    r"\bchanged\s+careers?|转行|调岗|升职|升了|被裁|离职|辞职|跳槽",
    _I,
)
_WORK_SLOTS = ("job", "employer")
_NOW = re.compile(r"\s+(?:now|instead|then|from\s+now\s+on)\s*$|^(?:a|an|the)\s+", _I)


def _switched(turn: Turn, found: Sequence[Candidate], gone: Sequence[Candidate]) -> list[Candidate]:
    """The new value a change verb gives the slot the thread holds (module docstring):
    the slot whose value the turn ended, or else the last single-valued one stated
    whose value type the new value fits; none when the rules read that slot."""
    removed = [*gone, *(c for c in found if c.change == "remove")]
    ended_slots = [
        c.attribute for c in removed if (a := by_name(c.attribute)) and not a.multi_valued
    ]
    if _WORK_CHANGE.search(turn.text):
        ended_slots += [name for name in _WORK_SLOTS if name not in ended_slots]
    held = [f.attribute for f in just_stated(turn)]
    covered = {c.attribute for c in found if c.kind == "fact" and c.change != "remove"}
    placed = {c.value.casefold() for c in found if c.kind == "fact"}
    for sentence in split_sentences(fold_quotes(turn.text)):
        if _is_question(sentence) or HYPOTHETICAL.search(sentence):
            continue
        if _THIRD_PERSON.search(sentence):
            continue
        matches = list(_SWITCH.finditer(sentence))
        if ended_slots:
            matches += list(_AFTER_END.finditer(sentence))
        for match in matches:
            if _NOT_DONE.search(sentence[: match.start()]):
                continue  # "I might switch to decaf", 我想改成...
            raw = next((g for g in match.groups() if g), "")
            value = _NOW.sub("", _bare_value(raw)).strip()
            if not value or value.casefold() in placed:
                continue  # the rules gave it a slot already
            for name in [*ended_slots, *held]:
                known = by_name(name)
                if known is None or known.multi_valued or name in covered:
                    continue
                if fits(known.value_type, value):
                    return [_made(name, value, "correct", BARE_CONFIDENCE)]
    return []


def _names(clause: str, value: str) -> bool:
    folded = value.casefold().strip()
    if len(folded) < 2 and folded.isascii():
        return False
    if folded.isascii():
        return re.search(rf"(?<!\w){re.escape(folded)}s?(?!\w)", clause.casefold()) is not None
    return folded in clause.casefold()


def ended(turn: Turn) -> list[Candidate]:
    """``remove`` candidates for the values the thread holds that ``turn`` says are
    over (module docstring): the value is named in a clause (or the clause before) that
    holds an end cue; a clause negating the end ("I haven't quit keto") gives none."""
    held = list(just_stated(turn))
    if not held:
        return []
    made: list[Candidate] = []
    for sentence in split_sentences(fold_quotes(turn.text)):
        if _is_question(sentence) or HYPOTHETICAL.search(sentence):
            continue
        if _THIRD_PERSON.search(sentence):
            continue
        clauses = [c for c in re.split(r"[，。！!;；,]|\s[—–-]\s|—", sentence) if c.strip()]
        for n, clause in enumerate(clauses):
            for fact in held:
                if not _names(clause, fact.value):
                    continue
                near = " ".join(clauses[n : n + 2])
                cue = _ENDED.search(clause) or (
                    _ENDED.search(clauses[n + 1]) if n + 1 < len(clauses) else None
                )
                again = fact.attribute in _KEPT_AWAY and _TAKEN_AGAIN.search(near) is not None
                if cue is not None and _ENDED_NEGATED.search(near[: near.find(cue.group(0))]):
                    cue = None  # "I haven't quit keto"
                if cue is None and not again:
                    continue
                made.append(_made(fact.attribute, fact.value, "remove", BARE_CONFIDENCE))
    return made


Reread = Callable[[str], Sequence[Candidate]]
"""Reads a text as the user's own statement (the rules, for "me too")."""


def _is_question(sentence: str) -> bool:
    stripped = sentence.rstrip()
    return stripped.endswith(("?", "？")) or bool(
        (QUESTION_START.match(stripped) and stripped.endswith(("?", "？")))
        or (CN_QUESTION_END.search(stripped) and not stripped.isascii())
    )


def just_stated(turn: Turn) -> Iterator[PriorFact]:
    """The user's facts of the thread, newest first (the attribute just stated first)."""
    for prior in reversed(turn.previous):
        if prior.role != "user":
            continue
        yield from (f for f in reversed(prior.facts) if f.subject == "user")


def _bare_value(clause: str) -> str:
    value = _LEAD.sub("", clause).strip()
    previous = None
    while previous != value:
        previous = value
        value = _TRAIL.sub("", value).strip().strip("\"'“”「」 ")
    return value


def _named(clause: str) -> tuple[Attribute, str] | None:
    """The single-valued attribute a correcting clause names by its label, with what
    follows the label ("预算应该是一万元" -> budget, 应该是一万元)."""
    for attribute in ATTRIBUTES:
        if attribute.multi_valued:
            continue
        for label in sorted(attribute.labels, key=len, reverse=True):
            if len(label) < 2 and not label.isascii():
                continue
            pattern = (
                re.compile(rf"\b(?:my\s+)?{re.escape(label)}\b", _I)
                if label.isascii()
                else re.compile(rf"(?:我的?)?{re.escape(label)}")
            )
            match = pattern.search(clause)
            if match is not None:
                return attribute, clause[match.end() :]
    return None


def _lone_items(turn: Turn) -> set[str]:
    """The set-valued attributes whose latest user turn in the thread gave one item:
    a bare correction right after it swaps that item ("I'm allergic to walnuts." -
    "Pecans, I mean.")."""
    seen: set[str] = set()
    lone: set[str] = set()
    for prior in reversed(turn.previous):
        if prior.role != "user":
            continue
        counts: dict[str, int] = {}
        for fact in prior.facts:
            if fact.subject == "user":
                counts[fact.attribute] = counts.get(fact.attribute, 0) + 1
        for attribute, count in counts.items():
            if attribute not in seen:
                seen.add(attribute)
                if count == 1:
                    lone.add(attribute)
    return lone


def _correction(sentence: str, turn: Turn) -> list[Candidate] | None:
    """The value a bare correction gives, and the attribute it corrects (for a set,
    the item it swaps: a removal and the new item)."""
    if not (correction_at(sentence) or _BARE_CUE.search(sentence)):
        return None
    stated = list(just_stated(turn))
    clauses = [c for c in _CLAUSE.split(sentence) if c.strip()]
    for clause in reversed(clauses):
        if _NEGATED_CLAUSE.match(clause) or _SPELLING.search(clause):
            continue  # "..., not May 3" names the wrong value; "with an h" spells it
        if _REPLY.search(clause):
            return None
        named = _named(clause)
        if named is not None:
            attribute, rest = named
            value = _bare_value(rest)
            # Words after a label ("my job is stressful") are a value only for an
            # attribute the thread just stated; a date or an amount is one anyway.
            said = attribute.name in {f.attribute for f in stated} or shape(value) != "words"
            if value and said and fits(attribute.value_type, value):
                return [_made(attribute.name, value, "correct", BARE_CONFIDENCE)]
            continue
        value = _bare_value(clause)
        if not value:
            continue
        lone = _lone_items(turn)
        for fact in stated:
            known = by_name(fact.attribute)
            if known is None or (known.multi_valued and fact.attribute not in lone):
                continue  # a set takes items; a bare value does not say which it replaces
            if fact.value.casefold() != value.casefold() and fits(known.value_type, value):
                if known.multi_valued:
                    # The one item its turn gave is swapped; the rest of the set stays.
                    return [
                        _made(fact.attribute, fact.value, "remove", BARE_CONFIDENCE),
                        _made(fact.attribute, value, "state", BARE_CONFIDENCE),
                    ]
                return [_made(fact.attribute, value, "correct", BARE_CONFIDENCE)]
        return None  # the value fits nothing just stated: no guess
    return None


def _made(attribute: str, value: str, change: str, confidence: float) -> Candidate:
    return Candidate(
        subject="user",
        attribute=attribute,
        value=value,
        kind="fact",
        confidence=confidence,
        importance=_IMPORTANCE,
        change=change,  # type: ignore[arg-type]  # one of CHANGES, checked by Candidate
    )


def _me_too(turn: Turn, reread: Reread) -> list[Candidate]:
    """What the other speaker's last turn said of themselves, as the user's."""
    other = next((p for p in reversed(turn.previous) if p.role != "user"), None)
    if other is None:
        return []
    return [
        c
        for c in reread(other.text)
        if c.kind == "fact" and c.subject == "user" and c.change == "state"
    ]


def in_thread(
    turn: Turn, found: Sequence[Candidate], reread: Reread | None = None
) -> tuple[Candidate, ...]:
    """``found`` (the rules' candidates of ``turn``) with what the turn says only in
    its conversation: bare corrections, "me too", "not anymore", "that changed"
    (module docstring). A turn that is not the user's is returned as it is."""
    if turn.role != "user":
        return tuple(found)
    gone = ended(turn)
    over = {(c.attribute, c.value.casefold()) for c in gone}
    # A single value ended (a diet, a job) is no new value of another attribute either:
    # "Quit paleo" ends a diet, it names no food avoided. A set's item ended may be
    # (我不再喜欢喝咖啡了: a dislike; 我戒了奶茶: a habit given up).
    ended_single = {v for a, v in over if a.casefold() not in MULTI_VALUED}
    # A value named as over is not stated again by the same turn ("生酮停了").
    made = [
        c
        for c in found
        if c.change == "remove"
        or (
            (c.attribute, c.value.casefold()) not in over and c.value.casefold() not in ended_single
        )
    ]
    # A removal the rules read says what it means too; one of a value ended does not
    # say what replaces it ("Sorry, I meant Nestlé - Unilever was my last job").
    stated = any(c.kind == "fact" for c in made)
    made += gone + _switched(turn, made, gone)
    last = next(just_stated(turn), None)
    for sentence in split_sentences(fold_quotes(turn.text)):
        if _is_question(sentence) or HYPOTHETICAL.search(sentence):
            continue
        if stated:
            continue
        if turn.previous and _ME_TOO.match(sentence) and reread is not None:
            made += _me_too(turn, reread)
            continue
        if last is not None and _NOT_ANYMORE.match(sentence):
            made.append(_made(last.attribute, last.value, "remove", BARE_CONFIDENCE))
            continue
        if last is not None and _CHANGED.match(sentence):
            made.append(_made(last.attribute, sentence.strip(), "dispute", DISPUTE_CONFIDENCE))
            continue
        # A correction naming its attribute by label needs no thread ("不对，预算应该是
        # 一万元。"); a bare one corrects what the thread stated last.
        correction = _correction(sentence, turn)
        if correction is not None:
            made += correction
    return _unique(made)


def with_disputes(turn: Turn, found: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """``found`` (any extractor's candidates of ``turn``) with the ``dispute``
    candidates of its change cues that no rule turned into a value (:func:`disputes`),
    sentence by sentence; the user's turns only."""
    if turn.role != "user" or not _CHANGE_CUE.search(turn.text):
        return tuple(found)
    made = list(found)
    for sentence in split_sentences(fold_quotes(turn.text)):
        made += disputes(sentence, made)
    return _unique(made)


def disputes(sentence: str, found: Sequence[Candidate]) -> list[Candidate]:
    """``dispute`` candidates for the topics a change cue of ``sentence`` puts in doubt
    without a new value ("我搬家了" -> city, address; "I changed jobs" -> job,
    employer): none for a topic of which ``found`` already holds a fact, none for a
    change not made ("I haven't moved", 还没搬家, "I might change jobs") or someone
    else's."""
    cue = _CHANGE_CUE.search(sentence)
    if cue is None or _is_question(sentence) or HYPOTHETICAL.search(sentence):
        return []
    if _NOT_DONE.search(sentence[: cue.start()]) or _THIRD_PERSON.search(sentence):
        return []
    topic = [a for a in ATTRIBUTES if a.states.search(sentence)]
    covered = {c.attribute for c in found if c.kind == "fact"}
    if not topic or covered & {a.name for a in topic}:
        return []
    return [
        _made(a.name, sentence.strip()[:200], "dispute", DISPUTE_CONFIDENCE)
        for a in topic
        if not a.multi_valued
    ]


def _unique(found: Sequence[Candidate]) -> tuple[Candidate, ...]:
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Candidate] = []
    for c in found:
        key = (c.subject, c.attribute, c.value, c.change)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return tuple(out)
