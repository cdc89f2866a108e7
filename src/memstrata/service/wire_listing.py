"""The requests and explicit results of listing, export and import (re-exported by
:mod:`memstrata.service.wire`; kept apart so that module stays small)."""

# Pydantic copies a mutable default for each instance.
# ruff: noqa: RUF012

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from memstrata.service.wire_base import Id, Uuid, Wire
from memstrata.service.wire_derived import UserSummaryOut
from memstrata.validation import PAGE_PATTERN

# -- listing: a user's memories without a query ------------------------------------------


class ListMemoriesRequest(Wire):
    user_id: Id
    """Whose memories (of the caller's tenant)."""
    kind: Literal["episode", "fact", "event", "preference", "pinned"] | None = None
    """Only this kind (``pinned``: pinned facts and events); omitted: every kind."""
    since: datetime | None = None
    """Only what was said at or after this instant."""
    until: datetime | None = None
    """Only what was said before this instant."""
    page: Annotated[str, Field(pattern=PAGE_PATTERN)] | None = None
    """The ``next_page`` marker of the previous page."""
    page_size: Annotated[int, Field(ge=1, le=200)] = 50
    """Items per page."""


class HistoryRequest(Wire):
    fact_id: Uuid
    """Any version's id: every version of that fact is answered."""


# -- export and import ----------------------------------------------------------------

MAX_IMPORT_CHARS = 15_000_000
"""The largest file one import call carries (the REST body limit is 16 MiB)."""


class ExportRequest(Wire):
    user_id: Id | None = None
    """Whose memory; omitted: every user of the caller's tenant."""


# Explicit: the file itself, as text (its lines are JSON documents).
class ExportOut(Wire):
    """A versioned JSON Lines export: a header line, then one line per record."""

    jsonl: str
    lines: int


class ImportRequest(Wire):
    content: Annotated[str, Field(min_length=1, max_length=MAX_IMPORT_CHARS)]
    """The file's text: an export (``memstrata``), an OpenAI messages array
    (``openai``) or JSON Lines of ``{role, content, timestamp}`` (``messages``)."""
    format: Literal["memstrata", "openai", "messages"] = "memstrata"
    """What ``content`` is: an export, an OpenAI messages array, or JSON Lines."""
    user_id: Id | None = None
    """Whose conversation it is (``openai`` / ``messages`` only)."""
    wait: bool = False
    """A conversation: wait until its turns are in long-term memory."""


# Explicit: the users are a list of derived summaries, no domain value of their own.
class UserListOut(Wire):
    """The users with memory in the caller's tenant, most recently active first."""

    users: list[UserSummaryOut] = []


__all__ = [
    "MAX_IMPORT_CHARS",
    "ExportOut",
    "ExportRequest",
    "HistoryRequest",
    "ImportRequest",
    "ListMemoriesRequest",
    "UserListOut",
]
