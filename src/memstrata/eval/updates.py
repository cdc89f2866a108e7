"""Update sequences through the product's write path (``eval extraction`` reports it
for the ``blind`` split as ``updates``).

The extraction eval's *supersede accuracy* replays an extractor's facts in a model of
the write path, one text at a time with no conversation around it. Here every text of
a sequence goes through ``engine.observe()`` in one session (the gateway, the queue,
the extractor reading the turn in its thread, versioning), and after ``flush()`` the
user's slot is read back from L3: a sequence is *current* when the active fact holds
exactly the labeled value(s), and *correct* when, besides, every ``old`` value is kept
only as history (a closed version: marked no longer true), never as the current value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memstrata.errors import BackendError
from memstrata.eval.extraction import SupersedeCase, value_key
from memstrata.eval.product import fake_clock_engine
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.memory.codec import slot_string
from memstrata.memory.versioning import item_key

__all__ = ["SlotState", "run_updates", "score_update"]

USER = "eval-user"
STARTED_AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class SlotState:
    """A slot as L3 holds it: the active value(s) and every closed version's."""

    def __init__(self, current: Sequence[str], history: Sequence[str]) -> None:
        self.current = tuple(current)
        self.history = tuple(history)


def _items(value: str) -> list[str]:
    return [v.strip() for v in value.split(";") if v.strip()]


def score_update(case: SupersedeCase, slot: SlotState) -> tuple[bool, bool, str]:
    """(current right, current right and every old value marked, why not)."""
    want = {value_key(v) for v in case.final.values}
    have = {value_key(v) for v in slot.current}
    if want != have:
        return False, False, f"current {sorted(slot.current)} want {sorted(case.final.values)}"
    held = {item_key(v) for v in slot.history} | {value_key(v) for v in slot.history}
    for old in case.old:
        if item_key(old) not in held and value_key(old) not in held:
            return True, False, f"old {old!r} not kept as history"
    return True, True, ""


def _tenant(case: SupersedeCase) -> str:
    return "up-" + re.sub(r"[^A-Za-z0-9_.-]", "-", case.id)


def _slot(engine: Any, case: SupersedeCase) -> SlotState:
    tenant = _tenant(case)
    key = slot_string(tenant, (USER, case.final.subject, case.final.attribute.casefold()))
    flt = Filter(tenant=tenant, user=USER, types=("fact", "history"), extras=(("slot", key),))
    current: list[str] = []
    history: list[str] = []
    for record in engine.parts.longterm.iter_records(MEMORIES, flt):
        value = str(record.payload.get("value", ""))
        target = current if record.payload.get("type") == "fact" else history
        target.extend(_items(value) if case.final.multi else [value])
    return SlotState(current, history)


def run_updates(cases: Sequence[SupersedeCase]) -> dict[str, Any]:
    """Every case through the product path, scored (see the module docstring)."""
    results: list[tuple[SupersedeCase, bool, bool, str]] = []
    with fake_clock_engine("eval-updates-engine") as (engine, clock):
        for n, case in enumerate(cases):
            tenant = _tenant(case)
            at = STARTED_AT + timedelta(hours=n)
            clock.set(at)
            state = engine.start_session(USER, "updates", tenant=tenant, session_id=tenant)
            for step, text in enumerate(case.texts):
                clock.set(at + timedelta(minutes=step + 1))
                receipt = engine.observe(state.session_id, case.role, text)
                if not receipt.queued:
                    raise BackendError(f"observe failed for {case.id}: {receipt.error}")
        engine.flush(3_600.0)
        for case in cases:
            current, marked, why = score_update(case, _slot(engine, case))
            results.append((case, current, marked, why))
    n = len(results)

    def rate(flags: Sequence[bool]) -> float | None:
        return round(sum(flags) / len(flags), 4) if flags else None

    langs = sorted({case.lang for case, *_ in results})
    return {
        "n": n,
        "path": "engine.observe (one session per sequence) -> flush -> the slot read from L3",
        "current_right": rate([r[1] for r in results]),
        "accuracy": rate([r[2] for r in results]),
        "by_lang": {lang: rate([r[2] for r in results if r[0].lang == lang]) for lang in langs},
        "failures": [
            {"id": case.id, "attribute": case.final.attribute, "why": why}
            for case, _current, marked, why in results
            if not marked
        ],
    }
