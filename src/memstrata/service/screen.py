"""Every identifier of a request passes the gateway before its operation runs.

Free text (a turn, a query, a purpose, a reply) is redacted by the engine where it
is stored. An identifier (a session, user, entity, namespace, step, metric, tool or
document name, a store key...) becomes part of Valkey keys, L3 payloads, manifests
and audit lines as it is: redacting it would make two ids one, so an identifier that
holds a credential, or personal data the gateway's policy does not allow under its
field, is refused with a ``ValidationError`` naming the field, before anything is
read or written. JSON values (``value``, ``params``, ``fields``, ``given``...) are
sanitized whole by the engine, keys included, and are left to it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, JsonValue

from memstrata.errors import ValidationError
from memstrata.gateway import Sanitizer

FREE_TEXT_FIELDS = frozenset(
    {
        "initial_query",
        "text",
        "speaker",
        "query",
        "user_input",
        "system_prompt",
        "content",
        "response",
        "purpose",
        "description",
        "question",
        "error",
        "reply",
        "correction",
    }
)
"""Request fields holding free text: the engine redacts inside them where it stores them."""

_ARTICLE = {"api_key": "an", "aws_access_key": "an", "aws_secret_key": "an", "email": "an"}


def _unwrap(annotation: Any) -> Any:
    """The type under ``Annotated`` and ``Optional``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation


class IdentifierScreen:
    """Refuses a request whose identifiers hold what the gateway would redact."""

    def __init__(self, sanitizer: Sanitizer) -> None:
        self._sanitizer = sanitizer

    def __call__(self, request: BaseModel) -> None:
        """ValidationError naming the first identifier field holding a finding."""
        self._model(request, "")

    def _model(self, model: BaseModel, path: str) -> None:
        for name, info in type(model).model_fields.items():
            where = f"{path}.{name}" if path else name
            self._value(getattr(model, name), info.annotation, where, name)

    def _value(self, value: Any, annotation: Any, path: str, name: str) -> None:
        if value is None:
            return
        kind = _unwrap(annotation)
        if kind is JsonValue:
            return
        if isinstance(value, BaseModel):
            self._model(value, path)
        elif isinstance(value, str):
            if name not in FREE_TEXT_FIELDS:
                self._identifier(value, path, name)
        elif isinstance(value, list | tuple):
            args = typing.get_args(kind)
            item = args[0] if args else Any
            for index, element in enumerate(value):
                self._value(element, item, f"{path}[{index}]", name)
        elif isinstance(value, Mapping):
            args = typing.get_args(kind)
            item = args[1] if len(args) == 2 else Any
            if _unwrap(item) is JsonValue:
                return
            for key, element in value.items():
                if isinstance(key, str):
                    self._identifier(key, path, name, key=True)
                    self._value(element, item, f"{path}.{key}", name)

    def _identifier(self, value: str, path: str, name: str, *, key: bool = False) -> None:
        found = self._sanitizer.identifier_finding(value, field=name)
        if found is None:
            return
        article = _ARTICLE.get(found.value, "a")
        subject = "has a key that holds" if key else "holds"
        raise ValidationError(
            path,
            f"{subject} {article} {found.value.replace('_', ' ')}: identifiers are stored "
            "as they are (in keys and payloads), so they must not carry credentials or "
            "personal data; use an opaque id",
        )
