"""The base of the wire models: the ``Wire`` model, the bounded types requests use,
and the explicit shapes that derived models nest.

Imports only pydantic and :mod:`memstrata.errors`, so the client (which needs the
wire models, never the engine) stays light; :mod:`memstrata.service.wire` re-exports
everything here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError

from memstrata.errors import ValidationError
from memstrata.service.wire_fields import describe
from memstrata.validation import (
    DURATION_PATTERN,
    DURATION_REASON,
    ID_MAX_CHARS,
    ID_PATTERN,
    ID_REASON,
    NAME_MAX_CHARS,
    NAME_PATTERN,
    NAME_REASON,
    NONBLANK_PATTERN,
    STORE_LABEL_MAX_CHARS,
    STORE_LABEL_PATTERN,
    UUID_PATTERN,
)

# The constraints below are the server's own checks (memstrata.validation's patterns and
# limits), so the JSON schema states what the server accepts: a request it calls valid
# is not refused for its shape, and pydantic refuses the rest before anything runs.
Id = Annotated[str, Field(min_length=1, max_length=ID_MAX_CHARS, pattern=ID_PATTERN)]
"""An identifier the engine checks (``check_id``): it becomes part of keys and payloads."""
SessionId = Annotated[
    str,
    Field(min_length=1, max_length=ID_MAX_CHARS - NAME_MAX_CHARS - 1, pattern=ID_PATTERN),
]
"""A session id: the service keeps it as ``<tenant>@<id>``, one engine id."""
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX_CHARS, pattern=NAME_PATTERN)]
"""A tenant or agent name of an API key."""
Ref = Annotated[str, Field(min_length=1, max_length=256)]
"""A name the engine looks up but never stores as a key (a model, an endpoint, a job)."""
Uuid = Annotated[str, Field(pattern=UUID_PATTERN, json_schema_extra={"format": "uuid"})]
"""A memory id (a UUID)."""
Text = Annotated[str, Field(min_length=1, max_length=100_000, pattern=NONBLANK_PATTERN)]
ShortText = Annotated[str, Field(min_length=1, max_length=8_000, pattern=NONBLANK_PATTERN)]
Label = Annotated[
    str, Field(min_length=1, max_length=STORE_LABEL_MAX_CHARS, pattern=STORE_LABEL_PATTERN)
]
StoreNamespace = Annotated[list[Label], Field(min_length=1, max_length=32)]
StoreKey = Annotated[str, Field(min_length=1, max_length=1024)]
Risk = Literal["low", "medium", "high"]
JsonObject = dict[str, JsonValue]


class Wire(BaseModel):
    """Base of every wire model: unknown fields are errors, values are immutable, and
    every field of the JSON schema is described (its docstring, else
    :mod:`memstrata.service.wire_fields`)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, json_schema_extra=describe
    )


_NULL: dict[str, Any] = {"type": "null"}
_GIVEN: dict[str, Any] = {"not": _NULL}


def given(name: str) -> dict[str, Any]:
    """JSON schema: ``name`` is there and not null."""
    return {"required": [name], "properties": {name: _GIVEN}}


def exactly_one_of(*names: str) -> dict[str, Any]:
    """JSON schema: exactly one of ``names`` is given (the others absent or null)."""
    return {
        "anyOf": [
            {
                "required": [name],
                "properties": {other: (_GIVEN if other == name else _NULL) for other in names},
            }
            for name in names
        ]
    }


def only_with(field: str, name: str, value: str) -> dict[str, Any]:
    """JSON schema: ``field`` is given when ``name`` is ``value``, and only then."""
    return {
        "if": {"properties": {name: {"const": value}}},
        "then": given(field),
        "else": {"properties": {field: _NULL}},
    }


def rules(*checks: dict[str, Any]) -> ConfigDict:
    """The config of a model whose fields depend on each other: its JSON schema states
    ``checks`` (which the server makes; the model's validator or the engine), so a
    request the schema accepts is accepted."""

    def extra(schema: dict[str, Any], model: type[Any]) -> None:
        describe(schema, model)
        schema["allOf"] = [*schema.get("allOf", ()), *checks]

    return ConfigDict(json_schema_extra=extra)


class Empty(Wire):
    """No fields."""


def dump(model: BaseModel) -> dict[str, Any]:
    """A model as JSON-ready data, unset optional fields left out."""
    return model.model_dump(mode="json", exclude_none=True)


PATTERN_REASONS: dict[str, str] = {
    ID_PATTERN: ID_REASON,
    NAME_PATTERN: NAME_REASON,
    NONBLANK_PATTERN: "must not be empty",
    STORE_LABEL_PATTERN: f"labels are at most {STORE_LABEL_MAX_CHARS} chars, no '.'",
    UUID_PATTERN: "is not a UUID",
    DURATION_PATTERN: DURATION_REASON,
}
"""The server's own reason for a value its pattern refuses (pydantic's names the regex)."""


def error_reason(error: Mapping[str, Any]) -> str:
    """The reason of one of pydantic's errors, in the server checks' words where one of
    their patterns refused it."""
    context = error.get("ctx") or {}
    if error.get("type") == "string_pattern_mismatch":
        reason = PATTERN_REASONS.get(str(context.get("pattern")))
        if reason is not None:
            return reason
    return str(error.get("msg", "is invalid"))


def request_error(exc: PydanticValidationError) -> ValidationError:
    """The first problem pydantic found in a request, naming the field."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first.get("loc", ())) or "request"
    return ValidationError(field, error_reason(first))


# -- shapes that differ from their domain type on purpose (derived models nest them) --


# Explicit: a request's turn carries the wire's limits (ids, text length); it is also
# the summary a build returns.
class TurnIn(Wire):
    role: Literal["user", "assistant", "system"]
    content: Text
    id: Id | None = None
    summary: bool = False
    covers: list[Id] = []


# Explicit: the payload's kind and text are fields, its internal fields are hidden and
# the rest is ``metadata``.
class RetrievedOut(Wire):
    id: str
    kind: str
    text: str
    score: float
    cosine: float
    low_confidence: bool
    routes: list[str] = []
    observed_at: datetime | None = None
    in_time_window: bool | None = None
    superseded_by: str | None = None
    facts: list[RetrievedOut] = []
    metadata: dict[str, JsonValue] = {}
    cosine_route: str = "dense"
    """The dense vector ``cosine`` was measured with: ``dense`` (MiniLM) or
    ``multilingual`` (mapped onto MiniLM's scale; docs/architecture.md, "Languages")."""
    confidence: float | None = None
    """The calibrated confidence ``low_confidence`` reads (docs/architecture.md,
    "Confidence"); None: not graded (a cached read, BM25 alone)."""
    confidence_reason: str | None = None
    """Why the item is flagged low-confidence: its confidence and its weak signals."""


# Explicit: a context item flattened with its provenance, its content as JSON.
class BundleItemOut(Wire):
    name: str
    content: JsonValue = None
    layer: str
    level: str
    """Its permission level: low, medium or high."""
    ref: str
    source: str
    relevance: float
    freshness_hours: float | None = None
    low_confidence: bool = False


# Explicit: one shape for an admitted and a dropped item, flattened with its origin.
class ContextEntryOut(Wire):
    """An admitted or dropped part of the context, with where it came from."""

    id: str
    section: str
    tokens: int
    layer: str
    ref: str
    source: str
    relevance: float | None = None
    freshness_hours: float | None = None
    low_confidence: bool = False
    reason: str | None = None
    detail: str | None = None


__all__ = [
    "BundleItemOut",
    "ContextEntryOut",
    "Empty",
    "Id",
    "JsonObject",
    "Label",
    "Name",
    "Ref",
    "RetrievedOut",
    "Risk",
    "SessionId",
    "ShortText",
    "StoreKey",
    "StoreNamespace",
    "Text",
    "TurnIn",
    "Uuid",
    "Wire",
    "dump",
    "error_reason",
    "exactly_one_of",
    "given",
    "only_with",
    "request_error",
    "rules",
]
