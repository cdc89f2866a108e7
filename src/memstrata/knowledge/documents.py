"""Documents given as content (sent over a network) rather than read from disk.

A :class:`Document` goes through the same cold path as a file
(:meth:`~memstrata.knowledge.ingest.KnowledgeIngestor.ingest_documents`): parsed,
chunked, sanitized, written, and skipped on a re-run while its text is unchanged.
Its ``name`` plays the part of the file path: per (tenant, name) the manifest
remembers the text's hash and the chunks' point ids.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Literal, get_args

from memstrata.errors import ValidationError
from memstrata.validation import MAX_DOCUMENT_NAME_CHARS

DocumentFormat = Literal["markdown", "html", "text"]
"""How a document's text is parsed (the formats of :class:`~memstrata.knowledge.DocFormat`)."""

DOCUMENT_FORMATS: tuple[str, ...] = get_args(DocumentFormat)


def check_document_name(field: str, value: object) -> str:
    """Return ``value`` if it is a relative, path-like document name.

    Non-empty, at most 512 chars, no ``..`` segment, not absolute (no leading ``/``
    or ``\\``), no control characters. ``/`` separates folders, as in a URL path.
    """
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(field, "must not be empty")
    if len(value) > MAX_DOCUMENT_NAME_CHARS:
        raise ValidationError(
            field, f"is {len(value)} chars, the limit is {MAX_DOCUMENT_NAME_CHARS}"
        )
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ValidationError(field, "must not contain control characters")
    if value.startswith(("/", "\\")):
        raise ValidationError(field, "must be relative (no leading '/' or '\\')")
    if ".." in value.replace("\\", "/").split("/"):
        raise ValidationError(field, "must not contain a '..' segment")
    return value


@dataclass(frozen=True, slots=True)
class Document:
    """One document to ingest into the tenant's ``knowledge``, given as text.

    ``name`` identifies it within the tenant (a relative path-like id such as
    ``guides/pump.md``; it is the chunks' ``source``): ingesting the same name again
    replaces the chunks that changed and skips an unchanged text. ``format`` says
    how ``text`` is parsed into sections. Invalid values raise ValidationError
    naming the field.
    """

    name: str
    text: str
    format: DocumentFormat

    def __post_init__(self) -> None:
        check_document_name("name", self.name)
        if not isinstance(self.text, str):
            raise ValidationError("text", f"must be a string, got {type(self.text).__name__}")
        if self.format not in DOCUMENT_FORMATS:
            raise ValidationError("format", f"must be one of {', '.join(DOCUMENT_FORMATS)}")
