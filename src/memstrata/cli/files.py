"""``memstrata ingest``'s files as documents: a folder's manifest sent to the
``ingest_documents`` operation, so the in-process engine and a service at ``--url``
ingest the same way (and drop the chunks of files gone from a re-ingested folder).

A file's document name is its absolute path without the leading ``/`` (a relative,
'/'-separated name, as the operation takes): stable whatever the working directory, and
two folders of the same name elsewhere never share one. Imports neither the engine nor
the knowledge package (``--url`` runs start without them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from memstrata.textfiles import decode_document

Format = Literal["markdown", "html", "text"]
# The suffixes memstrata.knowledge.parsing reads (a test keeps the two the same).
SUFFIXES: dict[str, Format] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
}
BATCH_DOCUMENTS = 200
BATCH_CHARS = 8_000_000
"""One request's documents at most (the wire takes 1,000 and 10 MB per text)."""


@dataclass(frozen=True, slots=True)
class FileDocument:
    name: str
    text: str
    format: Format


@dataclass(slots=True)
class Discovered:
    """What an ingest sends: the documents, the names whose absent documents are
    removed, and the files that could not be read (path as given, reason)."""

    documents: list[FileDocument] = field(default_factory=list)
    prune: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    """Names of files found but unreadable: kept as stored (never pruned), counted seen."""


def document_name(path: str) -> str:
    """The document name of an absolute path: '/'-separated, no leading '/'."""
    posix = PurePosixPath(Path(path).as_posix())
    return posix.as_posix().lstrip("/")


def _walk(root: str) -> Iterator[str]:
    # Hidden files and folders skipped, symlinked folders not followed (as the engine's).
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and Path(name).suffix.lower() in SUFFIXES:
                yield os.path.join(current, name)


def discover(paths: Sequence[Path]) -> Discovered:
    """The documents of ``paths`` (files, folders walked), each folder and each missing
    path to prune (what it contributed before is removed), and the problems."""
    found = Discovered()
    files: dict[str, str] = {}  # absolute path -> the path as reported
    for given in paths:
        root = os.path.abspath(given)
        if os.path.isdir(root):
            found.prune.append(document_name(root))
            for full in _walk(root):
                files.setdefault(full, Path(os.path.relpath(full, root)).as_posix())
        elif os.path.isfile(root):
            if Path(root).suffix.lower() not in SUFFIXES:
                found.errors.append((Path(given).as_posix(), "unsupported file type"))
                continue
            files.setdefault(root, Path(given).as_posix())
        else:
            found.prune.append(document_name(root))
            found.errors.append((Path(given).as_posix(), "no such file or directory"))
    for full, shown in files.items():
        try:
            with open(full, "rb") as handle:
                text = decode_document(handle.read())
        except (OSError, ValueError) as exc:
            reason = str(exc) if isinstance(exc, ValueError) else f"unreadable: {exc.strerror}"
            found.errors.append((shown, reason))
            found.unread.append(document_name(full))
            continue
        fmt = SUFFIXES[Path(full).suffix.lower()]
        found.documents.append(FileDocument(document_name(full), text, fmt))
    return found


def batches(documents: Sequence[FileDocument]) -> Iterator[list[FileDocument]]:
    """``documents`` in requests of at most BATCH_DOCUMENTS and about BATCH_CHARS."""
    batch: list[FileDocument] = []
    size = 0
    for document in documents:
        if batch and (len(batch) >= BATCH_DOCUMENTS or size + len(document.text) > BATCH_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(document)
        size += len(document.text)
    if batch:
        yield batch
