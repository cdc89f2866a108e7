"""Tools an agent may call, the gate every call passes, and the fallback chain (seed 003 §4.2).

* :class:`ToolSpec`: a tool's JSON-schema parameters, its risk level, whether it is
  high-impact (refund, send a message, change data), its alternatives, and which
  parameters must equal facts the session holds (``bound``: parameter -> fact name,
  e.g. ``{"device_id": "l1.last_entity_id"}``).
* :func:`gate`: before any call, three checks: the schema; that the bound parameters
  agree with the facts held in L1 and L2; and the risk rules (a high-impact call is
  never run without a confirmation). Every check's verdict is kept for the trace card.
* :class:`ToolExecutor`: runs a call through the gate; a high-impact call becomes a
  :class:`PendingCall` that the caller or a human confirms or rejects, and only a
  confirmed one runs. A failing call is retried once, then its alternatives are tried
  in order, then the answer is an honest "cannot complete now". A failure's text
  passes the gateway before it is kept anywhere (seed 000 §4.4: a request with a key
  in it must not come back as context).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from memstrata.errors import NotFoundError, ValidationError
from memstrata.validation import check_id

Risk = Literal["low", "medium", "high"]
RISKS: tuple[Risk, ...] = ("low", "medium", "high")
Outcome = Literal["done", "pending_confirmation", "rejected", "blocked", "cannot_complete"]
ToolFunction = Callable[[Mapping[str, Any]], Any]
TextSanitizer = Callable[[str], str]
MAX_ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool: what it takes, how risky it is, what can stand in for it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """A JSON Schema (draft 2020-12) for the call's parameters object."""
    risk: Risk = "low"
    high_impact: bool = False
    """Irreversible (refund, send, change data): runs only once confirmed."""
    alternatives: tuple[str, ...] = ()
    bound: Mapping[str, str] = field(default_factory=dict)
    """Parameter -> the fact it must equal (``l1.<field>`` or ``l2.<name>``)."""

    def __post_init__(self) -> None:
        check_id("tool.name", self.name)
        if self.risk not in RISKS:
            raise ValidationError("tool.risk", f"must be one of {', '.join(RISKS)}")
        try:
            Draft202012Validator.check_schema(dict(self.parameters))
        except SchemaError as exc:
            raise ValidationError("tool.parameters", f"not a JSON Schema: {exc.message}") from None
        for alternative in self.alternatives:
            check_id("tool.alternatives", alternative)
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))
        object.__setattr__(self, "bound", MappingProxyType(dict(self.bound)))


class ToolRegistry:
    """The tools an agent may call, by name."""

    def __init__(self) -> None:
        self._tools: dict[str, tuple[ToolSpec, ToolFunction]] = {}
        self._lock = threading.Lock()

    def register(self, spec: ToolSpec, function: ToolFunction) -> None:
        with self._lock:
            if spec.name in self._tools:
                raise ValidationError("tool.name", f"{spec.name!r} is already registered")
            self._tools[spec.name] = (spec, function)

    def get(self, name: str) -> tuple[ToolSpec, ToolFunction]:
        try:
            return self._tools[name]
        except KeyError:
            raise NotFoundError(f"no tool {name!r}") from None

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._tools))


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict of the gate: passed or not, and why."""

    name: Literal["schema", "facts", "risk"]
    passed: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """The three checks of one call, in order."""

    tool: str
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        """Schema and facts hold (the risk check decides confirmation, not refusal)."""
        return all(c.passed for c in self.checks if c.name != "risk")

    @property
    def needs_confirmation(self) -> bool:
        return any(c.name == "risk" and not c.passed for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks
            ],
        }


def gate(spec: ToolSpec, params: Mapping[str, Any], facts: Mapping[str, Any]) -> GateVerdict:
    """Check a call before it runs: schema, agreement with held facts, risk rules.

    ``facts`` maps ``l1.<field>`` / ``l2.<name>`` to the values the session holds. A
    bound parameter whose fact is not held fails the facts check: the call could not
    be shown to concern the session's entity.
    """
    errors = sorted(Draft202012Validator(dict(spec.parameters)).iter_errors(dict(params)), key=str)
    schema = Check(
        "schema",
        not errors,
        "; ".join(
            f"{'/'.join(map(str, e.absolute_path)) or 'params'}: {e.message}" for e in errors[:3]
        ),
    )
    contradictions = []
    for param, fact in spec.bound.items():
        if param not in params:
            continue  # a missing required parameter is the schema's finding
        if fact not in facts:
            contradictions.append(f"{param}: no {fact} is held to check it against")
        elif params[param] != facts[fact]:
            contradictions.append(f"{param} is not the session's {fact}")
    agree = Check("facts", not contradictions, "; ".join(contradictions))
    risky = spec.high_impact or spec.risk == "high"
    risk = Check("risk", not risky, "high-impact: needs a confirmation" if risky else "")
    return GateVerdict(spec.name, (schema, agree, risk))


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try of one tool: what happened (the error text sanitized)."""

    tool: str
    ok: bool
    error: str = ""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a call came to, with every verdict and attempt (for the trace card)."""

    outcome: Outcome
    tool: str
    result: Any = None
    pending_id: str | None = None
    verdicts: tuple[GateVerdict, ...] = ()
    attempts: tuple[Attempt, ...] = ()
    message: str = ""

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """The tools tried after the first one (its retry excluded)."""
        first = self.attempts[0].tool if self.attempts else self.tool
        return tuple(dict.fromkeys(a.tool for a in self.attempts if a.tool != first))


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A high-impact call waiting for a decision; it runs only once confirmed."""

    id: str
    tool: str
    params: Mapping[str, Any]
    facts: Mapping[str, Any]
    verdict: GateVerdict


CANNOT_COMPLETE = "This cannot be completed right now."


class ToolExecutor:
    """Runs tool calls through the gate, confirmations and the fallback chain.

    ``sanitize`` is the gateway's text sanitizer: every failure text passes it before
    it is kept in an outcome (and so in a trace card or a context).
    """

    def __init__(self, registry: ToolRegistry, sanitize: TextSanitizer) -> None:
        self._registry = registry
        self._sanitize = sanitize
        self._pending: dict[str, PendingCall] = {}
        self._lock = threading.Lock()

    def call(self, tool: str, params: Mapping[str, Any], facts: Mapping[str, Any]) -> ToolOutcome:
        """Gate the call; run it, or hold it for confirmation when high-impact."""
        spec, _ = self._registry.get(tool)
        verdict = gate(spec, params, facts)
        if not verdict.passed:
            return ToolOutcome("blocked", tool, verdicts=(verdict,), message=_reasons(verdict))
        if verdict.needs_confirmation:
            pending = PendingCall(uuid.uuid4().hex, tool, dict(params), dict(facts), verdict)
            with self._lock:
                self._pending[pending.id] = pending
            return ToolOutcome(
                "pending_confirmation",
                tool,
                pending_id=pending.id,
                verdicts=(verdict,),
                message=f"{tool} changes something irreversibly: confirm or reject it",
            )
        return self._run_chain(spec, params, facts, (verdict,))

    def pending(self) -> tuple[PendingCall, ...]:
        with self._lock:
            return tuple(self._pending.values())

    def confirm(self, pending_id: str) -> ToolOutcome:
        """Run a held call (once: a second confirmation finds nothing)."""
        held = self._take(pending_id)
        spec, _ = self._registry.get(held.tool)
        return self._run_chain(spec, held.params, held.facts, (held.verdict,))

    def reject(self, pending_id: str) -> ToolOutcome:
        held = self._take(pending_id)
        return ToolOutcome("rejected", held.tool, verdicts=(held.verdict,), message="rejected")

    def _take(self, pending_id: str) -> PendingCall:
        with self._lock:
            held = self._pending.pop(pending_id, None)
        if held is None:
            raise NotFoundError(f"no pending call {pending_id!r}")
        return held

    def _run_chain(
        self,
        spec: ToolSpec,
        params: Mapping[str, Any],
        facts: Mapping[str, Any],
        verdicts: tuple[GateVerdict, ...],
    ) -> ToolOutcome:
        attempts: list[Attempt] = []
        for name in (spec.name, *spec.alternatives):
            candidate, function = self._registry.get(name)
            if name != spec.name:
                verdict = gate(candidate, params, facts)
                verdicts += (verdict,)
                # An alternative passes the same gate, and a high-impact one is never run
                # in place of another: what was confirmed was the first tool's call.
                if not verdict.passed or verdict.needs_confirmation:
                    continue
            for _ in range(2):  # the call, then one retry
                try:
                    result = function(params)
                except Exception as exc:
                    attempts.append(Attempt(name, False, self._error_text(exc)))
                    continue
                attempts.append(Attempt(name, True))
                return ToolOutcome(
                    "done", name, result, verdicts=verdicts, attempts=tuple(attempts)
                )
        return ToolOutcome(
            "cannot_complete",
            spec.name,
            verdicts=verdicts,
            attempts=tuple(attempts),
            message=CANNOT_COMPLETE,
        )

    def _error_text(self, exc: Exception) -> str:
        raw = f"{type(exc).__name__}: {exc}"
        return self._sanitize(raw)[:MAX_ERROR_CHARS]


def _reasons(verdict: GateVerdict) -> str:
    return "; ".join(
        f"{c.name}: {c.detail}" for c in verdict.checks if not c.passed and c.name != "risk"
    )


def facts_of(l1: Mapping[str, Any], l2: Mapping[str, Any]) -> dict[str, Any]:
    """The facts a gate checks against: ``l1.<field>`` and ``l2.<name>``."""
    return {**{f"l1.{k}": v for k, v in l1.items()}, **{f"l2.{k}": v for k, v in l2.items()}}
