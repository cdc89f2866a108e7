"""The bilingual evaluation set, generated deterministically from hand-written material.

``python -m memstrata.eval.bilingual_data`` writes
``memstrata/eval/data/bilingual/bilingual.json`` (committed, so it can be read
without running anything; a test checks the file equals :func:`render`).

What it holds: companion-style chats between a user and an assistant, one
conversation per persona, nine sessions on different days each. Half the
conversations are wholly Chinese; the other half mix Chinese and English within
the conversation and within sentences, with two wholly English sessions. Facts
(:mod:`memstrata.eval.bilingual_slots`) are told once, some changed later (a move,
a change of mind, a correction); every session also carries one day-bound event
(a plan, an outing, a meal, a film or book recommendation) and chit-chat
(:mod:`memstrata.eval.bilingual_chat`). Questions, asked a day or two after the
last session, come in six categories: ``single-hop``, ``multi-hop`` (two facts),
``temporal`` (names a date, a weekday or a relative day), ``knowledge-update``
(evidence: the current value's turn; ``superseded``: the replaced one),
``cross-language`` (asked in the other language than its evidence) and
``unanswerable`` (never said: no evidence).

Held back: whole conversations are ``dev`` (10) or ``test`` (14); the two splits
have different personas and draw disjoint halves of every phrasing list (dev the
even-indexed entries, test the odd-indexed ones). Tune on dev only.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from memstrata.eval.bilingual_chat import (
    ACKS,
    EVENT_ACKS,
    EVENTS,
    FAREWELLS,
    FILLERS,
    GREETINGS,
    MONTHS_EN,
    NEVER_SAID,
    PERSONAS,
    TITLE_ZH,
    TWO_FACTS,
    UPDATE_ACKS,
    WEEKDAYS_EN,
    WEEKDAYS_ZH,
    Event,
)
from memstrata.eval.bilingual_life import LIFE_SLOTS
from memstrata.eval.bilingual_slots import PERSON_SLOTS, Slot
from memstrata.language import detect_language

SEED = 20261203
VERSION = 1
SPLITS = ("dev", "test")
SESSIONS = 9
FACT_SLOTS = 11
UPDATED_SLOTS = 3
EVENT_KINDS = 3
CATEGORIES = (
    "single-hop",
    "multi-hop",
    "temporal",
    "knowledge-update",
    "cross-language",
    "unanswerable",
)
PER_CONVERSATION = {
    "cross-language": 3,
    "single-hop": 4,
    "multi-hop": 3,
    "temporal": 4,
    "knowledge-update": UPDATED_SLOTS,
    "unanswerable": 4,
}
SLOTS = (*PERSON_SLOTS, *LIFE_SLOTS)
DATA_FILE = Path(__file__).resolve().parent / "data" / "bilingual" / "bilingual.json"

T = TypeVar("T")


def half(items: Sequence[T], split: str) -> Sequence[T]:
    """The split's half of a phrasing list: dev the even-indexed entries, test the
    odd-indexed ones (a one-entry list serves both)."""
    if len(items) < 2:
        return items
    return items[0::2] if split == "dev" else items[1::2]


class _Conversation:
    """Builds one conversation: sessions first, then the questions over them."""

    def __init__(self, split: str, index: int, persona: tuple[str, str]) -> None:
        self.split = split
        self.id = f"{split}-{index + 1:02d}"
        self.rng = random.Random(f"{SEED}:{self.id}")
        self.mode = "zh" if index % 2 == 0 else "mixed"
        self.persona = persona
        self.sessions: list[dict[str, Any]] = []
        self.turn_lang: dict[str, str] = {}
        # slot key -> (turn id, template language) of the statement now current
        self.current: dict[str, tuple[str, str]] = {}
        self.superseded: dict[str, list[str]] = {}
        self.values: dict[str, tuple[str, str]] = {}
        self.events: list[dict[str, Any]] = []

    # --- helpers ---------------------------------------------------------------------

    def pick(self, items: Sequence[T]) -> T:
        return self.rng.choice(list(half(items, self.split)))

    def user_lang(self, session_lang: str) -> str:
        if session_lang != "mix":
            return session_lang
        return self.rng.choices(("zh", "en", "mix"), weights=(35, 15, 50))[0]

    def assistant_lang(self, session_lang: str) -> str:
        if session_lang != "mix":
            return session_lang
        return self.rng.choice(("zh", "mix"))

    def question_lang(self, evidence_lang: str) -> str:
        if self.mode == "zh":
            return "zh"
        # Mixed conversations ask in their evidence's language or mix the two.
        choices = {"mix": ("mix", "mix", "zh"), "zh": ("zh", "mix"), "en": ("en", "en", "mix")}
        return self.rng.choice(choices[evidence_lang])

    # --- sessions ----------------------------------------------------------------------

    def build(self) -> dict[str, Any]:
        rng = self.rng
        start = date(2025, 1 + rng.randrange(10), 1 + rng.randrange(20))
        days = [start]
        for _ in range(SESSIONS - 1):
            days.append(days[-1] + timedelta(days=rng.randint(1, 4)))
        if self.mode == "zh":
            langs = ["zh"] * SESSIONS
        else:
            english = set(rng.sample(range(1, SESSIONS), 2))
            langs = ["en" if i in english else "mix" for i in range(SESSIONS)]
        plan = self._plan(rng)
        for i, day in enumerate(days):
            self._session(i, day, langs[i], plan[i])
        self.asked_at = datetime.combine(
            days[-1] + timedelta(days=rng.randint(1, 2)), datetime.min.time(), UTC
        ) + timedelta(hours=9)
        questions = self._questions()
        name_zh, name_en = self.persona
        return {
            "id": self.id,
            "split": self.split,
            "language": self.mode,
            "user": {"zh": name_zh, "en": name_en},
            "asked_at": self.asked_at.isoformat(),
            "sessions": self.sessions,
            "questions": questions,
        }

    def _plan(self, rng: random.Random) -> list[list[tuple[str, Any]]]:
        """What each session carries: facts, updates, one event, chit-chat."""
        chosen = rng.sample(list(SLOTS), FACT_SLOTS)
        self.chosen = chosen
        updatable = [s for s in chosen if s.update]
        self.updated = rng.sample(updatable, UPDATED_SLOTS)
        chosen_keys = {s.key for s in chosen}
        self.never_said = [s for s in SLOTS if s.key not in chosen_keys and s.never_said_ok]
        plan: list[list[tuple[str, Any]]] = [[] for _ in range(SESSIONS)]
        for slot in chosen:
            if slot in self.updated:
                first = rng.randrange(0, 4)
                plan[first].append(("fact", slot))
                plan[rng.randrange(first + 2, SESSIONS)].append(("update", slot))
            else:
                plan[rng.randrange(0, 7)].append(("fact", slot))
            self._choose_value(slot)
        kinds = rng.sample(list(EVENTS), EVENT_KINDS)
        order = kinds * (SESSIONS // EVENT_KINDS)
        rng.shuffle(order)
        used: dict[str, set[int]] = {}
        for i, event in enumerate(order):
            taken = used.setdefault(event.key, set())
            free = [j for j in range(len(event.values)) if j not in taken]
            count = 2 if event.by == "assistant" else 1
            picks = rng.sample(free, count)
            taken.update(picks)
            plan[i].append(("event", (event, picks)))
        for items in plan:
            items.extend(("filler", None) for _ in range(rng.randint(2, 3)))
            rng.shuffle(items)
        return plan

    def _choose_value(self, slot: Slot) -> None:
        rng = self.rng
        avoid = {v for k, v in self.values.items() if k.split(":")[0].endswith("city")}
        pool = (
            [v for v in slot.values if v not in avoid]
            if slot.key.endswith("city")
            else list(slot.values)
        )
        old = rng.choice(pool)
        self.values[slot.key] = old
        if slot in self.updated:
            new = rng.choice([v for v in pool if v != old])
            self.values[f"{slot.key}:new"] = new

    def _session(self, i: int, day: date, lang: str, items: list[tuple[str, Any]]) -> None:
        rng = self.rng
        at = datetime.combine(day, datetime.min.time(), UTC) + timedelta(
            hours=rng.choice((10, 11, 12, 13)), minutes=rng.randrange(0, 50)
        )
        sid = f"{self.id}-s{i + 1:02d}"
        turns: list[dict[str, Any]] = []

        def add(speaker: str, text: str) -> str:
            tid = f"{sid}-t{len(turns) + 1:02d}"
            language = detect_language(text)
            turns.append({"id": tid, "speaker": speaker, "text": text, "language": language})
            self.turn_lang[tid] = language
            return tid

        name_zh, name_en = self.persona
        greet_lang = "zh" if lang == "zh" else lang
        user, reply = self.pick(GREETINGS[greet_lang])
        add("user", user)
        add("assistant", reply.format(name=name_en if lang == "en" else name_zh))
        for kind, item in items:
            if kind == "filler":
                flang = self.user_lang(lang)
                user, reply = self.pick(FILLERS[flang])
                add("user", user)
                add("assistant", reply)
            elif kind in ("fact", "update"):
                self._fact(kind, item, lang, add)
            else:
                self._event(item, lang, day, add)
        user, reply = self.pick(FAREWELLS[lang])
        add("user", user)
        add("assistant", reply)
        self.sessions.append({"id": sid, "date": at.isoformat(), "language": lang, "turns": turns})

    def _fact(self, kind: str, slot: Slot, session_lang: str, add: Any) -> None:
        tlang = self.user_lang(session_lang)
        old = self.values[slot.key]
        if kind == "fact":
            value, template = old, self.pick(slot.say[tlang])
        else:
            value, template = self.values[f"{slot.key}:new"], self.pick(slot.update[tlang])
        text = _fill(template, tlang, value=value, old=old)
        tid = add("user", text)
        alang = self.assistant_lang(session_lang)
        add("assistant", self.pick((ACKS if kind == "fact" else UPDATE_ACKS)[alang]))
        if kind == "update":
            self.superseded[slot.key] = [self.current[slot.key][0]]
        self.current[slot.key] = (tid, tlang)

    def _event(self, item: tuple[Event, list[int]], session_lang: str, day: date, add: Any) -> None:
        event, picks = item
        tlang = self.user_lang(session_lang)
        if event.by == "user":
            value = event.values[picks[0]]
            tid = add("user", _fill(self.pick(event.say[tlang]), tlang, value=value))
            add("assistant", self.pick(EVENT_ACKS[self.assistant_lang(session_lang)]))
            answer = {"zh": value[0], "en": value[1]}
        else:
            assert event.ask is not None
            add("user", self.pick(event.ask[tlang]))
            alang = self.assistant_lang(session_lang)
            titles = [event.values[p] for p in picks]
            if alang == "en":
                a, b = (t[1] for t in titles)
            else:
                a, b = (TITLE_ZH.format(t[0]) for t in titles)
            tid = add("assistant", self.pick(event.say[alang]).format(a=a, b=b))
            tlang = alang
            answer = {
                "zh": "、".join(TITLE_ZH.format(t[0]) for t in titles),
                "en": ", ".join(t[1] for t in titles),
            }
        self.events.append(
            {"event": event, "turn": tid, "lang": tlang, "day": day, "answer": answer}
        )

    # --- questions ---------------------------------------------------------------------

    def _questions(self) -> list[dict[str, Any]]:
        rng = self.rng
        out: list[dict[str, Any]] = []

        def add(
            category: str,
            text: str,
            evidence: list[str],
            answer: str | None,
            superseded: Sequence[str] = (),
        ) -> None:
            out.append(
                {
                    "id": f"{self.id}-q{len(out) + 1:02d}",
                    "question": text,
                    "language": detect_language(text),
                    "category": category,
                    "evidence": evidence,
                    "superseded": list(superseded),
                    "answer": answer,
                }
            )

        stable = [s for s in self.chosen if s not in self.updated]
        rng.shuffle(stable)
        # cross-language: the evidence is wholly one language, the question the other
        crossed: list[Slot] = []
        for slot in stable:
            tid, _ = self.current[slot.key]
            if len(crossed) < PER_CONVERSATION["cross-language"] and self.turn_lang[tid] in (
                "zh",
                "en",
            ):
                qlang = "en" if self.turn_lang[tid] == "zh" else "zh"
                text = self.pick(slot.ask[qlang])
                if detect_language(text) == qlang:
                    crossed.append(slot)
                    add("cross-language", text, [tid], self._value(slot, qlang))
        singles = [s for s in stable if s not in crossed][: PER_CONVERSATION["single-hop"]]
        for slot in singles:
            tid, tlang = self.current[slot.key]
            qlang = self.question_lang(tlang)
            add("single-hop", self.pick(slot.ask[qlang]), [tid], self._value(slot, qlang))
        pairs = list(self.chosen)
        rng.shuffle(pairs)
        for a, b in zip(pairs[0::2], pairs[1::2], strict=False):
            if sum(1 for q in out if q["category"] == "multi-hop") >= PER_CONVERSATION["multi-hop"]:
                break
            qlang = "zh" if self.mode == "zh" else rng.choice(("zh", "en", "mix"))
            frame = self.pick(TWO_FACTS[qlang])
            part_a = a.part["en" if qlang == "en" else "zh"]
            part_b = b.part["zh" if qlang == "zh" else "en"]
            text = frame.format(a=part_a, b=part_b)
            alang = "en" if qlang == "en" else "zh"
            add(
                "multi-hop",
                text,
                [self.current[a.key][0], self.current[b.key][0]],
                f"{self._value(a, alang)}; {self._value(b, alang)}",
                [*self.superseded.get(a.key, ()), *self.superseded.get(b.key, ())],
            )
        self._temporal(add)
        for slot in self.updated:
            tid, tlang = self.current[slot.key]
            qlang = self.question_lang(tlang)
            add(
                "knowledge-update",
                self.pick(slot.ask_now[qlang]),
                [tid],
                self._value(slot, qlang),
                self.superseded[slot.key],
            )
        qlangs = ["zh", "zh", "en", "en"] if self.mode == "zh" else ["zh", "en", "mix", "mix"]
        rng.shuffle(qlangs)
        near = rng.sample(self.never_said, min(2, len(self.never_said)))
        asked: set[str] = set()
        for n, qlang in enumerate(qlangs):
            if n < len(near):
                text = self.pick(near[n].ask[qlang])
            else:
                fresh = [t for t in half(NEVER_SAID[qlang], self.split) if t not in asked]
                text = self.rng.choice(fresh)
            asked.add(text)
            add("unanswerable", text, [], None)
        return out

    def _temporal(self, add: Any) -> None:
        rng = self.rng
        events = list(self.events)
        rng.shuffle(events)
        # One question per event kind first, then more from the rest.
        by_kind: dict[str, dict[str, Any]] = {}
        for e in events:
            by_kind.setdefault(e["event"].key, e)
        first = list(by_kind.values())
        rest = [e for e in events if e not in first]
        chosen = (first + rest)[: PER_CONVERSATION["temporal"]]
        for item in chosen:
            event: Event = item["event"]
            qlang = self.question_lang(item["lang"])
            same_kind = [e["day"] for e in self.events if e["event"].key == event.key]
            when = self._when(item["day"], same_kind, qlang)
            template = self.pick(event.question[qlang])
            text = template.format(when=when)
            text = text[0].upper() + text[1:]
            answer = item["answer"]["en" if qlang == "en" else "zh"]
            add("temporal", text, [item["turn"]], answer)

    def _when(self, day: date, same_kind: list[date], qlang: str) -> str:
        """The day as a question names it: a date, or (when it is unambiguous) a
        relative day or last week's weekday, in the question's language."""
        ask = self.asked_at.date()
        delta = (ask - day).days
        relative: list[tuple[str, str]] = []
        if delta == 1:
            relative.append(("昨天", "yesterday"))
        if delta == 2:
            relative.append(("前天", "the day before yesterday"))
        last_week = ask.isocalendar()[1] - 1 == day.isocalendar()[1] and ask.year == day.year
        if last_week and ask.weekday() < day.weekday():
            wd = day.weekday()
            relative.append((f"上周{WEEKDAYS_ZH[wd]}", f"last {WEEKDAYS_EN[wd]}"))
            others = [d for d in same_kind if d != day]
            weekend = {day - timedelta(days=wd - 5), day - timedelta(days=wd - 6)}
            if wd >= 5 and not any(d in weekend for d in others):
                relative.append(("上周末", "last weekend"))
        if relative and self.rng.random() < 0.5:
            zh, en = self.rng.choice(relative)
        else:
            zh = self.rng.choice((f"{day.month}月{day.day}号", f"{day.month}月{day.day}日"))
            en = f"on {MONTHS_EN[day.month - 1]} {day.day}"
        return en if qlang == "en" else zh

    def _value(self, slot: Slot, qlang: str) -> str:
        value = self.values.get(f"{slot.key}:new", self.values[slot.key])
        return value[1] if qlang == "en" else value[0]


def _fill(
    template: str, lang: str, *, value: tuple[str, str], old: tuple[str, str] | None = None
) -> str:
    """A template with its value in the template's language (``{ve}``: English)."""
    zh, en = value
    old_zh, old_en = old or value
    text = template.format(
        v=en if lang == "en" else zh,
        ve=en,
        old=old_en if lang == "en" else old_zh,
        olde=old_en,
    )
    return text[0].upper() + text[1:] if lang == "en" else text


def generate() -> dict[str, Any]:
    """The whole data set as one JSON-ready dict (the same on every call)."""
    conversations = [
        _Conversation(split, index, persona).build()
        for split in SPLITS
        for index, persona in enumerate(PERSONAS[split])
    ]
    return {
        "name": "memstrata-bilingual",
        "version": VERSION,
        "seed": SEED,
        "generator": "memstrata.eval.bilingual_data",
        "categories": list(CATEGORIES),
        "splits": {s: [c["id"] for c in conversations if c["split"] == s] for s in SPLITS},
        "conversations": conversations,
    }


def render() -> str:
    """The data set as the committed file's text."""
    return json.dumps(generate(), ensure_ascii=False, indent=1) + "\n"


def main() -> None:  # pragma: no cover - regenerates the committed file
    DATA_FILE.parent.mkdir(parents=True, exist_ok=True)
    DATA_FILE.write_text(render(), encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    main()
