"""Tools an agent may call, the gate every call passes, and the fallback chain
(docs/architecture.md, "Decisions and feedback").

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
  passes the gateway before it is kept anywhere: a request with a key in it must not
  come back as context (docs/architecture.md, "Safety").
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from memstrata.errors import NotFoundError, ValidationError
from memstrata.validation import check_id

Risk = Literal["low", "medium", "high"]
RISKS: tuple[Risk, ...] = ("low", "medium", "high")
Outcome = Literal[
    "done", "approved", "pending_confirmation", "rejected", "blocked", "cannot_complete"
]
OUTCOMES: tuple[Outcome, ...] = (
    "done",
    "approved",
    "pending_confirmation",
    "rejected",
    "blocked",
    "cannot_complete",
)
ToolFunction = Callable[[Mapping[str, Any]], Any]
TextSanitizer = Callable[[str], str]
MAX_ERROR_CHARS = 500
MAX_PENDING = 10_000
"""Calls held for confirmation at once; beyond it the oldest lapses (never runs)."""


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
    """The tools an agent may call, by name.

    A tool registered without a function is *remote*: it runs in the caller's process
    (an agent on the service). The gate and the fallback chain still decide whether
    and which tool runs; the caller reports each attempt's result.

    With a ``parent``, this registry is a scope over it (one tenant's tools over the
    engine's): a name is looked up here first, then in the parent.
    """

    def __init__(self, parent: ToolRegistry | None = None) -> None:
        self._tools: dict[str, tuple[ToolSpec, ToolFunction | None]] = {}
        self._lock = threading.Lock()
        self._parent = parent

    def register(
        self, spec: ToolSpec, function: ToolFunction | None = None, *, replace: bool = False
    ) -> None:
        if not isinstance(spec, ToolSpec):
            raise ValidationError("tool", "must be a ToolSpec")
        if function is not None and not callable(function):
            raise ValidationError("function", "must be callable")
        with self._lock:
            if spec.name in self._tools and not replace:
                raise ValidationError("tool.name", f"{spec.name!r} is already registered")
            self._tools[spec.name] = (spec, function)

    def get(self, name: str) -> tuple[ToolSpec, ToolFunction | None]:
        with self._lock:
            found = self._tools.get(name)
        if found is not None:
            return found
        if self._parent is not None:
            return self._parent.get(name)
        raise NotFoundError(f"no tool {name!r}")

    def spec(self, name: str) -> ToolSpec:
        return self.get(name)[0]

    def names(self) -> tuple[str, ...]:
        with self._lock:
            own = set(self._tools)
        inherited = set(self._parent.names()) if self._parent is not None else set()
        return tuple(sorted(own | inherited))


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
    problems = dict.fromkeys(_schema_problem(e) for e in errors)  # one per missing name
    schema = Check("schema", not errors, "; ".join(list(problems)[:3]))
    contradictions = []
    for param, fact in spec.bound.items():
        if param not in params:
            continue  # a missing required parameter is the schema's finding
        if fact not in facts:
            contradictions.append(f"{param}: no {fact} is held to check it against")
        elif not _same(params[param], facts[fact]):
            contradictions.append(f"{param} is not the session's {fact}")
    agree = Check("facts", not contradictions, "; ".join(contradictions))
    risky = spec.high_impact or spec.risk == "high"
    risk = Check("risk", not risky, "high-impact: needs a confirmation" if risky else "")
    return GateVerdict(spec.name, (schema, agree, risk))


def _schema_problem(error: Any) -> str:
    """Which parameter breaks which rule of the schema, never the offending value: a
    refused value may be a key or an email, and verdicts are kept on trace cards. The
    location is read off the schema's path, so it names only what the schema names."""
    parts = list(error.absolute_schema_path)
    names = []
    i = 0
    while i < len(parts) - 1:
        if parts[i] == "properties":
            names.append(str(parts[i + 1]))
            i += 2
        else:
            i += 1
    where = "/".join(names) or "params"
    if error.validator == "required" and isinstance(error.instance, Mapping):
        missing = [str(n) for n in error.validator_value if n not in error.instance]
        return f"{where}: missing {', '.join(missing)}"
    if error.validator == "additionalProperties":
        return f"{where}: holds parameters the schema does not allow"
    if error.validator is None:  # a ``false`` schema
        return f"{where}: is not allowed"
    rule = json.dumps(error.validator_value, default=str)
    return f"{where}: fails {error.validator} {rule[:80]}"


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: a boolean is never a number (``True == 1`` in Python),
    while ``1`` and ``1.0`` are one number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return bool(a == b)


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
    owner: str = ""
    """Who may confirm or reject it (a tenant): anyone else finds nothing."""


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

    def call(
        self,
        tool: str,
        params: Mapping[str, Any],
        facts: Mapping[str, Any],
        *,
        owner: str = "",
    ) -> ToolOutcome:
        """Gate the call; run it, or hold it for confirmation when high-impact."""
        spec, _ = self._registry.get(tool)
        verdict = gate(spec, params, facts)
        if not verdict.passed:
            return ToolOutcome("blocked", tool, verdicts=(verdict,), message=_reasons(verdict))
        if verdict.needs_confirmation:
            pending = PendingCall(
                uuid.uuid4().hex, tool, copy.deepcopy(dict(params)), dict(facts), verdict, owner
            )
            with self._lock:
                self._pending[pending.id] = pending
                while len(self._pending) > MAX_PENDING:
                    # The oldest unanswered call lapses: it was never run.
                    del self._pending[next(iter(self._pending))]
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

    def confirm(self, pending_id: str, *, owner: str = "") -> ToolOutcome:
        """Run a held call (once: a second confirmation finds nothing)."""
        held = self._take(pending_id, owner)
        spec, _ = self._registry.get(held.tool)
        return self._run_chain(spec, held.params, held.facts, (held.verdict,))

    def reject(self, pending_id: str, *, owner: str = "") -> ToolOutcome:
        held = self._take(pending_id, owner)
        return ToolOutcome("rejected", held.tool, verdicts=(held.verdict,), message="rejected")

    def resume(
        self,
        tool: str,
        params: Mapping[str, Any],
        facts: Mapping[str, Any],
        attempts: Sequence[Attempt],
        verdicts: tuple[GateVerdict, ...] = (),
    ) -> ToolOutcome:
        """Go on with a chain after ``attempts`` (a remote tool's reported tries)."""
        spec, _ = self._registry.get(tool)
        if attempts and attempts[-1].ok:
            last = attempts[-1].tool
            return ToolOutcome("done", last, verdicts=verdicts, attempts=tuple(attempts))
        return self._run_chain(spec, params, facts, verdicts, tuple(attempts))

    def _take(self, pending_id: str, owner: str) -> PendingCall:
        with self._lock:
            held = self._pending.get(pending_id)
            if held is None or held.owner != owner:
                raise NotFoundError(f"no pending call {pending_id!r}")
            del self._pending[pending_id]
        return held

    def _run_chain(
        self,
        spec: ToolSpec,
        params: Mapping[str, Any],
        facts: Mapping[str, Any],
        verdicts: tuple[GateVerdict, ...],
        tried: tuple[Attempt, ...] = (),
    ) -> ToolOutcome:
        attempts = list(tried)
        while True:
            step = next_in_chain(self._registry, spec, params, facts, attempts)
            gated = {v.tool for v in verdicts}
            verdicts += tuple(v for v in step.verdicts if v.tool not in gated)
            if step.tool is None:
                return ToolOutcome(
                    "cannot_complete",
                    spec.name,
                    verdicts=verdicts,
                    attempts=tuple(attempts),
                    message=CANNOT_COMPLETE,
                )
            function = self._registry.get(step.tool)[1]
            if function is None:
                # A remote tool: the caller runs it and reports back.
                return ToolOutcome(
                    "approved",
                    step.tool,
                    verdicts=verdicts,
                    attempts=tuple(attempts),
                    message=f"run {step.tool} and report its result",
                )
            try:
                # Each attempt gets its own copy: a function that rewrites its params
                # in place must not change what its retry or an alternative runs with.
                result = function(copy.deepcopy(dict(params)))
            except Exception as exc:
                attempts.append(Attempt(step.tool, False, self.error_text(exc)))
                continue
            attempts.append(Attempt(step.tool, True))
            return ToolOutcome(
                "done", step.tool, result, verdicts=verdicts, attempts=tuple(attempts)
            )

    def error_text(self, exc: BaseException | str) -> str:
        """A failure's text, through the gateway and cut to :data:`MAX_ERROR_CHARS`."""
        raw = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        return self._sanitize(raw)[:MAX_ERROR_CHARS]


@dataclass(frozen=True, slots=True)
class ChainStep:
    """What the fallback chain tries next (``tool`` None: nothing is left)."""

    tool: str | None
    verdicts: tuple[GateVerdict, ...] = ()


ATTEMPTS_PER_TOOL = 2
"""The call and one retry."""


def next_in_chain(
    registry: ToolRegistry,
    spec: ToolSpec,
    params: Mapping[str, Any],
    facts: Mapping[str, Any],
    attempts: Sequence[Attempt],
) -> ChainStep:
    """The fallback chain (docs/architecture.md, "Decisions and feedback"): the tool,
    retried once, then each
    alternative that passes the same gate, then nothing ("cannot complete now").

    An alternative is never high-impact: what was confirmed was the first tool's call.
    Pure but for the registry lookup; ``attempts`` are the tries made so far.
    """
    if any(a.ok for a in attempts):
        raise ValidationError("attempts", "the chain already succeeded")
    tried = [a.tool for a in attempts]
    verdicts: tuple[GateVerdict, ...] = ()
    for name in (spec.name, *spec.alternatives):
        if name != spec.name and name not in tried:
            try:
                candidate = registry.spec(name)
            except NotFoundError:
                continue
            verdict = gate(candidate, params, facts)
            verdicts += (verdict,)
            if not verdict.passed or verdict.needs_confirmation:
                continue
        if tried.count(name) < ATTEMPTS_PER_TOOL:
            return ChainStep(name, verdicts)
    return ChainStep(None, verdicts)


def _reasons(verdict: GateVerdict) -> str:
    return "; ".join(
        f"{c.name}: {c.detail}" for c in verdict.checks if not c.passed and c.name != "risk"
    )


def facts_of(l1: Mapping[str, Any], l2: Mapping[str, Any]) -> dict[str, Any]:
    """The facts a gate checks against: ``l1.<field>`` and ``l2.<name>``."""
    return {**{f"l1.{k}": v for k, v in l1.items()}, **{f"l2.{k}": v for k, v in l2.items()}}
