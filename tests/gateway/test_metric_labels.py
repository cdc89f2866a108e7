"""Metric labels pass the gateway (issue 31, "What to build" 2): a caller-chosen intent,
tool or collection name holding a card number, a phone or an email is exported with
the finding replaced, over the exposition text a scrape reads."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from memstrata.decision.metrics import DecisionMetrics
from memstrata.decision.tools import ToolOutcome
from memstrata.gateway.labels import safe_label
from memstrata.metrics import ServiceMetrics

CARD = "4539148803430007"


def test_a_label_keeps_its_name_and_loses_its_finding() -> None:
    assert safe_label("refund") == "refund"
    assert safe_label(f"pay-{CARD}") == "[REDACTED:bank_card]"
    assert safe_label("notify 13812345678") == "[REDACTED:phone]"  # a number glued in
    assert safe_label("ops.alice@example.com") == "[REDACTED:email]"


def test_decision_and_service_labels_are_exported_without_the_finding() -> None:
    registry = CollectorRegistry()
    decisions = DecisionMetrics(registry)
    decisions.observe_decision(f"pay-{CARD}", "tool", "rules", 0.01)
    decisions.observe_tool(ToolOutcome("done", "mail-bob@example.com"))
    decisions.observe_feedback("confirmed", "positive", 1)
    ServiceMetrics.of(registry).observe("ping-13812345678", "rest", "200", 0.01)
    text = generate_latest(registry).decode()
    assert "memstrata_decisions" in text and "[REDACTED:bank_card]" in text  # not blind
    for secret in (CARD, "bob@example.com", "13812345678"):
        assert secret not in text
