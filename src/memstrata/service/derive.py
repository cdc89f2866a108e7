"""The wire models derived from the domain types, so that a field is declared once.

Each :class:`Derived` names a domain dataclass and how its wire model differs from it
(fields left out, renamed, typed otherwise, properties and wire-only fields added);
every other field, its type and its default come from the dataclass. A field added
to a domain type is on the wire after ``python -m memstrata.service.derive``.

The models are generated into :mod:`memstrata.service.wire_derived`, like the client's
methods and the ``.proto``, rather than built at import: the domain types live in
modules that import the storage stack, and the client imports the wire models but
never the engine. A test fails when the file is stale.

A field's wire type follows its type hint: ``tuple[X, ...]`` and sequences are lists,
mappings are dicts, ``Any`` is ``JsonValue``, a nested domain type is its wire model.
Its default is the dataclass's (``()`` is ``[]``); a field that may be None defaults
to None, because :func:`memstrata.service.wire.dump` leaves None out. Properties and
wire-only fields are required unless they may be None (None) or are lists (``[]``).
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memstrata.context.values import (
    AdmittedItem,
    BuiltContext,
    ChatMessage,
    DroppedItem,
    SectionUsage,
    Turn,
)
from memstrata.decision.cards import TraceCard
from memstrata.decision.consistency import ReplyCheck
from memstrata.decision.decide import Decision, UsedContext
from memstrata.decision.judgment import Judgment
from memstrata.decision.tools import Attempt, Check, GateVerdict, ToolOutcome
from memstrata.feedback.events import FeedbackReceipt
from memstrata.feedback.report import FeedbackReport, IgnoredMemory, IntentStats, QuestionStats
from memstrata.knowledge.ingest import FileError, IngestReport
from memstrata.memory.episodes import Episode
from memstrata.memory.listing import FactHistory, ListedMemory, MemoryPage, UserSummary
from memstrata.memory.units import Dispute, MemoryUnit, UnitSource
from memstrata.retrieval.results import RetrievalResult, RetrievedItem
from memstrata.retrieval.timeexpr import TimeWindow
from memstrata.router.bundle import ContextBundle, ContextItem, MissingContext
from memstrata.router.recognize import Entity, Recognition
from memstrata.service.auth import CreatedKey, KeyInfo
from memstrata.session.state import ApiResultRef, TraceEntry, TurnRef
from memstrata.sharing.items import StoreItem
from memstrata.sharing.namespaces import AccessRequest, Namespace, SharedItem
from memstrata.upkeep.forget import ForgetReport
from memstrata.working.values import Preference, WorkingItem, WorkingKey
from memstrata.write.submit import WriteReceipt

TARGET = Path(__file__).with_name("wire_derived.py")
REST = "..."
"""In :attr:`Derived.order`: the domain's fields not named elsewhere, in their order."""
TENANT = "the tenant is the caller's key's, never a field"


@dataclass(frozen=True, slots=True)
class Derived:
    """One wire model derived from one domain dataclass."""

    name: str
    domain: type[Any]
    doc: str = ""
    """The model's docstring (its description in OpenAPI and the MCP schemas)."""
    why: str = ""
    """One line: how and why the wire differs from the domain type, if it does."""
    exclude: tuple[str, ...] = ()
    """Domain fields kept off the wire."""
    rename: Mapping[str, str] = field(default_factory=dict)
    """Domain field -> its wire name."""
    types: Mapping[str, str] = field(default_factory=dict)
    """Wire field -> its annotation, where the wire's type differs from the domain's."""
    extra: Mapping[str, str] = field(default_factory=dict)
    """Wire-only fields (the converter gives them) -> their annotations."""
    order: tuple[str, ...] = ()
    """The wire's field order where it differs from the domain's (wire names; a
    property of the domain type is named here to be on the wire; :data:`REST` stands
    for the other domain fields, which otherwise follow)."""

    def sources(self) -> dict[str, str | None]:
        """Wire field -> the domain attribute it reads (None: given by the converter)."""
        names = [f.name for f in dataclasses.fields(self.domain) if f.name not in self.exclude]
        by_wire = {self.rename.get(n, n): n for n in names}
        order = list(self.order) if REST in self.order else [*self.order, REST]
        placed = set(order)
        out: dict[str, str | None] = {}
        for name in order:
            if name == REST:
                out.update((w, d) for w, d in by_wire.items() if w not in placed)
            elif name in self.extra:
                out[name] = None
            elif name in by_wire:
                out[name] = by_wire[name]
            elif isinstance(getattr(self.domain, name, None), property):
                out[name] = name
            else:
                raise TypeError(f"{self.name}.{name} is no field or property of the domain")
        return out


# Explicit wire shapes (in :mod:`memstrata.service.wire_base`) of nested domain types.
SHAPES: Mapping[type[Any], str] = {
    RetrievedItem: "RetrievedOut",
    ContextItem: "BundleItemOut",
    AdmittedItem: "ContextEntryOut",
    DroppedItem: "ContextEntryOut",
    Turn: "TurnIn",
}

DERIVED: tuple[Derived, ...] = (
    # -- sessions: the parts of a session's L1 state ----------------------------------
    Derived("ApiResultOut", ApiResultRef),
    Derived("TraceEntryOut", TraceEntry),
    Derived("TurnRefOut", TurnRef),
    # -- long-term writes ---------------------------------------------------------------
    Derived(
        "EpisodeOut",
        Episode,
        why="what was said and when; the write's bookkeeping stays inside",
        exclude=("tenant", "user", "source", "turn_id", "thread", "seq"),
    ),
    Derived("DisputeOut", Dispute),
    Derived(
        "FactOut",
        MemoryUnit,
        why="a stored fact (it has an id), without its retention and provenance bookkeeping",
        exclude=(
            "source",
            "observed_at",
            "valid_to",
            "importance",
            "pinned",
            "last_accessed",
            "access_count",
            "extras",
            "derived_from",
            "superseded_by",
            "feedback_applied",
        ),
        types={"id": "str"},
        order=("id", "kind", "subject", "attribute", "value", "version", "active", "valid_from"),
    ),
    Derived(
        "Receipt",
        WriteReceipt,
        doc="What observe/remember queued; with ``wait``, what was stored.",
        why="the queue's entries stay inside; with ``wait``, the episodes and facts written",
        exclude=("entry_ids", "chunks", "session_id", "turn_id"),
        extra={"episodes": "list[EpisodeOut]", "facts": "list[FactOut]"},
        order=("queued", "episode_ids", "error", "episodes", "facts"),
    ),
    Derived("ForgetResult", ForgetReport, why=TENANT, exclude=("tenant",)),
    # -- listing: what a person browsing memory reads -----------------------------------
    Derived("UnitSourceOut", UnitSource, why=TENANT, exclude=("tenant",)),
    Derived(
        "StoredFactOut",
        MemoryUnit,
        doc="One stored version of a fact or event, every field: validity, marks,\n"
        "importance, feedback state and provenance.",
        why="its verbatim values (extras) are in its text already",
        exclude=("extras",),
        types={"id": "str"},
        order=("id", "kind", "subject", "attribute", "value", "version", "active", REST),
    ),
    Derived("EpisodeRecordOut", Episode, why=TENANT, exclude=("tenant",)),
    Derived("PreferenceOut", Preference),
    Derived(
        "ListedMemoryOut",
        ListedMemory,
        doc="One unit of a user's memory as every layer holds it: the episode or the\n"
        "fact, the facts it gave or the episodes it came from, the L2 slot's verdict.",
        types={
            "episode": "EpisodeRecordOut | None",
            "fact": "StoredFactOut | None",
            "facts": "list[StoredFactOut]",
            "episodes": "list[EpisodeRecordOut]",
        },
    ),
    Derived("MemoryPageOut", MemoryPage, doc="A page of memories, newest first."),
    Derived("FactHistoryOut", FactHistory, doc="Every version of a fact, oldest first."),
    Derived("UserSummaryOut", UserSummary),
    # -- retrieval ----------------------------------------------------------------------
    Derived("TimeWindowOut", TimeWindow),
    Derived(
        "RetrievalOut",
        RetrievalResult,
        why="the routes that ran are the retriever's plan, not part of the result",
        exclude=("routes",),
    ),
    # -- routing and context ------------------------------------------------------------
    Derived("EntityOut", Entity),
    Derived(
        "RecognitionOut",
        Recognition,
        doc="The intent recognized from a message sent without one, and its entities.",
    ),
    Derived("MissingOut", MissingContext),
    Derived(
        "Bundle",
        ContextBundle,
        doc="``ContextBundle``: every item with its provenance, and what was missing.",
        why="its session id is the one the caller knows (without the tenant)",
    ),
    Derived("ChatMessageOut", ChatMessage),
    Derived("SectionOut", SectionUsage),
    Derived(
        "BuiltContextOut",
        BuiltContext,
        doc="The step's model call: its messages, and the accounting of what went in.",
        rename={"chat": "messages"},
    ),
    # -- working memory (L2) ------------------------------------------------------------
    Derived("WorkingItemOut", WorkingItem),
    Derived("WorkingKeyOut", WorkingKey, rename={"kind": "type"}),
    # -- knowledge ----------------------------------------------------------------------
    Derived("FileErrorOut", FileError),
    Derived(
        "IngestReportOut",
        IngestReport,
        why="the run's duration is the server's timing, not part of the report",
        exclude=("duration_s",),
    ),
    # -- shared namespaces and the item store -------------------------------------------
    Derived(
        "NamespaceOut",
        Namespace,
        why=TENANT,
        exclude=("tenant",),
        rename={"name": "namespace"},
    ),
    Derived("AccessRequestOut", AccessRequest),
    Derived("SharedItemOut", SharedItem),
    Derived("StoreItemOut", StoreItem),
    # -- API keys -----------------------------------------------------------------------
    Derived("KeyOut", KeyInfo),
    Derived(
        "CreatedKeyOut",
        CreatedKey,
        doc="``key`` is shown this once; only its hash is stored.",
    ),
    # -- decisions ----------------------------------------------------------------------
    Derived("JudgmentOut", Judgment),
    Derived("UsedContextOut", UsedContext),
    Derived(
        "DecisionOut",
        Decision,
        doc="The decision, its judgment, the context it rests on and its trace card id.",
        why="with the bundle it was decided on",
        extra={"bundle": "Bundle"},
        order=(
            "route",
            "intent",
            "risk",
            "confidence",
            "threshold",
            "tool",
            "params",
            "ask_for",
            "questions",
            "reasons",
            "judgment",
            "used",
            "card_id",
            "bundle",
        ),
    ),
    Derived("GateCheckOut", Check),
    Derived("GateVerdictOut", GateVerdict),
    Derived("AttemptOut", Attempt),
    Derived(
        "ToolOutcomeOut",
        ToolOutcome,
        doc="done, approved (run it yourself), pending_confirmation, rejected, blocked or\n"
        "cannot_complete; with every gate verdict and attempt.",
        order=(REST, "fallbacks", "message"),
    ),
    Derived("ReplyCheckOut", ReplyCheck, order=("consistent", "regenerate", REST, "effective")),
    Derived(
        "TraceCardOut",
        TraceCard,
        doc="One decision, as an operator reads it back.",
        why=f"{TENANT}; the session id is the caller's, the time a datetime",
        exclude=("tenant",),
        types={
            "at": "datetime",
            "confirmation_at": "datetime | None",
            "gate": "list[GateVerdictOut]",
            "attempts": "list[AttemptOut]",
            "entities": "list[EntityOut]",
        },
        # Fields added later go last: their gRPC field numbers follow the existing ones.
        order=(
            REST,
            "effective",
            "flags",
            "l3_skip_reason",
            "dense_skip_reason",
            "detected_intent",
            "intent_confidence",
            "intent_fell_back",
            "entities",
            "confirmation",
            "confirmation_by",
            "confirmation_at",
        ),
    ),
    Derived(
        "FeedbackReceiptOut",
        FeedbackReceipt,
        why="the queue's entry ids stay inside",
        exclude=("entry_ids",),
    ),
    Derived("QuestionStatsOut", QuestionStats, order=(REST, "miss_rate")),
    Derived("IntentStatsOut", IntentStats, order=(REST, "misses", "miss_rate", "questions")),
    Derived("IgnoredMemoryOut", IgnoredMemory),
    Derived(
        "FeedbackReportOut",
        FeedbackReport,
        doc="Which query types keep missing the right memory, and which memories are\n"
        "retrieved but ignored.",
        why=f"{TENANT}; the window is the request's",
        exclude=("tenant", "since"),
        order=("events", "by_kind", "corrected_share", REST),
    ),
)

BY_NAME: Mapping[str, Derived] = {d.name: d for d in DERIVED}
# A domain type with two wire models is the first's where it nests (the second names
# its nested types explicitly).
MODELS: Mapping[type[Any], str] = {
    **SHAPES,
    **{d.domain: d.name for d in reversed(DERIVED)},
}

_SEQUENCES = (tuple, list, Sequence)
_MAPPINGS = (dict, Mapping, types.MappingProxyType)


def annotation(hint: Any) -> str:
    """A domain type hint as the wire annotation's source text."""
    if hint is Any:
        return "JsonValue"
    if hint is type(None):
        return "None"
    if hint in (str, int, float, bool):
        return str(hint.__name__)
    if hint is datetime:
        return "datetime"
    if hint in MODELS:
        return MODELS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return "Literal[" + ", ".join(json.dumps(a) for a in args) + "]"
    if origin in (typing.Union, types.UnionType):
        parts = [annotation(a) for a in args if a is not type(None)]
        return " | ".join([*dict.fromkeys(parts), *(["None"] if type(None) in args else [])])
    if origin in _SEQUENCES:
        return f"list[{annotation(args[0])}]"
    if origin in _MAPPINGS:
        return f"dict[{annotation(args[0])}, {annotation(args[1])}]"
    raise TypeError(f"no wire type for {hint!r}")


def _nullable(text: str) -> bool:
    return text == "JsonValue" or text.endswith("| None")


def _default(text: str, domain_field: dataclasses.Field[Any] | None) -> str | None:
    """The default's source text (None: required)."""
    if domain_field is None:  # a property or a wire-only field
        if _nullable(text):
            return "None"
        return "[]" if text.startswith("list[") else None
    if domain_field.default is not dataclasses.MISSING:
        value = domain_field.default
        if value is None:
            return "None" if _nullable(text) else None
        return repr(list(value)) if isinstance(value, tuple) else repr(value)
    if domain_field.default_factory is not dataclasses.MISSING:
        made = domain_field.default_factory()
        return "{}" if isinstance(made, Mapping) else "[]"
    return "None" if _nullable(text) else None


@dataclass(frozen=True, slots=True)
class WireField:
    """One field of a derived model: its name, annotation and default (source text)."""

    name: str
    annotation: str
    default: str | None


def wire_fields(spec: Derived) -> Iterator[WireField]:
    """The fields of ``spec``'s model, in order."""
    hints = typing.get_type_hints(spec.domain)
    by_name = {f.name: f for f in dataclasses.fields(spec.domain)}
    for name, source in spec.sources().items():
        domain_field = by_name.get(source) if source is not None else None
        if name in spec.types:
            text = spec.types[name]
        elif source is None:
            text = spec.extra[name]
        elif domain_field is not None:
            text = annotation(hints[source])
        else:  # a property
            fget = getattr(spec.domain, source).fget
            text = annotation(typing.get_type_hints(fget)["return"])
        yield WireField(name, text, _default(text, domain_field))


def _class_source(spec: Derived) -> str:
    domain = spec.domain.__qualname__
    note = f"# Derived from {domain}" + (f": {spec.why}." if spec.why else ".")
    lines = textwrap.wrap(note, 88, subsequent_indent="# ")
    lines.append(f"class {spec.name}(Wire):")
    if spec.doc:
        doc = spec.doc.replace("\n", "\n    ")
        lines += [f'    """{doc}"""', ""]
    for f in wire_fields(spec):
        default = "" if f.default is None else f" = {f.default}"
        lines.append(f"    {f.name}: {f.annotation}{default}")
    return "\n".join(lines) + "\n"


HEADER = '''"""Generated by ``python -m memstrata.service.derive`` from the domain types.

Do not edit: change the domain type, or its entry in ``memstrata.service.derive``,
and regenerate. :mod:`memstrata.service.wire` re-exports these models.
"""

# Pydantic copies a mutable default for each instance.
# ruff: noqa: RUF012

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import JsonValue

from memstrata.service.wire_base import (
    BundleItemOut,
    ContextEntryOut,
    RetrievedOut,
    TurnIn,
    Wire,
)

_ = (datetime, Literal, JsonValue, BundleItemOut, ContextEntryOut, RetrievedOut, TurnIn)
'''


def source() -> str:
    """The generated module's text."""
    classes = "\n\n".join(_class_source(spec) for spec in DERIVED)
    names = "".join(f'    "{spec.name}",\n' for spec in sorted(DERIVED, key=lambda d: d.name))
    return f"{HEADER}\n\n{classes}\n\n__all__ = [\n{names}]\n"


if __name__ == "__main__":  # pragma: no cover - regenerates the module
    import subprocess
    import sys

    TARGET.write_text(source())
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(TARGET)], check=False)
