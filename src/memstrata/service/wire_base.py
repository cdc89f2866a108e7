"""The base of the wire models: the ``Wire`` model, the bounded types requests use,
and the explicit shapes that derived models nest.

Imports only pydantic and :mod:`memstrata.errors`, so the client (which needs the
wire models, never the engine) stays light; :mod:`memstrata.service.wire` re-exports
everything here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError

from memstrata.errors import ValidationError
from memstrata.service.wire_fields import describe

Id = Annotated[str, Field(min_length=1, max_length=256)]
Text = Annotated[str, Field(min_length=1, max_length=100_000)]
ShortText = Annotated[str, Field(min_length=1, max_length=8_000)]
Label = Annotated[str, Field(min_length=1, max_length=256)]
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


class Empty(Wire):
    """No fields."""


def dump(model: BaseModel) -> dict[str, Any]:
    """A model as JSON-ready data, unset optional fields left out."""
    return model.model_dump(mode="json", exclude_none=True)


def request_error(exc: PydanticValidationError) -> ValidationError:
    """The first problem pydantic found in a request, naming the field."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first.get("loc", ())) or "request"
    return ValidationError(field, str(first.get("msg", "is invalid")))


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
    "RetrievedOut",
    "Risk",
    "ShortText",
    "StoreKey",
    "StoreNamespace",
    "Text",
    "TurnIn",
    "Wire",
    "dump",
    "request_error",
]
