"""StepGraph: validation at construction and the TTL arithmetic."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import ValidationError
from memstrata.working import StepGraph, StepSpec


def _diamond() -> StepGraph:
    # a -> b -> d, a -> c -> d
    return StepGraph.of([("a", 10, []), ("b", 20, ["a"]), ("c", 5, ["a"]), ("d", 7, ["b", "c"])])


def test_estimated_ends_follow_the_critical_path() -> None:
    g = _diamond()
    assert g.estimated_end_s("a") == 10
    assert g.estimated_end_s("b") == 30
    assert g.estimated_end_s("c") == 15
    assert g.estimated_end_s("d") == 37
    assert g.estimated_start_s("d") == 30
    assert g.makespan_s() == 37
    assert g.dependents("a") == {"b", "c"}
    assert g.dependents("d") == frozenset()


def test_result_deadline_is_twice_the_last_dependents_end() -> None:
    g = _diamond()
    assert g.result_deadline_s("a") == 2 * 30  # b ends last among a's dependents
    assert g.result_deadline_s("c") == 2 * 37
    assert g.result_deadline_s("d") is None


def test_extension_on_read_covers_reader_start_to_last_dependent_end() -> None:
    g = _diamond()
    # c reads a: a must survive from c's start (10) until b ends (30), doubled.
    assert g.extension_on_read_s("a", "c") == 2 * (30 - 10)
    assert g.extension_on_read_s("a", "d") is None  # d does not read a directly
    with pytest.raises(ValidationError):
        g.extension_on_read_s("a", "zz")


def test_cycle_is_rejected_naming_a_step() -> None:
    with pytest.raises(ValidationError) as err:
        StepGraph.of([("a", 1, ["c"]), ("b", 1, ["a"]), ("c", 1, ["b"])])
    assert "steps[" in err.value.field
    assert "cycle" in err.value.reason


def test_long_chain_does_not_recurse() -> None:
    steps = [("s0", 1.0, [])] + [(f"s{i}", 1.0, [f"s{i - 1}"]) for i in range(1, 5000)]
    assert StepGraph.of(steps).estimated_end_s("s4999") == 5000


@pytest.mark.parametrize(
    ("steps", "field"),
    [
        ([("a", 1, ["nope"])], "steps[a].depends_on"),
        ([("a", 0, [])], "steps[a].duration_s"),
        ([("a", -2, [])], "steps[a].duration_s"),
        ([("a", float("nan"), [])], "steps[a].duration_s"),
        ([("a", 1, []), ("a", 2, [])], "steps[a]"),
        ([("a", 1, ["a"])], "steps[a]"),
        ([("a{x}", 1, [])], "step_id"),
    ],
)
def test_invalid_graphs_name_the_step(
    steps: list[tuple[str, float, list[str]]], field: str
) -> None:
    with pytest.raises(ValidationError) as err:
        StepGraph.of(steps)
    assert err.value.field == field


def test_empty_graph_rejected() -> None:
    with pytest.raises(ValidationError):
        StepGraph(())


def test_json_round_trip_and_frozen() -> None:
    g = _diamond()
    again = StepGraph.from_json(g.to_json())
    assert again == g
    assert again.estimated_end_s("d") == 37
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.steps = ()  # type: ignore[misc]
    assert StepSpec("x", 1, ["a"]).depends_on == ("a",)  # type: ignore[arg-type]


@st.composite
def _dags(draw: st.DrawFn) -> list[tuple[str, float, list[str]]]:
    n = draw(st.integers(min_value=1, max_value=12))
    steps = []
    for i in range(n):
        deps = draw(st.lists(st.integers(min_value=0, max_value=max(0, i - 1)), max_size=3))
        dur = draw(st.floats(min_value=0.01, max_value=100, allow_nan=False))
        steps.append((f"s{i}", dur, sorted({f"s{d}" for d in deps}) if i else []))
    return steps


@given(_dags())
def test_ends_satisfy_the_recurrence(steps: list[tuple[str, float, list[str]]]) -> None:
    g = StepGraph.of(steps)
    for sid, dur, deps in steps:
        start = max((g.estimated_end_s(d) for d in deps), default=0.0)
        assert g.estimated_end_s(sid) == pytest.approx(start + dur)
        for d in deps:
            assert sid in g.dependents(d)
            deadline = g.result_deadline_s(d)
            assert deadline is not None and deadline >= 2 * g.estimated_end_s(sid)
