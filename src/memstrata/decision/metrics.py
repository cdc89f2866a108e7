"""Decision-quality metrics, on the engine's registry (docs/architecture.md, "Health and
metrics").

Counters, so Prometheus rates and the health report's week-over-week differences
both come from them; :func:`decision_rates` turns a snapshot into the four rates an
operator reads: tool success, correction, fallback and CER.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from memstrata.decision.tools import ToolOutcome
from memstrata.gateway.labels import safe_label

DECISION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
Snapshot = Mapping[str, list[dict[str, Any]]]
EXECUTED_OUTCOMES = ("done", "cannot_complete")
"""Outcomes of tool calls that ran (held, rejected and blocked calls never did)."""


class DecisionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.decisions = Counter(
            "memstrata_decisions",
            "Decisions, by intent, route (answer, tool, ask) and judge (rules, model).",
            ["intent", "route", "judged_by"],
            registry=r,
        )
        self.decision_seconds = Histogram(
            "memstrata_decision_duration_seconds",
            "Time to decide (judgment, gate and trace card).",
            buckets=DECISION_BUCKETS,
            registry=r,
        )
        self.judge_fallbacks = Counter(
            "memstrata_judge_fallbacks",
            "Model judgments that failed or were refused, so the rules decided.",
            registry=r,
        )
        self.tool_calls = Counter(
            "memstrata_tool_calls",
            "Tool calls, by tool and outcome.",
            ["tool", "outcome"],
            registry=r,
        )
        self.fallbacks = Counter(
            "memstrata_fallbacks",
            "Tool calls that needed the fallback chain (an alternative or cannot-complete).",
            ["tool"],
            registry=r,
        )
        self.reply_checks = Counter(
            "memstrata_reply_checks",
            "Replies checked against their context, by verdict.",
            ["consistent"],
            registry=r,
        )
        self.cer_steps = Counter(
            "memstrata_cer_steps",
            "Checked steps, by whether their context was loaded and used (CER).",
            ["effective"],
            registry=r,
        )
        self.feedback = Counter(
            "memstrata_feedback",
            "Feedback events received, by kind.",
            ["kind"],
            registry=r,
        )
        self.feedback_retrieval = Counter(
            "memstrata_feedback_retrieval",
            "Retrievals users judged: hit (confirmed or rated 4-5, and the reply used a "
            "retrieved memory) or miss (corrected, abandoned or rated 1-2).",
            ["result"],
            registry=r,
        )

    def observe_decision(self, intent: str, route: str, judged_by: str, seconds: float) -> None:
        self.decisions.labels(safe_label(intent), route, judged_by).inc()
        self.decision_seconds.observe(seconds)

    def observe_tool(self, outcome: ToolOutcome) -> None:
        tool = safe_label(outcome.tool)
        self.tool_calls.labels(tool, outcome.outcome).inc()
        if outcome.outcome == "cannot_complete" or outcome.fallbacks:
            self.fallbacks.labels(tool).inc()

    def observe_check(self, consistent: bool, effective: bool) -> None:
        self.reply_checks.labels(str(consistent).lower()).inc()
        self.cer_steps.labels(str(effective).lower()).inc()

    def observe_feedback(self, kind: str, outcome: str, used: int) -> None:
        """One feedback event; ``outcome`` as :func:`~memstrata.feedback.events.
        outcome_of` says, ``used`` the memories the reply used."""
        self.feedback.labels(safe_label(kind)).inc()
        if outcome == "positive" and used:
            self.feedback_retrieval.labels("hit").inc()
        elif outcome in ("negative", "abandoned"):
            self.feedback_retrieval.labels("miss").inc()


@dataclass(frozen=True, slots=True)
class DecisionRates:
    """The decision-quality rates (None: nothing to divide yet)."""

    decisions: int
    ask_rate: float | None
    retrieval_hit_rate: float | None
    """Hits over the retrievals users judged (feedback): the labelled hit rate."""
    tool_success_rate: float | None
    fallback_rate: float | None
    correction_rate: float | None
    cer: float | None
    checked_steps: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "decisions": self.decisions,
            "ask_rate": self.ask_rate,
            "retrieval_hit_rate": self.retrieval_hit_rate,
            "tool_success_rate": self.tool_success_rate,
            "fallback_rate": self.fallback_rate,
            "correction_rate": self.correction_rate,
            "cer": self.cer,
            "checked_steps": self.checked_steps,
        }


def _total(snapshot: Snapshot, name: str, **labels: str) -> float:
    """Sum of a counter's samples matching ``labels`` (a snapshot is keyed by sample
    name, ``<counter>_total``)."""
    return sum(
        float(sample["value"])
        for sample in snapshot.get(f"{name}_total", [])
        if all(sample["labels"].get(k) == v for k, v in labels.items())
    )


def _ratio(part: float, whole: float) -> float | None:
    return None if whole <= 0 else part / whole


def decision_rates(snapshot: Snapshot) -> DecisionRates:
    """The rates, one definition for the engine and the health report: tool success and
    fallback over the tool calls that ran (:data:`EXECUTED_OUTCOMES`), correction and
    ask over all decisions, CER as effective over checked steps."""
    decisions = _total(snapshot, "memstrata_decisions")
    executed = sum(_total(snapshot, "memstrata_tool_calls", outcome=o) for o in EXECUTED_OUTCOMES)
    checked = _total(snapshot, "memstrata_cer_steps")
    return DecisionRates(
        decisions=int(decisions),
        ask_rate=_ratio(_total(snapshot, "memstrata_decisions", route="ask"), decisions),
        retrieval_hit_rate=_ratio(
            _total(snapshot, "memstrata_feedback_retrieval", result="hit"),
            _total(snapshot, "memstrata_feedback_retrieval"),
        ),
        tool_success_rate=_ratio(
            _total(snapshot, "memstrata_tool_calls", outcome="done"), executed
        ),
        fallback_rate=_ratio(_total(snapshot, "memstrata_fallbacks"), executed),
        correction_rate=_ratio(_total(snapshot, "memstrata_feedback", kind="corrected"), decisions),
        cer=_ratio(_total(snapshot, "memstrata_cer_steps", effective="true"), checked),
        checked_steps=int(checked),
    )
