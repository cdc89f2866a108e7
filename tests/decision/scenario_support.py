"""Generated agent-loop scenarios through the engine's decision path (issue 18).

A :class:`Scenario` is a random tool set (risk levels, high-impact tools, JSON-schema
parameters, parameters bound to L1/L2 facts, alternatives, local functions that fail
with secrets in their errors, remote tools the caller runs), a random session state
(an entity or none, an L2 API response for it, for another entity or none, a policy
or the default one) and an agent loop: route -> decide -> call_tool (as decided, or
with fuzzed parameters) -> confirm / reject / ignore / answer later -> report remote
results.

:class:`Harness` runs scenarios on one engine. Every tool function is instrumented:
each run is recorded with the parameters it got and the chain (the call or the
confirmation) it served. Each step is checked as it happens against an independent
model of the rules (:func:`expected_gate`, :func:`expected_decision`,
:meth:`Harness._advance`), which is written from the documented behaviour, not from
the decision layer's code.
"""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from hypothesis import note
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from memstrata import ContextEngine
from memstrata.decision import CANNOT_COMPLETE, Slot, StepPolicy, ToolOutcome, ToolSpec
from memstrata.errors import NotFoundError
from memstrata.router import IntentSpec, L2Need
from memstrata.testing.disk import valkey_entries

Risk = Literal["low", "medium", "high"]
RISKS: tuple[Risk, ...] = ("low", "medium", "high")
DEVICES = ("D1", "D2", "D3")
OWNERS = ("U1", "U2")
LIMITS = (0, 1, 5)
ITEM = "acct"
ENDPOINT = "acct_api"
PARAMS = ("device", "owner", "limit", "note")
SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "device": {"type": "string", "pattern": "^D[0-9]+$"},
    "owner": {"type": "string"},
    "limit": {"type": "integer"},
    "note": {"type": "string"},
}
BINDINGS: Mapping[str, tuple[str, ...]] = {
    "device": ("l1.last_entity_id", f"l2.{ITEM}.device"),
    "owner": (f"l2.{ITEM}.owner", "l1.user_id"),
    "limit": (f"l2.{ITEM}.limit",),
}
SLOT_SOURCES: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "device": (
        ("l1.last_entity_id",),
        ("given.device", "l1.last_entity_id"),
        (f"l2.{ITEM}.device",),
    ),
    "owner": ((f"l2.{ITEM}.owner",), ("l1.user_id",)),
    "limit": ((f"l2.{ITEM}.limit",),),
}
ALWAYS = 9
"""A failure count no chain outlasts: the tool always fails."""
MAX_REPORTS = 16

Fuzz = Literal[
    "truth",
    "other_device",
    "other_owner",
    "wrong_type",
    "extra",
    "missing",
    "secret",
    "secret_device",
    "bool_limit",
    "float_limit",
]
# Truthful params six times as often as each fuzz (the first of Fuzz's values).
FUZZES: tuple[Fuzz, ...] = (*("truth",) * 5, *get_args(Fuzz))
Answer = Literal["confirm", "reject", "ignore", "later", "intruder", "twice"]
ANSWERS: tuple[Answer, ...] = (
    "confirm",
    "confirm",
    "reject",
    "ignore",
    "later",
    "intruder",
    "twice",
)
Target = Literal["decision", "tool", "stale", "ghost"]
TARGETS: tuple[Target, ...] = (
    "decision",
    "decision",
    "decision",
    "tool",
    "tool",
    "tool",
    "stale",
    "ghost",
)


# -- plans ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolPlan:
    risk: Risk
    high_impact: bool
    remote: bool
    failures: int
    """Failures before its first success (:data:`ALWAYS`: it never succeeds)."""
    mutates: bool
    """Rewrites the params it was given in place, as "normalizing" code does."""
    params: tuple[str, ...]
    required: tuple[str, ...]
    closed: bool
    loose_limit: bool
    """``limit`` has no type: only the facts check can tell True from 1."""
    bound: tuple[tuple[str, str], ...]
    alternatives: tuple[int, ...]
    """Indices into the scenario's tools; -1 names a tool nobody registered."""

    @property
    def risky(self) -> bool:
        return self.high_impact or self.risk == "high"


@dataclass(frozen=True)
class PolicyPlan:
    risk: Risk
    evidence: tuple[str, ...]
    tool: int | None
    slots: tuple[tuple[str, tuple[str, ...]], ...]
    tool_params: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class L2Plan:
    for_entity: bool
    """Cached under the session's entity (else under another one: not loaded)."""
    device: str | None
    """The device the response is about (None: the session's entity)."""
    owner: str
    limit: int


@dataclass(frozen=True)
class ActionPlan:
    target: Target
    tool: int
    fuzz: Fuzz
    pick: int
    answer: Answer


@dataclass(frozen=True)
class StepPlan:
    entity: str | None
    """Set the session's entity first (None: leave it as it is)."""
    l2: L2Plan | None
    given_device: str | None
    actions: tuple[ActionPlan, ...]


@dataclass(frozen=True)
class Scenario:
    user: str
    tools: tuple[ToolPlan, ...]
    policy: PolicyPlan | None
    l2_need: bool
    steps: tuple[StepPlan, ...]
    late_confirm: bool
    """How the answers left for later are given, at the end."""


def weighted(**weights: int) -> st.SearchStrategy[str]:
    """One of the names, as often as its weight says."""
    return st.sampled_from([name for name, weight in weights.items() for _ in range(weight)])


def chance(numerator: int, denominator: int) -> st.SearchStrategy[bool]:
    return st.integers(1, denominator).map(lambda n: n <= numerator)


@st.composite
def tool_plans(draw: st.DrawFn) -> tuple[ToolPlan, ...]:
    count = draw(st.sampled_from((1, 2, 3, 3, 4)))
    # Most tools of a scenario take the same params: alternatives that can stand in.
    family = tuple(p for p in PARAMS if draw(st.booleans())) or ("device",)
    plans = []
    for _ in range(count):
        own = tuple(p for p in PARAMS if draw(st.booleans())) or ("device",)
        params = family if draw(chance(2, 3)) else own
        plans.append(
            ToolPlan(
                risk=cast(Risk, draw(weighted(low=2, medium=1, high=1))),
                high_impact=draw(chance(1, 5)),
                remote=draw(chance(1, 4)),
                failures=draw(st.sampled_from((0, 0, 1, 2, 3, ALWAYS))),
                mutates=draw(chance(1, 4)),
                params=params,
                required=tuple(p for p in params if draw(st.booleans())),
                closed=draw(chance(1, 3)),
                loose_limit=draw(st.booleans()),
                bound=tuple(
                    (p, draw(st.sampled_from(BINDINGS[p])))
                    for p in params
                    if p in BINDINGS and draw(chance(3, 4))
                ),
                alternatives=tuple(draw(st.lists(st.integers(-1, count - 1), max_size=3))),
            )
        )
    return tuple(plans)


@st.composite
def policy_plans(draw: st.DrawFn, tools: tuple[ToolPlan, ...]) -> PolicyPlan:
    tool = draw(st.sampled_from((None, -1, *range(len(tools)), *range(len(tools)))))
    slots: dict[str, tuple[str, ...]] = {}
    tool_params: list[tuple[str, str]] = []
    if tool is not None and tool >= 0:
        # Mostly the slots the tool needs, found where its bound facts are.
        bound = dict(tools[tool].bound)
        for param in tools[tool].params:
            if param in SLOT_SOURCES and draw(chance(4, 5)):
                sources = SLOT_SOURCES[param]
                if param in bound and draw(chance(3, 4)):
                    sources = tuple(s for s in sources if s[-1] == bound[param]) or sources
                slots[param] = draw(st.sampled_from(sources))
                tool_params.append((param, param))
    for name, choices in SLOT_SOURCES.items():
        if name not in slots and draw(chance(1, 3)):
            slots[name] = draw(st.sampled_from(choices))
            if tool is not None and draw(chance(1, 4)):
                tool_params.append((name, name))
    return PolicyPlan(
        risk=draw(st.sampled_from(RISKS)),
        evidence=draw(st.sampled_from(((ITEM,), ("report_*",), ("report_*",), ("*",)))),
        tool=tool,
        slots=tuple(slots.items()),
        tool_params=tuple(tool_params),
    )


def actions(tools: int) -> st.SearchStrategy[ActionPlan]:
    return st.builds(
        ActionPlan,
        target=st.sampled_from(TARGETS),
        tool=st.integers(0, tools - 1),
        fuzz=st.sampled_from(FUZZES),
        pick=st.integers(0, 7),
        answer=st.sampled_from(ANSWERS),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    tools = draw(tool_plans())
    devices = st.sampled_from(DEVICES)
    l2_plans = st.builds(
        L2Plan,
        for_entity=chance(5, 6),
        device=st.sampled_from((None, None, *DEVICES)),
        owner=st.sampled_from(OWNERS),
        limit=st.sampled_from(LIMITS),
    )
    steps = draw(
        st.lists(
            st.builds(
                StepPlan,
                entity=st.sampled_from((None, *DEVICES, *DEVICES)),
                l2=st.one_of(st.none(), l2_plans, l2_plans, l2_plans),
                given_device=st.none() | devices,
                actions=st.lists(actions(len(tools)), min_size=1, max_size=3).map(tuple),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return Scenario(
        user=draw(st.sampled_from(OWNERS)),
        tools=tools,
        policy=draw(st.one_of(st.none(), policy_plans(tools), policy_plans(tools))),
        l2_need=draw(chance(4, 5)),
        steps=tuple(steps),
        late_confirm=draw(st.booleans()),
    )


# -- the independent model --------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: a boolean is never a number, 1 and 1.0 are one number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a is None and b is None


def schema_of(plan: ToolPlan) -> dict[str, Any]:
    properties = {
        p: ({} if p == "limit" and plan.loose_limit else dict(SCHEMAS[p])) for p in plan.params
    }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if plan.required:
        schema["required"] = list(plan.required)
    if plan.closed:
        schema["additionalProperties"] = False
    return schema


def expected_gate(
    plan: ToolPlan, params: Mapping[str, Any], facts: Mapping[str, Any]
) -> tuple[bool, bool]:
    """(the schema holds, no bound parameter contradicts the facts held)."""
    schema_ok = Draft202012Validator(schema_of(plan)).is_valid(dict(params))
    facts_ok = all(
        fact in facts and same(params[param], facts[fact])
        for param, fact in plan.bound
        if param in params
    )
    return schema_ok, facts_ok


@dataclass(frozen=True)
class Expected:
    route: str
    tool: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    ask_for: tuple[str, ...] = ()
    evidence: bool = False
    missing: tuple[str, ...] = ()
    gate_refused: bool = False


def expected_decision(
    policy: StepPolicy,
    facts: Mapping[str, Any],
    loaded: bool,
    tools: Mapping[str, ToolPlan],
) -> Expected:
    """Answer on evidence; call the policy's tool when every slot it needs is held and
    the gate would pass its parameters; otherwise ask for what is missing."""
    evidence = loaded and any(fnmatch.fnmatchcase(ITEM, p) for p in policy.evidence)
    resolved = {
        slot.name: next(
            (facts[s] for s in slot.sources if facts.get(s) is not None and facts[s] != ""), None
        )
        for slot in policy.slots
    }
    missing = tuple(name for name, value in resolved.items() if value is None)
    if evidence:
        return Expected("answer", evidence=True, missing=missing)
    if policy.tool is not None and policy.tool in tools:
        lacking = tuple(
            dict.fromkeys(s for s in policy.tool_params.values() if resolved[s] is None)
        )
        if lacking:
            return Expected("ask", ask_for=lacking, missing=lacking)
        params = {param: resolved[slot] for param, slot in policy.tool_params.items()}
        if all(expected_gate(tools[policy.tool], params, facts)):
            return Expected("tool", policy.tool, params, missing=missing)
        # Refused: ask for what feeds the tool's parameters.
        feeding = tuple(dict.fromkeys(policy.tool_params.values()))
        return Expected(
            "ask", ask_for=missing or feeding or ("details",), missing=missing, gate_refused=True
        )
    return Expected("ask", ask_for=missing or ("details",), missing=missing)


def scenario_secrets(n: int) -> tuple[str, str]:
    """The key and the email scenario ``n`` plants in its tools' errors and params."""
    return f"sk_live_{n:06d}abcdefghijklmnopqrstuv", f"ops{n}@corp{n}.example"


# -- the harness ------------------------------------------------------------------------


@dataclass
class Run:
    tool: str
    params: dict[str, Any]
    chain: Chain | None


@dataclass
class Chain:
    """One call and its fallbacks: what it may run, with which params, on what facts."""

    origin: Literal["call", "confirm"]
    first: str
    params: dict[str, Any]
    facts: Mapping[str, Any]
    card: str
    pending_id: str | None = None
    attempts: list[tuple[str, bool]] = field(default_factory=list)


@dataclass
class Card:
    id: str
    facts: Mapping[str, Any]
    decision_tool: str | None
    decision_params: Mapping[str, Any]


@dataclass
class Pending:
    id: str
    chain: Chain


@dataclass
class World:
    """One scenario as the harness sees it."""

    n: int
    tenant: str
    sid: str
    intent: str
    plans: dict[str, ToolPlan]
    names: list[str]
    ghost: str
    secret: str
    email: str
    remote: dict[str, Any] = field(default_factory=dict)
    left: dict[str, int] = field(default_factory=dict)
    """The model's count of failures each tool has left."""
    entity: str | None = None
    l2: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The API responses cached, by the id they were cached under."""
    cards: list[Card] = field(default_factory=list)
    later: list[Pending] = field(default_factory=list)
    confirmed: set[str] = field(default_factory=set)


class Harness:
    """Runs scenarios on one engine; checks every step; keeps the counts."""

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine
        self.stats: Counter[str] = Counter()
        self.runs: list[Run] = []
        self.error_secrets: list[str] = []
        self.param_secrets: list[str] = []
        self.tenants: list[str] = []
        self._active: Chain | None = None
        self._n = 0

    # -- one scenario -----------------------------------------------------------------

    def run(self, scenario: Scenario) -> None:
        self.runs.clear()  # what a failed (shrinking) example left
        note(repr(scenario))
        world = self._setup(scenario)
        self.stats["scenarios"] += 1
        for step in scenario.steps:
            self._step(world, scenario, step)
        for pending in world.later:
            self._answer(world, pending, "confirm" if scenario.late_confirm else "reject")
        self._check_runs(world)

    def _setup(self, scenario: Scenario) -> World:
        n = self._n
        self._n += 1
        names = [f"x{n}t{i}" for i in range(len(scenario.tools))]
        world = World(
            n=n,
            tenant=f"ten{n}",
            sid=f"s{n}",
            intent=f"x{n}step",
            plans=dict(zip(names, scenario.tools, strict=True)),
            names=names,
            ghost=f"x{n}ghost",
            secret=scenario_secrets(n)[0],
            email=scenario_secrets(n)[1],
        )
        self.tenants.append(world.tenant)
        self.error_secrets += [world.secret, world.email]
        l2 = (L2Need("api", ENDPOINT, {"id": "$last_entity_id"}, label=ITEM),)
        self.engine.register_intent(
            IntentSpec(
                world.intent,
                l1=("session_id", "user_id", "current_step", "last_entity_id"),
                l2=l2 if scenario.l2_need else (),
            )
        )
        if scenario.policy is not None:
            self.engine.register_policy(self._policy(world, scenario.policy))
        for name, plan in world.plans.items():
            spec = ToolSpec(
                name,
                "fuzzed",
                schema_of(plan),
                risk=plan.risk,
                high_impact=plan.high_impact,
                alternatives=tuple(
                    world.ghost if i < 0 else world.names[i] for i in plan.alternatives
                ),
                bound=dict(plan.bound),
            )
            function = self._function(world, name, plan)
            world.left[name] = plan.failures
            if plan.remote:
                world.remote[name] = function
                self.engine.register_tool(spec)
            else:
                self.engine.register_tool(spec, function)
        self.engine.start_session(scenario.user, "help", tenant=world.tenant, session_id=world.sid)
        return world

    def _policy(self, world: World, plan: PolicyPlan) -> StepPolicy:
        tool = (
            None if plan.tool is None else world.ghost if plan.tool < 0 else world.names[plan.tool]
        )
        return StepPolicy(
            world.intent,
            risk=plan.risk,
            evidence=plan.evidence,
            slots=tuple(Slot(name, sources, f"Which {name}?") for name, sources in plan.slots),
            tool=tool,
            tool_params=dict(plan.tool_params) if tool is not None else {},
        )

    def _function(self, world: World, name: str, plan: ToolPlan) -> Any:
        left = {"n": plan.failures}

        def run(params: Mapping[str, Any]) -> Any:
            self.runs.append(Run(name, copy.deepcopy(dict(params)), self._active))
            if plan.mutates:
                with contextlib.suppress(TypeError):  # a read-only mapping stays as it is
                    cast(Any, params)["device"] = "D9"
            if left["n"] > 0:
                left["n"] -= 1
                raise ConnectionError(
                    f"upstream 503 from {name}: api_key={world.secret} (on call for {world.email})"
                )
            return {"ok": True, "tool": name}

        return run

    # -- one step ---------------------------------------------------------------------

    @staticmethod
    def _truth(world: World, scenario: Scenario, given: str | None) -> tuple[dict[str, Any], bool]:
        """The facts the session holds, from the harness's own record of it; and
        whether the L2 item is loaded."""
        facts: dict[str, Any] = {"l1.user_id": scenario.user}
        if world.entity is not None:
            facts["l1.last_entity_id"] = world.entity
        content = world.l2.get(world.entity or "") if scenario.l2_need else None
        if content is not None:
            facts[f"l2.{ITEM}"] = content
            facts.update({f"l2.{ITEM}.{k}": v for k, v in content.items()})
        if given is not None:
            facts["given.device"] = given
        return facts, content is not None

    def _step(self, world: World, scenario: Scenario, step: StepPlan) -> None:
        if step.entity is not None:
            entity = step.entity
            self.engine.update_session(world.sid, lambda s: s.with_entity(entity))
            world.entity = entity
        if step.l2 is not None:
            under = (world.entity or "") if step.l2.for_entity else "D7"
            device = step.l2.device or world.entity or "D1"
            content = {"device": device, "owner": step.l2.owner, "limit": step.l2.limit}
            self.engine.working(world.sid).put_api_response(ENDPOINT, {"id": under}, content)
            world.l2[under] = content
        facts, loaded = self._truth(world, scenario, step.given_device)
        bundle = self.engine.route(world.sid, world.intent)
        given = None if step.given_device is None else {"device": step.given_device}
        decision = self.engine.decide(world.sid, bundle, given=given)
        policy = (
            self._policy(world, scenario.policy)
            if scenario.policy is not None
            else StepPolicy(world.intent, evidence=(ITEM,) if scenario.l2_need else ("*",))
        )
        expected = expected_decision(policy, facts, loaded, world.plans)
        self.stats[f"route_{decision.route}"] += 1
        assert decision.route == expected.route, (decision.as_dict(), expected)
        if expected.route == "tool":
            assert decision.tool == expected.tool
            assert same(dict(decision.params), dict(expected.params))
        if expected.route == "ask":
            assert decision.ask_for == expected.ask_for, (decision.as_dict(), expected)
            if expected.gate_refused:
                self.stats["asked_after_gate_refused"] += 1
            assert len(decision.questions) == len(decision.ask_for)
        if not expected.evidence and expected.missing and expected.route != "tool":
            # (6) key information is missing and nothing answers the step: ask for it.
            assert decision.route == "ask" and set(expected.missing) <= set(decision.ask_for)
            self.stats["asked_for_missing"] += 1
        card = Card(decision.card_id, facts, decision.tool, dict(decision.params))
        world.cards.append(card)
        for action in step.actions:
            self._act(world, card, action)

    # -- tool calls -------------------------------------------------------------------

    def _act(self, world: World, card: Card, action: ActionPlan) -> None:
        target = action.target
        if target == "stale" and len(world.cards) > 1:
            card = world.cards[-2]
        if target == "decision" and card.decision_tool is None:
            target = "tool"
        if target == "ghost":
            with self._running(None):
                try:
                    self.engine.call_tool(
                        card.id, tenant=world.tenant, tool=world.ghost, params={"device": "D1"}
                    )
                except NotFoundError:
                    self.stats["ghost_refused"] += 1
                else:
                    raise AssertionError("a tool nobody registered was called")
            return
        if target == "decision":
            assert card.decision_tool is not None
            name = card.decision_tool
            params = copy.deepcopy(dict(card.decision_params))
            call_params: dict[str, Any] | None = None
        else:
            name = world.names[action.tool]
            params = self._params(world, world.plans[name], card.facts, action)
            call_params = params
        plan = world.plans[name]
        chain = Chain("call", name, params, card.facts, card.id)
        schema_ok, facts_ok = expected_gate(plan, params, card.facts)
        self.stats["calls"] += 1
        before = len(self.runs)
        with self._running(chain):
            outcome = self.engine.call_tool(
                card.id,
                tenant=world.tenant,
                tool=None if call_params is None else name,
                params=call_params,
            )
        self._no_secret_in(world, outcome)
        if not (schema_ok and facts_ok):
            # (3) a blocked call never runs.
            assert outcome.outcome == "blocked", (outcome, params, card.facts)
            assert len(self.runs) == before
            self.stats["blocked"] += 1
            self.stats["blocked_by_schema" if not schema_ok else "blocked_by_facts"] += 1
            return
        if plan.risky:
            assert outcome.outcome == "pending_confirmation", outcome
            assert outcome.pending_id is not None and len(self.runs) == before
            self.stats["pending"] += 1
            self._respond(world, Pending(outcome.pending_id, chain), action.answer)
            return
        self._follow(world, chain, outcome, before)

    def _params(
        self, world: World, plan: ToolPlan, facts: Mapping[str, Any], action: ActionPlan
    ) -> dict[str, Any]:
        """The params an agent would send, from the facts, then fuzzed."""
        bound = dict(plan.bound)
        defaults: dict[str, Any] = {"device": "D1", "owner": "U1", "limit": 5, "note": "hi"}
        params = {
            p: facts.get(bound[p], defaults[p]) if p in bound else defaults[p] for p in plan.params
        }
        if "device" in params and "device" not in bound:
            params["device"] = facts.get("l1.last_entity_id", "D1")
        chosen = plan.params[action.pick % len(plan.params)]
        fuzz = action.fuzz
        self.stats[f"fuzz_{fuzz}"] += 1
        if fuzz == "other_device":
            held = params.get("device", "D1")
            params["device"] = DEVICES[(DEVICES.index(held) + 1) % 3] if held in DEVICES else "D2"
        elif fuzz == "other_owner":
            params["owner"] = "U2" if params.get("owner") == "U1" else "U1"
        elif fuzz == "wrong_type":
            params[chosen] = {"device": 7, "owner": ["U1"], "limit": "5", "note": None}[chosen]
        elif fuzz == "extra":
            params["extra_field"] = "x"
        elif fuzz == "missing":
            params.pop(chosen, None)
        elif fuzz == "secret":
            params["note"] = f"token={world.secret}, mail {world.email}"
            self.param_secrets += [world.secret, world.email]
        elif fuzz == "secret_device":
            params["device"] = f"{world.email} {world.secret}"
            self.param_secrets += [world.secret, world.email]
        elif fuzz == "bool_limit":
            params["limit"] = bool(facts.get(f"l2.{ITEM}.limit", 1))
        elif fuzz == "float_limit":
            params["limit"] = float(params.get("limit", 5))
        return params

    def _respond(self, world: World, pending: Pending, answer: Answer) -> None:
        if answer == "ignore":
            self.stats["ignored"] += 1
        elif answer == "later":
            world.later.append(pending)
        elif answer == "intruder":
            with self._running(None):
                try:
                    self.engine.confirm_tool(pending.id, tenant=f"{world.tenant}x", confirmed=True)
                except NotFoundError:
                    self.stats["intruder_refused"] += 1
                else:
                    raise AssertionError("another tenant confirmed the call")
            self._answer(world, pending, "confirm")
        elif answer == "twice":
            self._answer(world, pending, "confirm")
            with self._running(None):
                try:
                    self.engine.confirm_tool(pending.id, tenant=world.tenant, confirmed=True)
                except NotFoundError:
                    self.stats["second_confirm_refused"] += 1
                else:
                    raise AssertionError("one confirmation ran the call twice")
        else:
            self._answer(world, pending, answer)

    def _answer(self, world: World, pending: Pending, answer: Literal["confirm", "reject"]) -> None:
        before = len(self.runs)
        if answer == "reject":
            with self._running(None):
                outcome = self.engine.confirm_tool(pending.id, tenant=world.tenant, confirmed=False)
            assert outcome.outcome == "rejected" and len(self.runs) == before
            self.stats["rejected"] += 1
            return
        held = pending.chain
        chain = Chain("confirm", held.first, held.params, held.facts, held.card, pending.id)
        world.confirmed.add(pending.id)
        self.stats["confirmed"] += 1
        with self._running(chain):
            outcome = self.engine.confirm_tool(pending.id, tenant=world.tenant, confirmed=True)
        self._follow(world, chain, outcome, before)

    def _follow(self, world: World, chain: Chain, outcome: ToolOutcome, before: int) -> None:
        """Check an outcome against the model's, then drive a remote chain to its end."""
        self._no_secret_in(world, outcome)
        self._check_outcome(world, chain, outcome, self._advance(world, chain), before)
        for _ in range(MAX_REPORTS):
            if outcome.outcome != "approved":
                break
            self.stats["approved"] += 1
            before = len(self.runs)
            ok, error = self._run_remote(world, chain, outcome.tool)
            expected = ("done", outcome.tool, []) if ok else self._advance(world, chain)
            with self._running(chain):
                outcome = self.engine.report_tool_result(
                    chain.card, tenant=world.tenant, tool=outcome.tool, ok=ok, error=error
                )
            self._no_secret_in(world, outcome)
            self._check_outcome(world, chain, outcome, expected, before + 1)
        else:
            raise AssertionError("a remote chain did not end")
        self.stats[outcome.outcome] += 1
        if outcome.fallbacks:
            self.stats["fallbacks"] += 1
        if outcome.outcome == "cannot_complete":
            # (5) retried once, then the alternatives, then an honest "cannot complete".
            assert outcome.message == CANNOT_COMPLETE
            self.stats["failed_attempts_before_cannot_complete"] += len(outcome.attempts)

    def _run_remote(self, world: World, chain: Chain, tool: str) -> tuple[bool, str]:
        """Run an approved remote tool as its caller would: with the call's params."""
        with self._running(chain):
            try:
                world.remote[tool](copy.deepcopy(chain.params))
            except ConnectionError as exc:
                ok, error = False, str(exc)
            else:
                ok, error = True, ""
        assert self._consume(world, tool) == ok
        chain.attempts.append((tool, ok))
        return ok, error

    def _consume(self, world: World, tool: str) -> bool:
        if world.left[tool] > 0:
            world.left[tool] -= 1
            return False
        return True

    def _next(self, world: World, chain: Chain) -> str | None:
        """The fallback chain: the tool, retried once, then each alternative that is
        registered, passes the same gate and needs no confirmation, each retried once."""
        order = [chain.first]
        alternatives = world.plans[chain.first].alternatives
        for alternative in (world.names[i] if i >= 0 else world.ghost for i in alternatives):
            plan = world.plans.get(alternative)
            if alternative in order or plan is None or plan.risky:
                continue
            if all(expected_gate(plan, chain.params, chain.facts)):
                order.append(alternative)
        tried = Counter(tool for tool, _ in chain.attempts)
        return next((tool for tool in order if tried[tool] < 2), None)

    def _advance(self, world: World, chain: Chain) -> tuple[str, str, Sequence[str]]:
        """What the engine should do next: the local tools it runs, and how it ends."""
        ran: list[str] = []
        while True:
            tool = self._next(world, chain)
            if tool is None:
                return "cannot_complete", chain.first, ran
            if world.plans[tool].remote:
                return "approved", tool, ran
            ran.append(tool)
            ok = self._consume(world, tool)
            chain.attempts.append((tool, ok))
            if ok:
                return "done", tool, ran
            self.stats["local_failures"] += 1

    def _check_outcome(
        self,
        world: World,
        chain: Chain,
        outcome: ToolOutcome,
        expected: tuple[str, str, Sequence[str]],
        before: int,
    ) -> None:
        """The local tools that ran, how the chain ended, and the card that says so."""
        actual = [run.tool for run in self.runs[before:]]
        assert actual == list(expected[2]), (actual, expected, outcome)
        assert (outcome.outcome, outcome.tool) == expected[:2], (outcome, expected)
        assert [(a.tool, a.ok) for a in outcome.attempts] == chain.attempts
        card = self.engine.trace_card(chain.card, tenant=world.tenant)
        assert (card.tool, card.tool_outcome) == (chain.first, outcome.outcome)
        assert [(a["tool"], a["ok"]) for a in card.attempts] == chain.attempts
        assert card.fallbacks == tuple(
            dict.fromkeys(t for t, _ in chain.attempts if t != chain.first)
        )

    @contextmanager
    def _running(self, chain: Chain | None) -> Iterator[None]:
        self._active = chain
        try:
            yield
        finally:
            self._active = None

    # -- the invariants -----------------------------------------------------------------

    def _no_secret_in(self, world: World, outcome: ToolOutcome) -> None:
        text = json.dumps(
            {"message": outcome.message, "attempts": [a.error for a in outcome.attempts]}
        )
        assert world.secret not in text and world.email not in text

    def _check_runs(self, world: World) -> None:
        """(1) and (2) over every run of the scenario."""
        for run in self.runs:
            plan = world.plans[run.tool]
            chain = run.chain
            assert chain is not None, f"{run.tool} ran outside any call"
            self.stats["runs"] += 1
            if plan.risky:
                # (1) a high-impact call runs only in the chain of its own confirmation.
                assert chain.origin == "confirm" and chain.first == run.tool, run
                assert chain.pending_id in world.confirmed
                self.stats["risky_runs_confirmed"] += 1
            # (2) what ran is what was called, and agrees with the schema and the facts.
            assert same(run.params, chain.params), (run, chain.params)
            assert all(expected_gate(plan, run.params, chain.facts)), (run, chain.facts)
            if plan.bound:
                self.stats["bound_runs_checked"] += 1
        self.runs.clear()

    def check_storage(self) -> None:
        """(4) no secret from a tool error or a call's params in any card or in Valkey."""
        secrets = set(self.error_secrets) | set(self.param_secrets)
        cards = 0
        for tenant in self.tenants:
            for card in self.engine.trace_cards(tenant=tenant, limit=10_000):
                text = json.dumps(card.as_dict())
                cards += 1
                leaked = [s for s in secrets if s in text]
                assert not leaked, (leaked, card.as_dict())
        client = cast(Any, self.engine.parts).working_memory.backend.client
        entries = valkey_entries(client)
        keys = len(entries)
        for key, value in entries.items():
            leaked = [s for s in secrets if s in f"{key} {value}"]
            assert not leaked, (leaked, key)
        self.stats["cards_scanned"] = cards
        self.stats["valkey_keys_scanned"] = keys
        self.stats["secrets_checked"] = len(secrets)
