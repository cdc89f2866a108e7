"""From a judgment to one of three decisions: answer, call a tool, or ask
(docs/architecture.md, "Decisions and feedback").

Pure: the same judgment, policy and thresholds always give the same decision. Under
the risk's threshold, or when key information is missing and nothing was found, the
decision is to ask, never to answer. A fact the answer would rest on that a newer
episode put in doubt (:func:`disputed`) is asked about, not answered from: the
reasons quote it with both dates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from memstrata.decision.judgment import Judgment
from memstrata.decision.policy import RiskThresholds, StepPolicy
from memstrata.decision.tools import Risk
from memstrata.memory.codec import dispute_note
from memstrata.retrieval.followups import ROUTE as FOLLOWUP
from memstrata.router.bundle import ContextBundle

Route = Literal["answer", "tool", "ask"]
ROUTES: tuple[Route, ...] = ("answer", "tool", "ask")
MEMORY_TYPES = frozenset({"fact", "event"})


@dataclass(frozen=True, slots=True)
class UsedContext:
    """The L3 items a decision rests on, by kind (for the trace card and feedback)."""

    memory_ids: tuple[str, ...] = ()
    episode_ids: tuple[str, ...] = ()
    knowledge_ids: tuple[str, ...] = ()
    l2_keys: tuple[str, ...] = ()

    @classmethod
    def of(cls, bundle: ContextBundle) -> UsedContext:
        memories: list[str] = []
        episodes: list[str] = []
        knowledge: list[str] = []
        for item in bundle.layer("L3"):
            kind = item.content.get("type") if hasattr(item.content, "get") else None
            target = (
                episodes if kind == "episode" else memories if kind in MEMORY_TYPES else knowledge
            )
            target.append(item.provenance.ref)
        l2 = tuple(item.provenance.ref for item in bundle.layer("L2"))
        return cls(tuple(memories), tuple(episodes), tuple(knowledge), l2)

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "memory_ids": list(self.memory_ids),
            "episode_ids": list(self.episode_ids),
            "knowledge_ids": list(self.knowledge_ids),
            "l2_keys": list(self.l2_keys),
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """What the agent does next, and why."""

    route: Route
    intent: str
    risk: Risk
    confidence: float
    """The judgment's confidence; for a tool call, times the router's in the step's
    intent (:func:`routing_confidence`): the call is right only if both are."""
    threshold: float
    judgment: Judgment
    used: UsedContext
    tool: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    ask_for: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    """How to ask for each missing piece (the policy's slot questions)."""
    reasons: tuple[str, ...] = ()
    card_id: str = field(default="", compare=False)
    """The trace card this decision wrote (not part of the decision itself)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def as_dict(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "intent": self.intent,
            "risk": self.risk,
            "confidence": round(self.confidence, 6),
            "threshold": self.threshold,
            "tool": self.tool,
            "params": dict(self.params),
            "ask_for": list(self.ask_for),
            "questions": list(self.questions),
            "reasons": list(self.reasons),
            "judgment": self.judgment.as_dict(),
            "used": self.used.as_dict(),
            "card_id": self.card_id,
        }


def decide(
    judgment: Judgment,
    policy: StepPolicy,
    thresholds: RiskThresholds,
    bundle: ContextBundle,
    *,
    known_tools: frozenset[str] = frozenset(),
) -> Decision:
    """The decision a judgment comes to, under the policy's risk threshold."""
    threshold = thresholds.of(policy.risk)
    asked = Decision(
        "ask",
        policy.intent,
        policy.risk,
        judgment.confidence,
        threshold,
        judgment,
        UsedContext.of(bundle),
        reasons=judgment.reasons,
    )
    doubted = disputed(bundle, threshold)
    if judgment.enough and judgment.confidence >= threshold and not doubted:
        return replace(asked, route="answer")
    if judgment.enough and doubted:
        # Never answered plainly from a fact in doubt: ask whether it still holds.
        names = tuple(dict.fromkeys(name for name, _ in doubted))
        return replace(
            asked,
            ask_for=names,
            questions=questions_for(policy, names),
            reasons=judgment.reasons + tuple(note for _, note in doubted),
        )
    if judgment.data_kind == "tool" and judgment.tool in known_tools:
        return replace(
            asked,
            route="tool",
            tool=judgment.tool,
            params=judgment.params,
            confidence=judgment.confidence * routing_confidence(bundle),
        )
    reasons = judgment.reasons
    if judgment.enough:
        reasons += (f"confidence {judgment.confidence:.2f} is under {threshold:.2f}",)
    elif judgment.data_kind == "tool":
        reasons += (f"no tool {judgment.tool!r} is registered",)
    ask_for = judgment.missing or ("details",)
    return replace(
        asked, ask_for=ask_for, questions=questions_for(policy, ask_for), reasons=reasons
    )


def disputed(bundle: ContextBundle, threshold: float) -> tuple[tuple[str, str], ...]:
    """The facts of ``bundle`` at or above ``threshold`` that a newer episode put in
    doubt: ``(attribute, reason)`` each, the reason quoting the fact, when it was
    stated, and when and by what it was doubted."""
    found: list[tuple[str, str]] = []
    # A fact doubted by a later turn that corrected it (retrieval/followups.py) is
    # settled when that turn is itself served as confident: the answer rests on it.
    served = {
        item.provenance.ref
        for item in bundle.layer("L3")
        if not item.provenance.low_confidence and item.provenance.relevance >= threshold
    }
    for item in bundle.layer("L3"):
        content = item.content
        if not hasattr(content, "get") or content.get("type") not in MEMORY_TYPES:
            continue
        note = dispute_note(content)
        if note is None or item.provenance.relevance < threshold:
            continue
        doubt = content.get("disputed")
        if doubt.get("by") == FOLLOWUP and doubt.get("episode") in served:
            continue
        attribute = str(content.get("attribute") or "details")
        found.append((attribute, f"disputed: {content.get('text', '')} ({note})"))
    return tuple(found)


def routing_confidence(bundle: ContextBundle) -> float:
    """How sure the router is of the step's intent: the recognizer's confidence when
    the step was routed from the message alone, fully when the caller named it."""
    recognized = bundle.recognized
    if recognized is None or recognized.fell_back:
        return 1.0
    return min(1.0, max(0.0, recognized.confidence))


def questions_for(policy: StepPolicy, names: tuple[str, ...]) -> tuple[str, ...]:
    """How to ask for each of ``names``: its slot's question, or a plain one."""
    out = []
    for name in names:
        try:
            question = policy.slot(name).question
        except KeyError:
            question = ""
        out.append(question or f"Could you tell me the {name.replace('_', ' ')}?")
    return tuple(out)
