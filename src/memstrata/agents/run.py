"""What a reference agent's run comes to: its steps, its CER and the decision rates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memstrata.agents.loop import StepRecord
from memstrata.cer import StepOutcome, cer_summary
from memstrata.decision import DecisionRates


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One scripted run of a reference agent."""

    agent: str
    tenant: str
    writer: str
    steps: tuple[StepRecord, ...]
    rates: DecisionRates
    """``engine.decision_rates()`` once the run was done."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """What the agent adds (the diagnostics reports, the support refunds...)."""

    def outcomes(self) -> tuple[StepOutcome, ...]:
        """The CER verdict of every checked step (the answers)."""
        return tuple(
            StepOutcome(s.check.context_loaded, s.check.context_used, s.title, s.check.consistent)
            for s in self.steps
            if s.check is not None
        )

    def cer(self) -> dict[str, float | int | None]:
        """CER over the run's checked steps (:func:`memstrata.cer.cer_summary`)."""
        return cer_summary(self.outcomes())

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "tenant": self.tenant,
            "writer": self.writer,
            "steps": [step.as_dict() for step in self.steps],
            "cer": self.cer(),
            "rates": self.rates.as_dict(),
            **dict(self.extras),
        }
