"""Fact extraction measured on a labeled set of statements (``memstrata eval extraction``).

The set
-------
``memstrata/extract/data/statements.jsonl`` (package data) holds one JSON object per
line, in English (``"lang": "en"``), Chinese (``"zh"``) or both in one text
(``"mixed"``), each in the ``dev`` split (rules may be tuned on it) or the ``test``
split (written before any rule was changed, never tuned on). Dev rows numbered from 101
(``en-move-101``) are a later batch, written after the rules and scored once, blind,
before joining dev (their ``note`` says so); rows numbered from 201 were added while the
rules were grown for issue 24.

``memstrata/extract/data/heldback.jsonl`` is the *held-back* split (``"split":
"heldback"``): everyday phrasings of the attributes users state most (home and delivery
addresses, city, work, diet, allergies, budget, family, pets, contact, schedule,
language, plans), non-facts and supersede sequences, written and committed before the
rules were changed for it (see ``git log`` of the file) and never tuned on. It is
scored and reported apart from dev and test, so its numbers estimate how the rules do
on phrasings nobody fitted them to. Its labels follow the conventions below, except
that its author labeled a plan ("I'm planning a trip to Japan") as a ``plan`` event
where this set calls it a ``commitment``: those rows count as misses, as written.

A *statement* row is::

    {"id": "en-move-003", "lang": "en", "split": "dev", "category": "move",
     "role": "user", "text": "...", "facts": [{"subject": "user", "attribute": "city",
     "value": "Chengdu", "kind": "fact"}], "note": "optional"}

and a *sequence* row (category ``sequence``) replaces ``text``/``facts`` with
``"sequence": ["I live in Hangzhou.", "I moved to Chengdu last month."]`` and
``"final": {"subject": "user", "attribute": "city", "value": "Chengdu"}`` (or
``"values": [...]`` for a multi-valued attribute). Unknown keys are errors, so a typo
never silently drops a label; a malformed row raises
:class:`~memstrata.errors.DatasetError` naming the file, the line, the row id and the
field.

Labeling conventions: facts about the user have subject ``"user"`` (an assistant's
own commitments ``"assistant"``); what other people do or like is no fact about the
user; the value is the shortest phrase naming the thing as the text writes it (no
article, no "now"/"anymore"), except ``contact_channel`` (a canonical channel name),
``marital_status`` (married / single / divorced, 已婚 / 单身 / 离婚), ``age`` and
``children_count`` (digits). Events (decision, commitment, order, payment, refund)
are labeled with a key phrase: what was decided or promised, the order id, the amount.
Retractions are labeled as the write path should keep them: a retracted liking is a
``dislikes`` fact, a habit given up an ``avoids`` fact naming what is no longer done
("I no longer eat meat" -> "eat meat", 我戒烟了 -> 烟), and "I don't live in X
anymore" alone is no fact (the new city, once said, supersedes the old one).

When a prediction matches a label
---------------------------------
A predicted item and a labeled one match when all of these hold:

* ``subject`` and ``attribute`` are equal after trimming and casefolding;
* ``kind`` is equal;
* facts: the values have the same :func:`value_key` (NFKC, casefold, one leading
  English article "a" / "an" / "the" dropped, every punctuation character -- Unicode
  category P -- and all whitespace removed; currency symbols are kept, so ``$300``
  is not ``300``), taken of the registry's normal form for the attribute's value type
  (:func:`fact_key`: the avoided food "eat pork" is "pork");
* events: the predicted value describes the whole event (its sentence or clause), so
  the labeled key phrase's :func:`value_key` must occur inside the predicted value's.

Matching is one-to-one within a row: labels are taken in order and each takes the
first unmatched prediction it matches.

What is scored
--------------
Facts and events together: ``precision`` = matched predictions / predictions and
``recall`` = matched labels / labels, over every statement row of the split (rows
labeled with no fact count through their false positives). Per attribute, precision
is grouped by the predicted attribute and recall by the labeled one. Sequences are
scored apart as *supersede accuracy*: their texts are extracted in order and each fact
applied to its ``(subject, attribute)`` slot -- a multi-valued attribute
(``memstrata.config.DEFAULT_MULTI_VALUED``) accumulates its values as a set,
any other is replaced by the later value; as in the write path, an explicit correction
replaces a set, a removal ("not peanuts", 我不再对花生过敏) takes its value out and a
``dislikes`` value leaves ``likes``; events are ignored -- and a sequence is
correct when the slot ends holding exactly the labeled value(s) (compared by
:func:`fact_key`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast

from rich.console import Console
from rich.table import Table

from memstrata.attributes import normal_value
from memstrata.config import DEFAULT_MULTI_VALUED
from memstrata.errors import (
    DatasetError,
    ExtractionError,
    ExtractionUnavailableError,
    ValidationError,
)
from memstrata.extract.candidates import (
    MAX_PREVIOUS_TURNS,
    ROLES,
    UNIT_KINDS,
    Candidate,
    Change,
    PriorFact,
    PriorTurn,
    Role,
    Turn,
    UnitKind,
)
from memstrata.extract.protocol import Extractor
from memstrata.memory.versioning import item_key

Split = Literal["dev", "dev2", "test", "heldback", "blind"]
SPLITS: tuple[Split, ...] = ("dev", "dev2", "test", "heldback", "blind")
SPLIT_CHOICES = ("dev", "dev2", "test", "heldback", "blind", "all")
TUNED_SPLITS: tuple[Split, ...] = ("dev", "dev2")
"""The splits the rules may be tuned on (``dev2``: rows written for issue 32 by someone
who had read neither the rules nor the sets, ids ``d2-``); ``test``, ``heldback`` and
``blind`` never are."""
LANGS = ("en", "zh", "mixed")
CATEGORIES = (
    "profile",
    "preference",
    "multi",
    "move",
    "correction",
    "contact",
    "health",
    "family",
    "work",
    "commitment",
    "transaction",
    "budget",
    "address",
    "none",
    "sequence",
)
"""Every category the set must cover; ``sequence`` rows are the supersede cases."""
TARGET_PRECISION = 0.95
TARGET_RECALL = 0.85
OBSERVED_AT = datetime(2025, 3, 25, 10, 30, tzinfo=UTC)
"""The time every evaluated turn is observed at (relative dates resolve against it)."""
PACKAGED_NAME = "statements.jsonl"
HELDBACK_NAME = "heldback.jsonl"
"""The held-back split, a file of its own so its history shows it predates the rules."""
BLIND_NAME = "blind.jsonl"
"""The blind split (issue 32): written by someone who had read neither the rules nor
the other sets, committed before the rules were changed for it."""
_OWN_FILES: tuple[tuple[str, Split], ...] = ((HELDBACK_NAME, "heldback"), (BLIND_NAME, "blind"))

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-@]{0,127}$")
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.IGNORECASE)
_STATEMENT_KEYS = frozenset({"id", "lang", "split", "category", "role", "text", "facts", "note"})
_SEQUENCE_KEYS = frozenset(
    {"id", "lang", "split", "category", "role", "sequence", "final", "old", "note"}
)
_ITEM_KEYS = frozenset({"subject", "attribute", "value", "kind"})
_FINAL_KEYS = frozenset({"subject", "attribute", "value", "values"})


# --- values -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    """One labeled or predicted fact or event (``change``: what a predicted fact does
    to its slot - states, corrects or removes a value; labels always state)."""

    subject: str
    attribute: str
    value: str
    kind: UnitKind
    change: Change = "state"


@dataclass(frozen=True, slots=True)
class Statement:
    """A labeled statement: one turn and every item it should yield, in any order."""

    id: str
    lang: str
    split: Split
    category: str
    role: Role
    text: str
    facts: tuple[Item, ...]
    note: str | None = None


@dataclass(frozen=True, slots=True)
class FinalSlot:
    """The expected content of one slot after a sequence: one value, or a set."""

    subject: str
    attribute: str
    values: tuple[str, ...]
    multi: bool


@dataclass(frozen=True, slots=True)
class SupersedeCase:
    """Turns applied in order, and what their slot must hold afterwards."""

    id: str
    lang: str
    split: Split
    category: str
    role: Role
    texts: tuple[str, ...]
    final: FinalSlot
    note: str | None = None
    old: tuple[str, ...] = ()
    """Earlier values no longer true: the product path must keep them only as history."""


@dataclass(frozen=True, slots=True)
class StatementSet:
    """A loaded, validated labeled set; ``source`` names where it was read from."""

    source: str
    statements: tuple[Statement, ...]
    sequences: tuple[SupersedeCase, ...]

    def select(self, split: Split) -> StatementSet:
        """The rows of one split."""
        return replace(
            self,
            statements=tuple(s for s in self.statements if s.split == split),
            sequences=tuple(s for s in self.sequences if s.split == split),
        )


# --- loading ----------------------------------------------------------------------------


class _Line:
    """Raises :class:`DatasetError` for one line of one file."""

    def __init__(self, source: str, number: int, ident: str | None) -> None:
        self.source = source
        self.number = number
        self.ident = ident

    def fail(self, field: str, reason: str) -> DatasetError:
        where = f"line {self.number}" + (f" ({self.ident})" if self.ident else "")
        return DatasetError(self.source, where, f"{field}: {reason}")

    def text(self, obj: Mapping[str, Any], key: str, at: str = "") -> str:
        field = f"{at}.{key}" if at else key
        if key not in obj:
            raise self.fail(field, "missing")
        value = obj[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(field, "must be a non-empty string")
        return value

    def choice(self, obj: Mapping[str, Any], key: str, choices: Iterable[str]) -> str:
        value = self.text(obj, key)
        allowed = tuple(choices)
        if value not in allowed:
            raise self.fail(key, f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    def keys(self, obj: Mapping[str, Any], allowed: frozenset[str], at: str = "") -> None:
        unknown = sorted(set(obj) - allowed)
        if unknown:
            raise self.fail(f"{at}.{unknown[0]}" if at else unknown[0], "unknown field")


def _parse_item(line: _Line, raw: Any, at: str) -> Item:
    if not isinstance(raw, dict):
        raise line.fail(at, f"must be an object, got {type(raw).__name__}")
    line.keys(raw, _ITEM_KEYS, at)
    kind = line.text(raw, "kind", at)
    if kind not in UNIT_KINDS:
        raise line.fail(f"{at}.kind", f"must be one of {', '.join(sorted(UNIT_KINDS))}")
    return Item(
        subject=line.text(raw, "subject", at).strip(),
        attribute=line.text(raw, "attribute", at).strip(),
        value=line.text(raw, "value", at),
        kind=cast(UnitKind, kind),
    )


def _parse_final(line: _Line, raw: Any) -> FinalSlot:
    if not isinstance(raw, dict):
        raise line.fail("final", f"must be an object, got {type(raw).__name__}")
    line.keys(raw, _FINAL_KEYS, "final")
    if ("value" in raw) == ("values" in raw):
        raise line.fail("final", "needs exactly one of 'value' and 'values'")
    if "value" in raw:
        values: tuple[str, ...] = (line.text(raw, "value", "final"),)
    else:
        listed = raw["values"]
        # An empty set is a slot every item was taken out of ("I can eat everything now").
        if not isinstance(listed, list):
            raise line.fail("final.values", "must be a list of strings")
        for index, value in enumerate(listed):
            if not isinstance(value, str) or not value.strip():
                raise line.fail(f"final.values[{index}]", "must be a non-empty string")
        values = tuple(listed)
    return FinalSlot(
        subject=line.text(raw, "subject", "final").strip(),
        attribute=line.text(raw, "attribute", "final").strip(),
        values=values,
        multi="values" in raw,
    )


def _parse_row(line: _Line, raw: Any) -> Statement | SupersedeCase:
    if not isinstance(raw, dict):
        raise line.fail("row", f"must be a JSON object, got {type(raw).__name__}")
    ident = line.text(raw, "id")
    if not _ID_RE.fullmatch(ident):
        raise line.fail("id", "must be 1-128 letters, digits, '_', '-', '.', '@'")
    line.ident = ident
    lang = line.choice(raw, "lang", LANGS)
    split = cast(Split, line.choice(raw, "split", SPLITS))
    category = line.choice(raw, "category", CATEGORIES)
    role = cast(Role, line.choice(raw, "role", sorted(ROLES)))
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise line.fail("note", "must be a string")
    if category == "sequence":
        line.keys(raw, _SEQUENCE_KEYS)
        texts = raw.get("sequence")
        if not isinstance(texts, list) or len(texts) < 2:
            raise line.fail("sequence", "must be a list of at least two texts")
        for index, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise line.fail(f"sequence[{index}]", "must be a non-empty string")
        old = raw.get("old", [])
        if not isinstance(old, list) or not all(isinstance(v, str) and v.strip() for v in old):
            raise line.fail("old", "must be a list of non-empty strings")
        return SupersedeCase(
            ident,
            lang,
            split,
            category,
            role,
            tuple(texts),
            _parse_final(line, raw.get("final")),
            note,
            tuple(old),
        )
    line.keys(raw, _STATEMENT_KEYS)
    text = line.text(raw, "text")
    facts = raw.get("facts")
    if not isinstance(facts, list):
        raise line.fail("facts", "must be a list (empty when nothing should be extracted)")
    items = tuple(_parse_item(line, fact, f"facts[{i}]") for i, fact in enumerate(facts))
    return Statement(ident, lang, split, category, role, text, items, note)


def parse_statements(lines: Iterable[str], source: str) -> StatementSet:
    """Validate JSONL ``lines`` into a :class:`StatementSet` (pure; blank lines skipped).

    Raises :class:`DatasetError` naming ``source``, the line number, the row id and
    the field of the first bad row; ids must be unique.
    """
    statements: list[Statement] = []
    sequences: list[SupersedeCase] = []
    seen: dict[str, int] = {}
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        line = _Line(source, number, None)
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise line.fail("row", f"not valid JSON: {exc}") from exc
        row = _parse_row(line, raw)
        if row.id in seen:
            raise line.fail("id", f"duplicate of line {seen[row.id]}")
        seen[row.id] = number
        if isinstance(row, SupersedeCase):
            sequences.append(row)
        else:
            statements.append(row)
    if not statements and not sequences:
        raise DatasetError(source, None, "holds no rows")
    return StatementSet(source, tuple(statements), tuple(sequences))


def _read(name: str, path: Path | None) -> str:
    try:
        if path is None:
            return (resources.files("memstrata.extract") / "data" / name).read_text("utf-8")
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(str(path or name), None, f"cannot read: {exc}") from exc


def load_statements(path: Path | None = None) -> StatementSet:
    """Load and validate a labeled set; ``None`` reads the packaged one.

    The packaged set is ``statements.jsonl`` (dev and test), ``heldback.jsonl`` (the
    held-back split) and ``blind.jsonl`` (the blind split), each of the latter two's
    rows saying its file's split, parsed as one set so ids stay unique across them.
    """
    if path is not None:
        return parse_statements(_read(str(path), path).splitlines(), str(path))
    main = parse_statements(_read(PACKAGED_NAME, None).splitlines(), PACKAGED_NAME)
    ids = {row.id for row in main.statements} | {case.id for case in main.sequences}
    statements, sequences, sources = list(main.statements), list(main.sequences), [PACKAGED_NAME]
    for name, split in _OWN_FILES:
        own = parse_statements(_read(name, None).splitlines(), name)
        rows: list[Statement | SupersedeCase] = [*own.statements, *own.sequences]
        for row in rows:
            if row.split != split:
                raise DatasetError(name, row.id, f"split: must be {split}")
            if row.id in ids:
                raise DatasetError(name, row.id, "id: also in another packaged file")
            ids.add(row.id)
        statements.extend(own.statements)
        sequences.extend(own.sequences)
        sources.append(name)
    return StatementSet(" + ".join(sources), tuple(statements), tuple(sequences))


# --- matching and scoring (pure) --------------------------------------------------------


def value_key(value: str) -> str:
    """The form values are compared in (see the module docstring)."""
    text = unicodedata.normalize("NFKC", value).casefold().strip()
    text = _ARTICLE.sub("", text)
    return "".join(
        char
        for char in text
        if not char.isspace() and not unicodedata.category(char).startswith("P")
    )


def fact_key(attribute: str, value: str) -> str:
    """How a fact's value is compared: :func:`value_key` of the registry's normal form
    for the attribute's value type ("eat pork" and "pork" are one avoided food)."""
    return value_key(normal_value(attribute, value))


def _name(text: str) -> str:
    return text.strip().casefold()


def items_match(predicted: Item, gold: Item) -> bool:
    """Whether ``predicted`` counts as the labeled ``gold`` item."""
    if (_name(predicted.subject), _name(predicted.attribute), predicted.kind) != (
        _name(gold.subject),
        _name(gold.attribute),
        gold.kind,
    ):
        return False
    if gold.kind == "event":
        return value_key(gold.value) in value_key(predicted.value)
    return fact_key(gold.attribute, predicted.value) == fact_key(gold.attribute, gold.value)


def match_items(gold: Sequence[Item], predicted: Sequence[Item]) -> tuple[tuple[int, int], ...]:
    """One-to-one ``(gold index, predicted index)`` pairs, labels taken in order."""
    taken: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for g, label in enumerate(gold):
        for p, guess in enumerate(predicted):
            if p not in taken and items_match(guess, label):
                taken.add(p)
                pairs.append((g, p))
                break
    return tuple(pairs)


@dataclass(frozen=True, slots=True)
class RowResult:
    """What one extractor predicted for one statement, and how it matched (``pairs``)."""

    statement: Statement
    predicted: tuple[Item, ...]
    error: str | None = None
    pairs: tuple[tuple[int, int], ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pairs", match_items(self.statement.facts, self.predicted))

    @property
    def missed(self) -> tuple[Item, ...]:
        hit = {g for g, _p in self.pairs}
        return tuple(item for g, item in enumerate(self.statement.facts) if g not in hit)

    @property
    def false_positives(self) -> tuple[Item, ...]:
        hit = {p for _g, p in self.pairs}
        return tuple(item for p, item in enumerate(self.predicted) if p not in hit)


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def _counts(gold: int, predicted: int, matched: int) -> dict[str, Any]:
    precision = _ratio(matched, predicted)
    recall = _ratio(matched, gold)
    f1 = (
        round(2 * precision * recall / (precision + recall), 4)
        if precision is not None and recall is not None and precision + recall
        else None
    )
    return {
        "gold": gold,
        "predicted": predicted,
        "matched": matched,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def score_rows(results: Sequence[RowResult]) -> dict[str, Any]:
    """Precision / recall overall, per attribute, language and category, with the misses
    and false positives (row id and attribute only)."""
    # (group, key) -> [labels, predictions, matches]; a match needs equal attributes,
    # so per attribute the matched labels and the matched predictions are one count.
    tally: dict[tuple[str, str], list[int]] = {}

    def add(row: Statement, attribute: str, column: int) -> None:
        for key in (("overall", ""), ("attribute", _name(attribute)), ("lang", row.lang)):
            tally.setdefault(key, [0, 0, 0])[column] += 1
        tally.setdefault(("category", row.category), [0, 0, 0])[column] += 1

    misses: list[dict[str, str]] = []
    false_positives: list[dict[str, str]] = []
    for result in results:
        row = result.statement
        for item in row.facts:
            add(row, item.attribute, 0)
        for item in result.predicted:
            add(row, item.attribute, 1)
        for g, _p in result.pairs:
            add(row, row.facts[g].attribute, 2)
        misses.extend({"id": row.id, "attribute": item.attribute} for item in result.missed)
        false_positives.extend(
            {"id": row.id, "attribute": item.attribute} for item in result.false_positives
        )

    def group(name: str) -> dict[str, Any]:
        return {
            key: _counts(*counts) for (kind, key), counts in sorted(tally.items()) if kind == name
        }

    overall = _counts(*tally.get(("overall", ""), [0, 0, 0]))
    return {
        "rows": len(results),
        **overall,
        "meets_targets": bool(
            (overall["precision"] is None or overall["precision"] >= TARGET_PRECISION)
            and (overall["recall"] is None or overall["recall"] >= TARGET_RECALL)
        ),
        "by_attribute": group("attribute"),
        "by_lang": group("lang"),
        "by_category": group("category"),
        "misses": misses,
        "false_positives": false_positives,
        "errors": [{"id": r.statement.id, "error": r.error} for r in results if r.error],
    }


def apply_sequence(
    steps: Sequence[Sequence[Item]], multi_valued: frozenset[str] = DEFAULT_MULTI_VALUED
) -> dict[tuple[str, str], tuple[str, ...]]:
    """Each slot's active value(s) after applying the facts of ``steps`` in order.

    Mirrors the write path's versioning: a multi-valued attribute accumulates distinct
    values (by :func:`value_key`), any other slot takes the later value; a correction
    replaces a set with the values its text states; a removal takes its value out
    (after the text's own values are applied; a slot left empty holds nothing), and a
    ``dislikes`` value leaves ``likes``; events
    are append-only and hold no slot.
    """
    slots: dict[tuple[str, str], tuple[str, ...]] = {}
    for items in steps:
        corrected: set[tuple[str, str]] = set()
        for item in items:
            if item.kind != "fact" or item.change in ("remove", "dispute"):
                continue  # a dispute marks the slot's value; it states none
            slot = (_name(item.subject), _name(item.attribute))
            if slot[1] in multi_valued:
                held = slots.get(slot, ())
                if item.change == "correct" and slot not in corrected:
                    corrected.add(slot)
                    held = ()
                if value_key(item.value) not in {value_key(v) for v in held}:
                    slots[slot] = (*held, item.value)
            else:
                slots[slot] = (item.value,)
        removed = [i for i in items if i.kind == "fact" and i.change == "remove"]
        # What is disliked is no longer liked (the write path removes it from likes).
        removed += [
            replace(i, attribute="likes", change="remove")
            for i in items
            if i.kind == "fact" and i.change != "remove" and _name(i.attribute) == "dislikes"
        ]
        for item in removed:
            slot = (_name(item.subject), _name(item.attribute))
            if slot in slots:
                kept = tuple(v for v in slots[slot] if _item_key(v) != _item_key(item.value))
                if kept:
                    slots[slot] = kept
                else:
                    del slots[slot]
    return slots


def _item_key(value: str) -> str:
    # The write path tells set items apart this way (memstrata.write.removals).
    return item_key(value)


def sequence_correct(
    case: SupersedeCase,
    steps: Sequence[Sequence[Item]],
    multi_valued: frozenset[str] = DEFAULT_MULTI_VALUED,
) -> bool:
    """Whether the slot named by ``case.final`` ends holding exactly the labeled values."""
    final = case.final
    held = apply_sequence(steps, multi_valued).get((_name(final.subject), _name(final.attribute)))
    if held is None:
        return False
    return {fact_key(final.attribute, v) for v in held} == {
        fact_key(final.attribute, v) for v in final.values
    }


def score_sequences(
    cases: Sequence[SupersedeCase],
    steps: Sequence[Sequence[Sequence[Item]]],
    multi_valued: frozenset[str] = DEFAULT_MULTI_VALUED,
) -> dict[str, Any]:
    """Supersede accuracy over ``cases`` (``steps[i]``: the items of each of its texts)."""
    failures = [
        {"id": case.id, "attribute": case.final.attribute}
        for case, found in zip(cases, steps, strict=True)
        if not sequence_correct(case, found, multi_valued)
    ]
    failed = {failure["id"] for failure in failures}
    by_lang = {
        lang: _ratio(
            sum(1 for c in cases if c.lang == lang and c.id not in failed),
            sum(1 for c in cases if c.lang == lang),
        )
        for lang in LANGS
    }
    correct = len(cases) - len(failures)
    return {
        "n": len(cases),
        "correct": correct,
        "accuracy": _ratio(correct, len(cases)),
        "by_lang": by_lang,
        "failures": failures,
    }


# --- running an extractor ---------------------------------------------------------------


def _turn(text: str, role: Role, turn_id: str, previous: tuple[PriorTurn, ...] = ()) -> Turn:
    return Turn(
        text=text,
        role=role,
        tenant="eval",
        user="eval-user",
        session_id="eval-extraction",
        turn_id=turn_id,
        observed_at=OBSERVED_AT,
        previous=previous,
    )


def _items(candidates: Iterable[Candidate]) -> tuple[Item, ...]:
    return tuple(Item(c.subject, c.attribute, c.value, c.kind, c.change) for c in candidates)


@dataclass(frozen=True, slots=True)
class ExtractorRun:
    """Everything one extractor produced on a set."""

    rows: tuple[RowResult, ...]
    sequences: tuple[tuple[tuple[Item, ...], ...], ...]


def run_extractor(extractor: Extractor, data: StatementSet) -> ExtractorRun:
    """Extract every statement and every sequence text of ``data``.

    A row whose extraction fails with :class:`ExtractionError` (an unusable answer) is
    scored as predicting nothing and listed under ``errors``; an unreachable endpoint
    (:class:`ExtractionUnavailableError`) aborts the run, since every later row would
    fail the same way.
    """
    rows: list[RowResult] = []
    for statement in data.statements:
        found, error = _extract(extractor, statement.text, statement.role, statement.id)
        # A removal holds no value: statements are scored on what they state.
        stated = tuple(item for item in found if item.change != "remove")
        rows.append(RowResult(statement, stated, error))
    sequences = tuple(_sequence(extractor, case) for case in data.sequences)
    return ExtractorRun(tuple(rows), sequences)


def _sequence(extractor: Extractor, case: SupersedeCase) -> tuple[tuple[Item, ...], ...]:
    """The items of each text of ``case``, each read in its conversation: the texts
    before it are its thread's previous turns, with the facts they gave (as the write
    path passes them)."""
    steps: list[tuple[Item, ...]] = []
    previous: list[PriorTurn] = []
    for step, text in enumerate(case.texts):
        found = _extract(
            extractor,
            text,
            case.role,
            f"{case.id}.{step}",
            tuple(previous[-MAX_PREVIOUS_TURNS:]),
        )[0]
        steps.append(found)
        facts = tuple(
            PriorFact(i.subject, i.attribute, i.value)
            for i in found
            if i.kind == "fact" and i.change in ("state", "correct")
        )
        previous.append(PriorTurn(text, case.role, facts))
    return tuple(steps)


def _extract(
    extractor: Extractor,
    text: str,
    role: Role,
    turn_id: str,
    previous: tuple[PriorTurn, ...] = (),
) -> tuple[tuple[Item, ...], str | None]:
    """The items found in one text, or none and the error of an unusable answer."""
    try:
        return _items(extractor.extract(_turn(text, role, turn_id, previous))), None
    except ExtractionUnavailableError:
        raise
    except ExtractionError as exc:
        return (), str(exc)


def check_split(split: str) -> str:
    """``split`` if it is dev, test or all (:class:`ValidationError` otherwise)."""
    if split not in SPLIT_CHOICES:
        raise ValidationError("split", f"must be one of {', '.join(SPLIT_CHOICES)}, got {split!r}")
    return split


def report_run(
    data: StatementSet,
    run: ExtractorRun,
    split: str = "all",
    multi_valued: frozenset[str] = DEFAULT_MULTI_VALUED,
) -> dict[str, Any]:
    """Scores of one run per split (``dev``, ``test``, ``heldback`` and every row as
    ``all``), pure; each split is scored apart."""
    check_split(split)
    names = [*SPLITS, "all"] if split == "all" else [split]
    result: dict[str, Any] = {}
    for name in names:
        keep = set(SPLITS) if name == "all" else {name}
        rows = [r for r in run.rows if r.statement.split in keep]
        chosen = [
            (c, s) for c, s in zip(data.sequences, run.sequences, strict=True) if c.split in keep
        ]
        scores = score_rows(rows)
        scores["supersede"] = score_sequences(
            [c for c, _s in chosen], [s for _c, s in chosen], multi_valued
        )
        scores["meets_targets"] = bool(
            scores["meets_targets"] and scores["supersede"]["accuracy"] in (None, 1.0)
        )
        result[name] = scores
    return result


def evaluate_extractors(
    extractors: Mapping[str, Extractor],
    data: StatementSet,
    split: str = "all",
    multi_valued: frozenset[str] = DEFAULT_MULTI_VALUED,
) -> dict[str, Any]:
    """Run and score each extractor; the report ``memstrata eval extraction`` prints."""
    check_split(split)
    selected = data if split == "all" else data.select(cast(Split, split))
    results = {
        name: report_run(selected, run_extractor(extractor, selected), split, multi_valued)
        for name, extractor in extractors.items()
    }
    return {
        "dataset": "extraction",
        "data": {
            "source": data.source,
            "statements": len(selected.statements),
            "sequences": len(selected.sequences),
            "split": split,
            "tuned_on": list(TUNED_SPLITS),
            "held_back": ["test", "heldback", "blind"],
        },
        "targets": {"precision": TARGET_PRECISION, "recall": TARGET_RECALL, "supersede": 1.0},
        "scored": "facts and events",
        "results": results,
    }


def run_extraction_eval(
    data_path: Path | None = None,
    *,
    split: str = "all",
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    llm_api_key: str | None = None,
) -> dict[str, Any]:
    """Load the set, then score the rule extractor, and the LLM one when configured."""
    from memstrata.extract.llm import LLMExtractor
    from memstrata.extract.rules import RuleExtractor

    check_split(split)
    if (llm_base_url is None) != (llm_model is None):
        missing = "llm_model" if llm_model is None else "llm_base_url"
        raise ValidationError(missing, "--llm-base-url and --llm-model go together")
    data = load_statements(data_path)
    extractors: dict[str, Extractor] = {"rules": RuleExtractor()}
    if llm_base_url is not None and llm_model is not None:
        extractors["llm"] = LLMExtractor(llm_base_url, llm_model, llm_api_key)
    report = evaluate_extractors(extractors, data, split)
    # The update sequences also go through the product's write path, where a turn is
    # read in its conversation (the extractor alone sees one text): every split's when
    # one is asked for, all of them with "all".
    from memstrata.eval.updates import run_updates

    report["updates"] = {}
    for name in SPLITS if split == "all" else (split,):
        cases = [case for case in data.sequences if case.split == name]
        if cases:
            report["updates"][name] = run_updates(cases)
    return report


# --- rendering --------------------------------------------------------------------------


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_report(report: Mapping[str, Any], console: Console) -> None:
    """Tables for a terminal: per extractor and split, per attribute, then the misses."""
    for split, updates in report.get("updates", {}).items():
        console.print(
            f"updates ({split}, {updates['path']}): {updates['n']} sequences, current value "
            f"right {_cell(updates['current_right'])}, right and the old one marked "
            f"{_cell(updates['accuracy'])}"
        )
        for failure in updates["failures"][:20]:
            console.print(f"  {failure['id']} {failure['attribute']}: {failure['why']}")
    for name, splits in report["results"].items():
        for split, scores in splits.items():
            table = Table(title=f"extraction: {name} on {split} ({scores['rows']} statements)")
            for column in ("attribute", "gold", "predicted", "matched", "precision", "recall"):
                table.add_column(column, justify="left" if column == "attribute" else "right")
            groups = {
                "overall": scores,
                **scores["by_attribute"],
                **{f"lang {lang}": values for lang, values in scores["by_lang"].items()},
            }
            for group, values in groups.items():
                table.add_row(
                    group,
                    str(values["gold"]),
                    str(values["predicted"]),
                    str(values["matched"]),
                    _cell(values["precision"]),
                    _cell(values["recall"]),
                )
            console.print(table)
            supersede = scores["supersede"]
            console.print(
                f"supersede accuracy: {_cell(supersede['accuracy'])} "
                f"({supersede['correct']}/{supersede['n']}); targets met: "
                f"{'yes' if scores['meets_targets'] else 'no'}"
            )
            for label, key in (("missed", "misses"), ("false positives", "false_positives")):
                entries = [f"{e['id']}:{e['attribute']}" for e in scores[key]]
                console.print(f"{label}: {', '.join(entries) or 'none'}", highlight=False)
            failures = [f"{f['id']}:{f['attribute']}" for f in supersede["failures"]]
            if failures:
                console.print(f"supersede failures: {', '.join(failures)}", highlight=False)
            if scores["errors"]:
                console.print(f"errors: {', '.join(e['id'] for e in scores['errors'])}")
    console.print(f"data: {json.dumps(report['data'], ensure_ascii=False)}", highlight=False)
