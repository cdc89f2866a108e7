"""The structured judgment a decision is made from (docs/architecture.md, "Decisions and
feedback"): is more data needed, of which kind, and is what the bundle holds enough?

:func:`rule_judgment` is pure: the bundle, the step's policy, the facts held and the
thresholds in; the same inputs always give the same judgment. A model may make the
judgment instead (:mod:`memstrata.decision.model_judge`); the rules stay its fallback.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from memstrata.decision.policy import RiskThresholds, StepPolicy
from memstrata.decision.tools import facts_of
from memstrata.frozen import thaw
from memstrata.router.bundle import ContextBundle, ContextItem

DataKind = Literal["tool", "clarification"]
JudgedBy = Literal["rules", "model"]


@dataclass(frozen=True, slots=True)
class Judgment:
    """What the step lacks and whether what it holds is enough."""

    needs_data: bool
    data_kind: DataKind | None
    enough: bool
    confidence: float
    """How far the judgment can be trusted. Answering or asking: the best evidence's
    confidence (:func:`item_confidence`; 0.0 with no evidence). Calling a tool: how
    far its parameters can be, the least confident fact one came from
    (:func:`source_confidence`): the evidence is what the call fetches."""
    missing: tuple[str, ...] = ()
    """Slots (key information) nobody holds, by name."""
    tool: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    judged_by: JudgedBy = "rules"

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def as_dict(self) -> dict[str, Any]:
        return {
            "needs_data": self.needs_data,
            "data_kind": self.data_kind,
            "enough": self.enough,
            "confidence": round(self.confidence, 6),
            "missing": list(self.missing),
            "tool": self.tool,
            "params": dict(self.params),
            "reasons": list(self.reasons),
            "judged_by": self.judged_by,
        }


def facts_held(
    l1: Mapping[str, Any], bundle: ContextBundle, given: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The facts a step holds, by reference: ``l1.<field>`` from the session,
    ``l2.<item>`` and ``l2.<item>.<key>`` from the bundle's L2 items, ``given.<name>``
    from the caller. Unset values are not facts."""
    l2 = {item.name: thaw(item.content) for item in bundle.layer("L2")}
    facts = facts_of({k: v for k, v in l1.items() if v is not None}, l2)
    for name, content in l2.items():
        if isinstance(content, dict):
            value = content.get("value", content)
            for key, inner in (value if isinstance(value, dict) else content).items():
                if inner is not None:
                    facts.setdefault(f"l2.{name}.{key}", inner)
    for name, value in (given or {}).items():
        if value is not None:
            facts[f"given.{name}"] = value
    return facts


def evidence_items(bundle: ContextBundle, policy: StepPolicy) -> tuple[ContextItem, ...]:
    """The bundle's items that answer the step (never the session item)."""
    return tuple(
        item
        for item in bundle.items
        if item.provenance.layer != "L1"
        and any(fnmatch.fnmatchcase(item.name, pattern) for pattern in policy.evidence)
    )


def item_confidence(item: ContextItem) -> float:
    """An item's relevance: 1.0 for an exact L2 key hit, the stated confidence of a
    preference, the cosine to the query for an L3 item."""
    return item.provenance.relevance


def rule_judgment(
    bundle: ContextBundle,
    policy: StepPolicy,
    facts: Mapping[str, Any],
    thresholds: RiskThresholds,
    *,
    tool_available: bool = True,
) -> Judgment:
    """The rules, in order:

    1. evidence at or above the risk's threshold -> enough: answer;
    2. a tool that can fetch the evidence and every slot it needs held -> call it;
    3. key information missing -> ask for it;
    4. evidence below the threshold, or none at all -> ask, never guess.
    """
    evidence = evidence_items(bundle, policy)
    confidence = max((item_confidence(item) for item in evidence), default=0.0)
    threshold = thresholds.of(policy.risk)
    resolved = {slot.name: resolve(slot.sources, facts) for slot in policy.slots}
    missing = tuple(name for name, value in resolved.items() if value is None)
    if evidence and confidence >= threshold:
        return Judgment(
            needs_data=False,
            data_kind=None,
            enough=True,
            confidence=confidence,
            missing=missing,
            reasons=(f"evidence {confidence:.2f} >= {policy.risk} threshold {threshold:.2f}",),
        )
    why = (
        f"evidence {confidence:.2f} < {policy.risk} threshold {threshold:.2f}"
        if evidence
        else "no evidence in the bundle"
    )
    if policy.tool is not None and tool_available:
        needed = tuple(dict.fromkeys(policy.tool_params.values()))
        lacking = tuple(name for name in needed if resolved[name] is None)
        if not lacking:
            params = {param: resolved[slot] for param, slot in policy.tool_params.items()}
            sources = {slot.name: slot.sources for slot in policy.slots}
            trusted = min(
                (
                    source_confidence(resolve_source(sources[name], facts), bundle)
                    for name in needed
                ),
                default=1.0,
            )
            return Judgment(
                needs_data=True,
                data_kind="tool",
                enough=False,
                confidence=trusted,
                missing=missing,
                tool=policy.tool,
                params=params,
                reasons=(why, f"{policy.tool} can fetch it"),
            )
        return Judgment(
            needs_data=True,
            data_kind="clarification",
            enough=False,
            confidence=confidence,
            missing=lacking,
            reasons=(why, f"{policy.tool} needs {', '.join(lacking)}"),
        )
    return Judgment(
        needs_data=True,
        data_kind="clarification",
        enough=False,
        confidence=confidence,
        missing=missing or ("details",),
        reasons=(why,),
    )


def resolve(sources: tuple[str, ...], facts: Mapping[str, Any]) -> Any:
    """The first held value among ``sources`` (None when none is held)."""
    found = resolve_source(sources, facts)
    return None if found is None else facts[found]


def resolve_source(sources: tuple[str, ...], facts: Mapping[str, Any]) -> str | None:
    """Which of ``sources`` :func:`resolve` takes its value from (None: none is held)."""
    for source in sources:
        value = facts.get(source)
        if value is not None and value != "":
            return source
    return None


def source_confidence(source: str | None, bundle: ContextBundle) -> float:
    """How far a fact can be trusted: the L2 item it was read from, as far as that
    item is (an exact key hit 1.0, a preference its stated confidence); the session's
    own state (``l1.*``) and what the caller gave (``given.*``), fully."""
    if source is None or not source.startswith("l2."):
        return 1.0
    name = source[len("l2.") :]
    matches = [
        item.provenance.relevance
        for item in bundle.layer("L2")
        if name == item.name or name.startswith(item.name + ".")
    ]
    return min(matches, default=1.0)
