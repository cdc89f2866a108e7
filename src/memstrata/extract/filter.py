"""The "worth remembering" filter (docs/architecture.md, "The writer"): small talk and
repeats never reach L3.

A turn is dropped, with a reason, when it is

* ``empty``: nothing but punctuation, emoji or whitespace;
* ``system``: a system prompt (instructions to the model, not facts about the user);
* ``greeting`` / ``thanks`` / ``acknowledgement``: made only of such phrases
  ("ok", "thanks!", "got it", 好的, 谢谢, 嗯);
* ``closing``: other small talk (:mod:`memstrata.extract.smalltalk`: "Thanks, that's
  all for today.", "Take care, bye!", 谢谢，今天就到这里吧) - still stored as an
  episode, marked so that it ranks low, but no fact is read from it;
* ``question``: every sentence is a question, it carries no id, amount or date, and
  the probe extractor finds nothing in it;
* ``repeat``: the same normalized text from the same user was kept recently (a bounded
  LRU of content hashes per user, optionally limited to a time window).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from memstrata.extract.candidates import Turn
from memstrata.extract.patterns import CN_QUESTION_END, QUESTION_START
from memstrata.extract.protocol import Extractor
from memstrata.extract.rules import RuleExtractor
from memstrata.extract.smalltalk import is_small_talk
from memstrata.extract.text import fold_quotes, normal_form, split_sentences
from memstrata.extract.verbatim import find_extras
from memstrata.hashing import sha256_hex

DropReason = Literal[
    "empty", "system", "greeting", "thanks", "acknowledgement", "closing", "question", "repeat"
]

_PHRASES: dict[DropReason, str] = {
    "greeting": (
        "hi|hello|hey|hiya|yo|good morning|good afternoon|good evening|good night|morning|"
        "evening|bye|goodbye|bye bye|see you|see ya|later|there|everyone|all|你好|您好|嗨|"
        "哈喽|早上好|早安|午安|下午好|晚上好|晚安|再见|拜拜|早"
    ),
    "thanks": (
        "thanks|thank you|thx|ty|tysm|much appreciated|appreciate it|many thanks|thanks a lot|"
        "so much|very much|a lot|谢谢|多谢|感谢|谢啦|谢了|辛苦了|非常感谢|太感谢了|您|你"
    ),
    "acknowledgement": (
        "ok|okay|k|kk|sure|got it|great|cool|nice|alright|all right|fine|yes|yeah|yep|yup|no|"
        "nope|right|sounds good|perfect|understood|noted|i see|makes sense|awesome|lol|haha|"
        "ha|lmao|hmm|oh|ah|well|sure thing|no problem|np|will do|good|好的|好滴|好|嗯|哦|噢|"
        "收到|明白|明白了|知道了|好吧|行|可以|没问题|对|是的|哈哈|哈|呵呵|嘿嘿|了解|懂了|ok的|"
        "啊|呢|了|吧|呀"
    ),
}
# Longest first, so "thank you" is read before "thank" could be, and "好的" before "好".
_LEXICON: tuple[tuple[str, DropReason], ...] = tuple(
    sorted(
        ((phrase, reason) for reason, words in _PHRASES.items() for phrase in words.split("|")),
        key=lambda pair: -len(pair[0]),
    )
)
_CN_QUESTION_WORDS = re.compile(r"什么|怎么|为什么|哪|几|多少|是不是|能不能|可不可以|有没有")
_MAX_SMALL_TALK_CHARS = 80
_PRIORITY: tuple[DropReason, ...] = ("thanks", "greeting", "acknowledgement")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The filter's answer; truthy when the turn is worth remembering."""

    keep: bool
    reason: DropReason | None = None

    def __bool__(self) -> bool:
        return self.keep


KEEP = Verdict(True)


def small_talk_reason(text: str) -> DropReason | None:
    """The small-talk category when ``text`` is made only of such phrases, else None.

    Greedy longest-phrase tokenization (linear, no backtracking); if any phrase is a
    thank-you the category is ``thanks``, else ``greeting`` before ``acknowledgement``.
    """
    norm = normal_form(text)
    if len(norm) > _MAX_SMALL_TALK_CHARS:
        return None
    seen: set[DropReason] = set()
    position = 0
    while position < len(norm):
        if norm[position] == " ":
            position += 1
            continue
        for phrase, reason in _LEXICON:
            end = position + len(phrase)
            # ASCII phrases must end on a word boundary ("hi" is not "history").
            if not norm.startswith(phrase, position):
                continue
            if not phrase.isascii() or end == len(norm) or not norm[end].isalnum():
                seen.add(reason)
                position = end
                break
        else:
            return None
    return next((reason for reason in _PRIORITY if reason in seen), None)


def is_pure_question(text: str) -> bool:
    """Every sentence is a question and the text holds no id, amount or absolute date."""
    sentences = split_sentences(fold_quotes(text))
    if not sentences or any(not _is_question(sentence) for sentence in sentences):
        return False
    # "Where is ORD-2024-000123?" carries an id worth keeping; "today" alone does not.
    informative = [
        value
        for label, value in find_extras(text)
        if label != "date" or any(char.isdigit() for char in value)
    ]
    return not informative


def _is_question(sentence: str) -> bool:
    stripped = sentence.strip()
    if stripped.isascii():
        # "What time is it" counts without its "?"; "Do it now." is an instruction.
        starts_like_one = QUESTION_START.match(stripped) and not stripped.endswith((".", "!"))
        return stripped.endswith("?") or bool(starts_like_one)
    return bool(CN_QUESTION_END.search(stripped) or _CN_QUESTION_WORDS.search(stripped))


class WorthFilter:
    """Decides whether a turn is worth sending to extraction.

    Thread-safe. ``max_per_user`` bounds the remembered hashes of each user and
    ``max_users`` the number of users tracked (least recently seen evicted first).
    A repeat only counts when the earlier copy was kept within ``repeat_window`` of this
    turn's ``observed_at`` (``None``: any time while it is still in the LRU).
    ``probe`` (the rule extractor by default) rescues questions that still state
    something: "I live in Hangzhou, any tips?" is kept.
    """

    def __init__(
        self,
        *,
        max_per_user: int = 512,
        max_users: int = 10_000,
        repeat_window: timedelta | None = timedelta(days=7),
        probe: Extractor | None = None,
    ) -> None:
        if max_per_user < 1 or max_users < 1:
            raise ValueError("max_per_user and max_users: must be >= 1")
        if repeat_window is not None and repeat_window <= timedelta(0):
            raise ValueError("repeat_window: must be positive or None")
        self._max_per_user = max_per_user
        self._max_users = max_users
        self._window = repeat_window
        self._probe: Extractor = probe or RuleExtractor()
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, str], OrderedDict[str, datetime]] = OrderedDict()

    def worth_remembering(self, turn: Turn) -> Verdict:
        """Whether ``turn`` should be extracted; a kept turn is recorded for repeats."""
        if turn.role == "system":
            return Verdict(False, "system")
        if not normal_form(turn.text):
            return Verdict(False, "empty")
        reason = small_talk_reason(turn.text)
        if reason is not None:
            return Verdict(False, reason)
        if is_small_talk(turn.text):
            # "谢谢，今天就到这里吧" would otherwise become a commitment "for today"
            return Verdict(False, "closing")
        if is_pure_question(turn.text) and not self._probe.extract(turn):
            return Verdict(False, "question")
        if self._is_repeat(turn):
            return Verdict(False, "repeat")
        return KEEP

    def _is_repeat(self, turn: Turn) -> bool:
        key = (turn.tenant, turn.user)
        digest = sha256_hex(normal_form(turn.text))
        with self._lock:
            hashes = self._seen.get(key)
            if hashes is None:
                hashes = self._seen[key] = OrderedDict()
                if len(self._seen) > self._max_users:
                    self._seen.popitem(last=False)
            self._seen.move_to_end(key)
            previous = hashes.get(digest)
            recent = previous is not None and (
                self._window is None or abs(turn.observed_at - previous) <= self._window
            )
            if recent:
                hashes.move_to_end(digest)
                return True
            hashes[digest] = turn.observed_at
            hashes.move_to_end(digest)
            if len(hashes) > self._max_per_user:
                hashes.popitem(last=False)
            return False
