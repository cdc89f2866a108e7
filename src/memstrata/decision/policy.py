"""What a step may decide, per intent: its risk, the key information it needs, the
evidence that answers it and the tool that fetches what is missing (docs/architecture.md,
"Decisions and feedback").

A :class:`StepPolicy` is data, like an intent: registering one never touches the
decision code. An intent with no policy gets :func:`default_policy`: low risk, no
tool, and every item its intent loads from L2 and L3 counts as evidence.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from memstrata.decision.tools import RISKS, Risk
from memstrata.errors import ConfigError, ValidationError
from memstrata.router.intents import IntentSpec
from memstrata.validation import SLOT_SOURCE_PATTERN, check_id

_SOURCE_RE = re.compile(SLOT_SOURCE_PATTERN)


@dataclass(frozen=True, slots=True)
class Slot:
    """A piece of key information, found in the first of ``sources`` that holds it.

    A source names a fact: ``l1.<field>``, ``l2.<item>`` or ``l2.<item>.<key>`` (an L2
    item of the bundle), or ``given.<name>`` (what the caller parsed from this turn).
    """

    name: str
    sources: tuple[str, ...]
    question: str = ""
    """How to ask for it (the clarification the agent puts to the user)."""

    def __post_init__(self) -> None:
        check_id("slot.name", self.name)
        if not self.sources:
            raise ValidationError("slot.sources", "must name at least one fact")
        for source in self.sources:
            if not isinstance(source, str) or not _SOURCE_RE.match(source):
                raise ValidationError(
                    "slot.sources", f"{source!r} must start with l1., l2. or given."
                )


@dataclass(frozen=True, slots=True)
class StepPolicy:
    """How the decision layer treats one intent's steps."""

    intent: str
    risk: Risk = "low"
    """How costly a wrong answer is; it picks the confidence threshold."""
    evidence: tuple[str, ...] = ("*",)
    """Bundle item names (``fnmatch`` patterns) whose presence answers the step;
    ``session`` (L1) never counts."""
    slots: tuple[Slot, ...] = ()
    tool: str | None = None
    """The tool that fetches the evidence when it is missing or not trusted."""
    tool_params: Mapping[str, str] = field(default_factory=dict)
    """Tool parameter -> slot name whose value it takes."""

    def __post_init__(self) -> None:
        check_id("policy.intent", self.intent)
        if self.risk not in RISKS:
            raise ValidationError("policy.risk", f"must be one of {', '.join(RISKS)}")
        if self.tool is not None:
            check_id("policy.tool", self.tool)
        names = {slot.name for slot in self.slots}
        for param, slot in self.tool_params.items():
            if slot not in names:
                raise ValidationError("policy.tool_params", f"{param}: no slot named {slot!r}")
        if self.tool_params and self.tool is None:
            raise ValidationError("policy.tool_params", "given without a tool")
        object.__setattr__(self, "tool_params", MappingProxyType(dict(self.tool_params)))

    def slot(self, name: str) -> Slot:
        for slot in self.slots:
            if slot.name == name:
                return slot
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class RiskThresholds:
    """The confidence an answer needs, per risk level: the less a wrong answer is
    tolerated, the higher the bar. ``low`` is the default embedder's calibrated
    low-confidence cosine (``longterm.low_confidence_cosine``); 0.72 is the source
    design's low-confidence cosine, the bar for a high-risk answer from L3
    (docs/architecture.md, "Confidence")."""

    low: float = 0.36
    medium: float = 0.5
    high: float = 0.72

    def __post_init__(self) -> None:
        for risk in RISKS:
            value = getattr(self, risk)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ConfigError(f"decision.thresholds.{risk}: must be a number in [0, 1]")
        if not self.low <= self.medium <= self.high:
            raise ConfigError("decision.thresholds: must not fall as the risk rises")

    def of(self, risk: Risk) -> float:
        return float(getattr(self, risk))


def default_policy(spec: IntentSpec) -> StepPolicy:
    """Low risk, no tool, the intent's own L2 and L3 items as evidence."""
    patterns = tuple(need.item_name for need in spec.l2) + tuple(
        f"{need.item_prefix}_*" for need in spec.l3
    )
    return StepPolicy(spec.name, evidence=patterns or ("*",))


class PolicyRegistry:
    """Step policies by intent; thread-safe. With a ``parent``, a scope over it (one
    tenant's policies over the engine's)."""

    def __init__(self, parent: PolicyRegistry | None = None) -> None:
        self._policies: dict[str, StepPolicy] = {}
        self._lock = threading.Lock()
        self._parent = parent

    def register(self, policy: StepPolicy, *, replace: bool = False) -> None:
        if not isinstance(policy, StepPolicy):
            raise ValidationError("policy", "must be a StepPolicy")
        with self._lock:
            if policy.intent in self._policies and not replace:
                raise ValidationError("policy.intent", f"{policy.intent!r} already has a policy")
            self._policies[policy.intent] = policy

    def get(self, intent: str) -> StepPolicy | None:
        with self._lock:
            found = self._policies.get(intent)
        if found is None and self._parent is not None:
            return self._parent.get(intent)
        return found
