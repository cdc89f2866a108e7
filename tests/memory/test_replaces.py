"""The versioning rule for an explicit correction or what a removal leaves of a set
(``replaces``, issue 25): it supersedes however close it is to the active value,
replaces a set instead of adding to it, and adds when its own turn wrote the set."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata.config import MemorySettings
from memstrata.errors import ValidationError
from memstrata.memory.units import MemoryUnit, UnitSource
from memstrata.memory.versioning import decide

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SETTINGS = MemorySettings()


def _unit(attribute: str, value: str, at: datetime, turn: str) -> MemoryUnit:
    return MemoryUnit(
        subject="user",
        attribute=attribute,
        value=value,
        kind="fact",
        source=UnitSource(tenant="t1", user="u1", session_id="s1", turn_id=turn),
        observed_at=at,
        valid_from=at,
    )


def test_a_correction_supersedes_a_near_duplicate() -> None:
    old = _unit("reply_style", "short and concise answers", T0, "1")
    new = _unit("reply_style", "short, concise answers", T0 + timedelta(days=1), "2")
    # Cosine above the near-duplicate threshold: a plain rephrasing only refreshes.
    plain = decide(new, old, cosine=0.99, merge=False, settings=SETTINGS)
    assert plain.action == "deduplicated"
    fixed = decide(new, old, cosine=0.99, merge=False, settings=SETTINGS, replaces=True)
    assert fixed.action == "superseded" and fixed.final is not None
    assert fixed.final.value == "short, concise answers" and fixed.becomes_active


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("May 3", "June 3"),  # other words
        ("柜员", "客户经理"),  # a short CJK value: the embedding is mostly the template
        ("重庆", "贵阳"),
        ("海淀区学院路30号", "海淀区学院路32号"),  # another number
        ("$800", "$1,800"),
    ],
)
def test_a_different_value_above_the_cosine_is_a_change(old: str, new: str) -> None:
    held = _unit("job", old, T0, "1")
    later = _unit("job", new, T0 + timedelta(days=1), "2")
    decision = decide(later, held, cosine=0.99, merge=False, settings=SETTINGS)
    assert decision.action == "superseded" and decision.final is not None
    assert decision.final.value == new


def test_a_correction_replaces_a_set_and_its_own_turn_adds() -> None:
    held = _unit("allergies", "peanuts; shellfish", T0, "1")
    first = _unit("allergies", "tree nuts", T0 + timedelta(days=1), "2")
    decision = decide(first, held, cosine=0.5, merge=False, settings=SETTINGS, replaces=True)
    assert decision.final is not None and decision.final.value == "tree nuts"
    second = _unit("allergies", "sesame", T0 + timedelta(days=1), "2")
    decision = decide(
        second, decision.final, cosine=0.5, merge=False, settings=SETTINGS, replaces=True
    )
    assert decision.action == "merged" and decision.final is not None
    assert decision.final.value == "tree nuts; sesame"


def test_an_older_correction_is_history_only() -> None:
    held = _unit("birthday", "June 3", T0 + timedelta(days=2), "2")
    late = _unit("birthday", "May 3", T0, "1")
    decision = decide(late, held, cosine=0.5, merge=False, settings=SETTINGS, replaces=True)
    assert decision.action == "ignored_older" and not decision.becomes_active


def test_the_store_refuses_a_replaces_flag_that_is_no_bool(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("allergies", "peanuts; shellfish", T0))
    with pytest.raises(ValidationError) as raised:
        store.write(fact("allergies", "shellfish", T0 + timedelta(days=1)), replaces="yes")
    assert raised.value.field == "replaces"
    active = store.active_fact(env.tenant, "u1", "user", "allergies")
    assert active is not None and active.value == "peanuts; shellfish"  # nothing lost
