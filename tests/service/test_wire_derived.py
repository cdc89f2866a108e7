"""Wire models derived from the domain types: current with them, a field declared once."""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memstrata.decision.tools import Attempt, ToolOutcome
from memstrata.feedback.report import FeedbackReport, IntentStats, QuestionStats
from memstrata.service import convert, derive
from memstrata.service import wire as m
from memstrata.service.derive import REST, Derived, WireField, wire_fields


def test_the_derived_models_are_current() -> None:
    generated = ast.dump(ast.parse(derive.source()))
    assert ast.dump(ast.parse(derive.TARGET.read_text())) == generated, (
        "regenerate: python -m memstrata.service.derive"
    )


def test_every_domain_field_is_on_the_wire_unless_excluded() -> None:
    for spec in derive.DERIVED:
        model = getattr(m, spec.name)
        domain = {spec.rename.get(f.name, f.name) for f in dataclasses.fields(spec.domain)}
        kept = domain - {spec.rename.get(name, name) for name in spec.exclude}
        assert kept <= set(model.model_fields), spec.name
        assert set(model.model_fields) == set(spec.sources()), spec.name


@dataclass(frozen=True)
class _Toy:
    name: str
    tags: tuple[str, ...] = ()
    score: float | None = None
    extra: dict[str, int] = field(default_factory=dict)
    secret: str = ""

    @property
    def size(self) -> int:
        return len(self.tags)


def test_a_field_added_to_the_domain_type_reaches_the_wire() -> None:
    spec = Derived("ToyOut", _Toy, exclude=("secret",), order=("name", "size", REST))
    assert list(wire_fields(spec)) == [
        WireField("name", "str", None),
        WireField("size", "int", None),
        WireField("tags", "list[str]", "[]"),
        WireField("score", "float | None", "None"),
        WireField("extra", "dict[str, int]", "{}"),
    ]


def test_to_wire_reads_fields_and_properties_and_converts_nested_values() -> None:
    outcome = ToolOutcome(
        "done",
        "a",
        result={"when": datetime(2025, 1, 1, tzinfo=UTC)},
        attempts=(Attempt("a", False, "timeout"), Attempt("b", True)),
    )
    out = convert.outcome_out(outcome)
    assert out.fallbacks == ["b"] and out.attempts[0] == m.AttemptOut(
        tool="a", ok=False, error="timeout"
    )
    assert out.result == {"when": "2025-01-01 00:00:00+00:00"}


def test_the_feedback_report_keeps_its_rounded_rates() -> None:
    stats = IntentStats("respond", 3, 1, 1, 1, 0, 0, None, (QuestionStats("q", 3, 2),))
    report = FeedbackReport("acme", None, 3, {"corrected": 1}, (stats,))
    out = convert.feedback_report_out(report)
    assert out.corrected_share == 0.3333 and out.intents[0].miss_rate == 0.6667
    assert out.intents[0].questions[0].miss_rate == 0.6667
