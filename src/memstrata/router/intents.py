"""Step intents are data: each declares what it needs from each layer.

Registering a new intent never touches the router's code (the source design hard-codes
three branches; here they are three registrations in :data:`SEED_INTENTS`:
docs/architecture.md, "The reader").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from memstrata.errors import UnknownIntentError, ValidationError
from memstrata.retrieval.visibility import ACTIVE_MEMORY_TYPES
from memstrata.validation import check_id, check_positive_int, check_text

L2Kind = Literal["api", "result", "series", "pending", "preference"]
L3Collection = Literal["memories", "knowledge", "hot_knowledge"]

L1_FIELDS: frozenset[str] = frozenset(
    {
        "session_id",
        "user_id",
        "initial_query",
        "current_step",
        "last_entity_id",
        "last_api_result",
        "action_trace",
        "pointers",
    }
)
_L2_KINDS: frozenset[str] = frozenset({"api", "result", "series", "pending", "preference"})
_COLLECTIONS: frozenset[str] = frozenset({"memories", "knowledge", "hot_knowledge"})
_PLACEHOLDER = re.compile(r"\$(\w+)")
MAX_EXAMPLES = 200
MAX_EXAMPLE_CHARS = 500


@dataclass(frozen=True, slots=True)
class L2Need:
    """One L2 read. ``params`` values may be ``$<l1 field>`` (e.g. ``$last_entity_id``)."""

    kind: L2Kind
    name: str = ""
    """Endpoint, step id, metric or preference type (unused for ``pending``)."""
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    required: bool = False
    """A required miss raises ContextMissError; an optional one is listed in ``missing``."""
    label: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _L2_KINDS:
            raise ValidationError("l2.kind", f"must be one of {sorted(_L2_KINDS)}")
        if self.kind != "pending" and not self.name:
            raise ValidationError("l2.name", f"is required for kind {self.kind!r}")
        for value in self.params.values():
            for ref in _PLACEHOLDER.findall(value):
                if ref not in L1_FIELDS:
                    raise ValidationError("l2.params", f"unknown L1 field ${ref}")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @property
    def item_name(self) -> str:
        return self.label or f"l2_{self.kind}_{self.name}".rstrip("_")


@dataclass(frozen=True, slots=True)
class L3Need:
    """One L3 retrieval. ``query`` may use ``$last_entity_id``-style L1 fields;
    without it, the query passed to ``route()`` is used."""

    collection: L3Collection
    query: str | None = None
    k: int = 3
    types: tuple[str, ...] | None = None
    per_user: bool = True
    """Memories are per user; knowledge is shared within the tenant."""
    label: str | None = None

    def __post_init__(self) -> None:
        if self.collection not in _COLLECTIONS:
            raise ValidationError("l3.collection", f"must be one of {sorted(_COLLECTIONS)}")
        check_positive_int("l3.k", self.k, maximum=50)

    @property
    def item_prefix(self) -> str:
        return self.label or f"l3_{self.collection}"


@dataclass(frozen=True, slots=True)
class IntentSpec:
    """What one kind of step needs from L1, L2 and L3."""

    name: str
    l1: tuple[str, ...] = ("session_id", "user_id", "initial_query", "current_step")
    l2: tuple[L2Need, ...] = ()
    l3: tuple[L3Need, ...] = ()
    description: str = ""
    examples: tuple[str, ...] = ()
    """Messages a user might send for this intent, in any language (Chinese and English
    side by side work best): a message routed without a step intent is matched against
    them (:mod:`memstrata.router.recognize`). An intent without examples is recognized
    only by a configured model."""

    def __post_init__(self) -> None:
        check_id("intent.name", self.name)
        unknown = sorted(set(self.l1) - L1_FIELDS)
        if unknown:
            raise ValidationError("intent.l1", f"unknown L1 fields {unknown}")
        if isinstance(self.examples, str) or not isinstance(self.examples, tuple | list):
            raise ValidationError("intent.examples", "must be a sequence of strings")
        if len(self.examples) > MAX_EXAMPLES:
            raise ValidationError("intent.examples", f"at most {MAX_EXAMPLES} examples")
        for i, example in enumerate(self.examples):
            check_text(f"intent.examples[{i}]", example, max_chars=MAX_EXAMPLE_CHARS)
        object.__setattr__(self, "examples", tuple(self.examples))


class IntentRegistry:
    """Named intents; thread-safe registration and lookup."""

    def __init__(self, specs: Iterable[IntentSpec] = ()) -> None:
        self._lock = threading.Lock()
        self._specs: dict[str, IntentSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: IntentSpec, *, replace: bool = False) -> None:
        if not isinstance(spec, IntentSpec):
            raise ValidationError("spec", "must be an IntentSpec")
        with self._lock:
            if spec.name in self._specs and not replace:
                raise ValidationError("intent.name", f"{spec.name!r} is already registered")
            self._specs[spec.name] = spec

    def get(self, name: str) -> IntentSpec:
        if not isinstance(name, str):
            raise ValidationError("step_intent", f"must be a string, got {type(name).__name__}")
        with self._lock:
            spec = self._specs.get(name)
            known = tuple(self._specs)
        if spec is None:
            raise UnknownIntentError(name, known)
        return spec

    def names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self._specs))


SEED_INTENTS: tuple[IntentSpec, ...] = (
    IntentSpec(
        name="fetch_sensor_data",
        l1=("session_id", "user_id", "initial_query", "current_step", "last_entity_id"),
        l2=(
            L2Need("api", "sensor_api", {"device_id": "$last_entity_id"}, label="sensor_reading"),
            L2Need("series", "temperature", label="temperature_window"),
        ),
        description="read live sensor data for the current device",
        examples=(
            "Read the live sensor data.",
            "What is the sensor showing now?",
            "Get the current temperature reading of the device.",
            "读取实时传感器数据。",
            "设备现在的温度读数是多少？",
        ),
    ),
    IntentSpec(
        name="call_api",
        l1=("session_id", "user_id", "current_step", "last_entity_id", "last_api_result"),
        l2=(L2Need("api", "sensor_api", {"device_id": "$last_entity_id"}, label="api_cache"),),
        description="call a tool, reusing a cached response when present",
        examples=(
            "Call the API for this device.",
            "Run the tool again.",
            "调用一下这个接口。",
            "再执行一次这个工具。",
        ),
    ),
    IntentSpec(
        name="generate_report",
        l1=("session_id", "user_id", "initial_query", "current_step", "last_entity_id"),
        l2=(
            L2Need("result", "step5", label="analysis_result"),
            L2Need("preference", "report_format", label="report_preference"),
        ),
        l3=(
            L3Need("knowledge", query="report template", per_user=False, label="report_template"),
            L3Need("memories", k=3, label="user_memory"),
        ),
        description="write the report from the analysis, the template and the user's preferences",
        examples=(
            "Write the analysis report.",
            "Turn the results into a report.",
            "写分析报告。",
            "把分析结果写成报告。",
        ),
    ),
)


RESPOND = IntentSpec(
    name="respond",
    l1=("session_id", "user_id", "initial_query", "current_step"),
    l3=(L3Need("memories", k=8, label="memory"),),
    description="a chat reply: the session and the user's memories for their input",
    # Small talk and questions no task intent serves: a message closest to these (or
    # close to nothing) is answered as a plain chat turn.
    examples=(
        "Hello!",
        "Hey, nice to meet you.",
        "Thank you so much.",
        "Bye, see you later.",
        "What can you do?",
        "Say something funny.",
        "What's the population of Japan?",
        "Any ideas for dinner tonight?",
        "How's your day going?",
        "Sure, sounds good.",
        "Who wrote Hamlet?",
        "I'm bored.",
        "嗨，你好呀。",
        "非常感谢！",
        "再见，下次聊。",
        "你能做些什么？",
        "说点好玩的。",
        "日本有多少人口？",
        "今晚吃什么好呢？",
        "你今天过得怎么样？",
        "行，没问题。",
        "《哈姆雷特》是谁写的？",
        "好无聊啊。",
    ),
)
"""The general-purpose intent every engine registers: a plain chat agent calls
``route(session, "respond", user_input)`` without writing an intent first."""
DEFAULT_INTENTS: tuple[IntentSpec, ...] = (RESPOND,)


def resolve_placeholders(template: str, values: Mapping[str, object]) -> str:
    """Replace ``$field`` with the L1 value (empty string when unset)."""
    return _PLACEHOLDER.sub(
        lambda m: "" if values.get(m.group(1)) is None else str(values[m.group(1)]), template
    )


def active_only(spec: IntentSpec) -> IntentSpec:
    """``spec`` with its ``memories`` needs restricted to active units when unrestricted
    (:data:`~memstrata.retrieval.visibility.ACTIVE_MEMORY_TYPES`): superseded versions
    stay out of the agent's context. A need that names its own types keeps them (a
    caller may ask for history)."""
    needs = tuple(
        replace(need, types=ACTIVE_MEMORY_TYPES)
        if need.collection == "memories" and need.types is None
        else need
        for need in spec.l3
    )
    return spec if needs == spec.l3 else replace(spec, l3=needs)
