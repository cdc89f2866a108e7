"""The cold path: documents into the ``knowledge`` collection, incrementally.

Files on disk (:meth:`KnowledgeIngestor.ingest`) and documents given as text
(:meth:`KnowledgeIngestor.ingest_documents`) take one path: each is read, hashed,
parsed, chunked, sanitized and written; the manifest remembers, per (tenant,
absolute path) or (tenant, document name), the content hash and the point ids of
each chunk hash. A re-run skips unchanged content by hash, writes only the chunks
whose hash is new, deletes the points of chunks that disappeared, and deletes
every chunk of a file that vanished from a re-ingested directory.

Point ids are derived from (tenant, manifest key, chunk hash, occurrence), so a
run that dies between the store write and the manifest save re-writes the same
points on the next run instead of leaving duplicates behind.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memstrata.clock import Clock
from memstrata.errors import MemstrataError, ValidationError
from memstrata.hashing import sha256_hex
from memstrata.knowledge.chunking import Chunker
from memstrata.knowledge.documents import Document, check_document_name
from memstrata.knowledge.manifest import FileEntry, JsonManifestStore, Manifest, ManifestStore
from memstrata.knowledge.parsing import DocFormat, format_for_suffix
from memstrata.longterm.facade import LongTermStore, NewItem, PayloadSanitizer
from memstrata.longterm.points import KNOWLEDGE
from memstrata.permissions import Level, check_level
from memstrata.textfiles import decode_document
from memstrata.validation import MAX_TEXT_CHARS, check_id

KNOWLEDGE_TYPE = "knowledge"
DOCUMENT_KEY_PREFIX = "doc:"
"""Manifest keys of documents given as text: never an absolute path, so never a file's."""
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "memstrata:knowledge:chunk")
_LOCATION = f"L3:{KNOWLEDGE}"


IngestProgress = Callable[[str, int, int], None]
"""Called as ``progress(name, done, total)`` when each file or document starts, and
as ``progress("", total, total)`` when the last one is done."""


@dataclass(frozen=True, slots=True)
class FileError:
    """A file or document that could not be ingested (nothing of it was written or
    deleted); ``path`` is the file's path as reported, or the document's name."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What one ingest run did (of files, or of documents given as text).

    ``files_seen`` counts the supported files found (or the documents given); each
    of them is then added (new), updated (changed), skipped (unchanged) or listed
    in ``errors``. ``files_removed`` counts files gone since the last run, whose
    chunks were deleted (never a document: those are only added or replaced).
    """

    files_seen: int = 0
    files_added: int = 0
    files_updated: int = 0
    files_skipped: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    chunks_deleted: int = 0
    oversized_chunks: int = 0
    errors: tuple[FileError, ...] = ()
    duration_s: float = 0.0


@dataclass(slots=True)
class _Tally:
    # The run's accumulator; frozen into an IngestReport once at the end.
    seen: int = 0
    added: int = 0
    updated: int = 0
    skipped: int = 0
    removed: int = 0
    chunks_added: int = 0
    chunks_deleted: int = 0
    oversized: int = 0
    errors: list[FileError] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Target:
    key: str  # the manifest key: an absolute file path, or DOCUMENT_KEY_PREFIX + name
    source: str  # what the payload shows: relative to the ingest root, as given, or the name
    fmt: DocFormat
    title: str  # the document title the chunker puts in each chunk's heading
    text: str | None = None  # a document's text; None: read the file at ``key``
    level: Level = "low"  # the permission level its chunks carry


@dataclass(frozen=True, slots=True)
class _Content:
    content_hash: str  # of the file's bytes, or of the document's text
    modified_at: float
    data: bytes | None = None  # a file's bytes, decoded only when it changed
    text: str | None = None  # a document's text


class _FileProblem(Exception):
    """A per-file failure that is reported, never raised to the caller."""


def point_id(tenant: str, path: str, content_hash: str, occurrence: int) -> str:
    """The deterministic point id of the ``occurrence``-th chunk with ``content_hash``;
    ``path`` is the manifest key (a file's absolute path, or a document's key)."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{tenant}\0{path}\0{content_hash}\0{occurrence}"))


def _file_target(path: str, source: str, fmt: DocFormat) -> _Target:
    return _Target(path, source, fmt, Path(path).stem)


def _document_target(document: Document, level: Level) -> _Target:
    return _Target(
        DOCUMENT_KEY_PREFIX + document.name,
        document.name,
        DocFormat(document.format),
        PurePosixPath(document.name.replace("\\", "/")).stem,
        document.text,
        level,
    )


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


@dataclass(frozen=True, slots=True)
class _Discovery:
    targets: list[_Target]
    roots: list[str]  # directories walked (absolute)
    missing: list[Path]  # given paths that do not exist
    rejected: list[FileError]  # given files of an unsupported type


def _discover(paths: Sequence[Path]) -> _Discovery:
    """Supported files under ``paths`` (sorted), the directories walked, what was not usable.

    Hidden files and directories (``.git``...) are skipped and symlinked
    directories are not followed, so a walk cannot loop or wander out of the tree.
    """
    targets: dict[str, _Target] = {}
    roots: list[str] = []
    missing: list[Path] = []
    rejected: list[FileError] = []
    for given in paths:
        root = os.path.abspath(given)
        if os.path.isdir(root):
            roots.append(root)
            for current, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
                for name in sorted(files):
                    fmt = format_for_suffix(Path(name).suffix)
                    full = os.path.join(current, name)
                    if fmt is not None and not _is_hidden(name) and full not in targets:
                        source = Path(os.path.relpath(full, root)).as_posix()
                        targets[full] = _file_target(full, source, fmt)
        elif os.path.isfile(root):
            fmt = format_for_suffix(Path(root).suffix)
            if fmt is None:
                rejected.append(FileError(Path(given).as_posix(), "unsupported file type"))
                continue
            targets.setdefault(root, _file_target(root, Path(given).as_posix(), fmt))
        else:
            missing.append(Path(given))
    return _Discovery(list(targets.values()), roots, missing, rejected)


class KnowledgeIngestor:
    """Ingests Markdown, HTML and text files (or documents given as text) into
    ``knowledge``, incrementally.

    Give either ``manifest_dir`` (the manifest is a JSON file there) or a
    ``manifest`` store. ``chunker`` defaults to 256-token chunks.
    """

    def __init__(
        self,
        store: LongTermStore,
        sanitizer: PayloadSanitizer,
        clock: Clock,
        *,
        manifest_dir: Path | None = None,
        manifest: ManifestStore | None = None,
        chunker: Chunker | None = None,
    ) -> None:
        if (manifest_dir is None) == (manifest is None):
            raise ValidationError("manifest", "give exactly one of manifest_dir and manifest")
        self._store = store
        self._sanitizer = sanitizer
        self._clock = clock
        self._manifest: ManifestStore = (
            manifest if manifest is not None else JsonManifestStore(Path(str(manifest_dir)))
        )
        self._chunker = chunker if chunker is not None else Chunker()

    def ingest(
        self, paths: Sequence[Path], *, tenant: str, progress: IngestProgress | None = None
    ) -> IngestReport:
        """Ingest files and directories (walked for .md/.markdown/.html/.htm/.txt).

        A failing file is reported in ``errors`` and leaves its stored chunks as
        they were; the other files are still ingested.
        """
        check_id("tenant", tenant)
        if isinstance(paths, str | Path) or not paths:
            raise ValidationError("paths", "must be a non-empty sequence of paths")
        found = _discover(paths)
        return self._run(
            found.targets,
            tenant,
            progress,
            rejected=found.rejected,
            roots=found.roots,
            missing=found.missing,
        )

    def ingest_documents(
        self,
        documents: Sequence[Document],
        *,
        tenant: str,
        progress: IngestProgress | None = None,
        level: str = "low",
        prune_missing_under: Sequence[str] = (),
        also_present: Sequence[str] = (),
    ) -> IngestReport:
        """Ingest documents given as text, each keyed by (tenant, name) like a file by
        its path: a new name is added, a changed text updated, an unchanged one
        skipped. A failing document is reported in ``errors`` (by name) and leaves
        its stored chunks as they were. Names must be unique within one call.
        ``level`` is the permission level of their chunks (a change rewrites them).

        ``prune_missing_under`` makes the call a folder's manifest, as a re-ingested
        folder of files is: the tenant's documents named as one of these names, or
        under it (``name/...``), that are neither given here nor named in
        ``also_present`` (those of the same folder sent by an earlier call) are
        removed, and counted in ``files_removed``.
        """
        check_id("tenant", tenant)
        checked_level = check_level("level", level)
        if isinstance(documents, str | Document) or (not documents and not prune_missing_under):
            raise ValidationError("documents", "must be a non-empty sequence of documents")
        if isinstance(prune_missing_under, str) or isinstance(also_present, str):
            raise ValidationError("prune_missing_under", "must be a sequence of names")
        for i, name in enumerate(prune_missing_under):
            check_document_name(f"prune_missing_under[{i}]", name)
        for i, name in enumerate(also_present):
            check_document_name(f"also_present[{i}]", name)
        names: set[str] = set()
        for i, document in enumerate(documents):
            if not isinstance(document, Document):
                raise ValidationError(f"documents[{i}]", "must be a Document")
            if document.name in names:
                raise ValidationError(
                    f"documents[{i}].name", f"{document.name!r} is given more than once"
                )
            names.add(document.name)
        return self._run(
            [_document_target(d, checked_level) for d in documents],
            tenant,
            progress,
            prune=[DOCUMENT_KEY_PREFIX + name.rstrip("/") for name in prune_missing_under],
            present=[DOCUMENT_KEY_PREFIX + name for name in also_present],
        )

    def _run(
        self,
        targets: Sequence[_Target],
        tenant: str,
        progress: IngestProgress | None,
        *,
        rejected: Sequence[FileError] = (),
        roots: Sequence[str] = (),
        missing: Sequence[Path] = (),
        prune: Sequence[str] = (),
        present: Sequence[str] = (),
    ) -> IngestReport:
        """Ingest ``targets``; then forget files gone from ``roots`` and ``missing``, and
        documents at or under the keys ``prune`` that are neither targets nor ``present``
        (with the files once ingested by path from the same folder: see _retire_files)."""
        started = self._clock.monotonic()
        tally = _Tally(seen=len(targets), errors=list(rejected))
        manifest = self._manifest.load()
        try:
            for done, target in enumerate(targets):
                if progress is not None:
                    progress(target.source, done, len(targets))
                manifest = self._ingest_one(target, tenant, manifest, tally)
            if progress is not None:
                progress("", len(targets), len(targets))
            seen = {t.key for t in targets}
            for root in roots:
                for path in manifest.paths_under(tenant, root):
                    if path not in seen:
                        manifest = self._remove(tenant, path, manifest, tally)
            for gone in missing:
                manifest = self._remove_missing(tenant, gone, manifest, tally)
            kept = seen | set(present)
            for key in prune:
                # '/' separates a document name's folders (never os.sep: names are not paths).
                under = sorted(
                    p
                    for t, p in manifest.entries
                    if t == tenant and (p == key or p.startswith(key + "/")) and p not in kept
                )
                for path in under:
                    manifest = self._remove(tenant, path, manifest, tally)
                manifest = self._retire_files(tenant, key, manifest, tally)
        finally:
            # Saved even when a store error escapes, so completed files are not redone.
            self._manifest.save(manifest)
        if tally.chunks_added:
            self._store.optimize()
        return IngestReport(
            files_seen=tally.seen,
            files_added=tally.added,
            files_updated=tally.updated,
            files_skipped=tally.skipped,
            files_removed=tally.removed,
            chunks_added=tally.chunks_added,
            chunks_deleted=tally.chunks_deleted,
            oversized_chunks=tally.oversized,
            errors=tuple(tally.errors),
            duration_s=self._clock.monotonic() - started,
        )

    def _load(self, target: _Target) -> _Content:
        """The target's content hash and time; a file's bytes, or a document's text."""
        if target.text is not None:
            return _Content(
                sha256_hex(target.text), self._clock.now().timestamp(), text=target.text
            )
        try:
            with open(target.key, "rb") as handle:
                data = handle.read()
                mtime = os.fstat(handle.fileno()).st_mtime
        except OSError as exc:
            raise _FileProblem(f"unreadable: {exc.strerror or exc}") from exc
        return _Content(sha256_hex(data), mtime, data=data)

    def _fingerprint(self, target: _Target) -> str:
        # What else than the text decides the stored points: the chunker and the level.
        chunker = self._chunker.fingerprint
        return chunker if target.level == "low" else f"{chunker}|{target.level}"

    def _ingest_one(
        self, target: _Target, tenant: str, manifest: Manifest, tally: _Tally
    ) -> Manifest:
        entry = manifest.get(tenant, target.key)
        try:
            content = self._load(target)
        except _FileProblem as exc:
            tally.errors.append(FileError(target.source, str(exc)))
            return manifest
        if (
            entry is not None
            and entry.file_hash == content.content_hash
            and entry.source == target.source
            and entry.fingerprint == self._fingerprint(target)
        ):
            tally.skipped += 1
            return manifest
        try:
            new_entry, items, stale = self._plan(target, tenant, content, entry)
            # New chunks first, stale ones after: a failed write leaves the old version whole.
            if items:
                self._store.add(KNOWLEDGE, items)
            if stale:
                self._store.delete(KNOWLEDGE, stale, tenant=tenant)
        except (_FileProblem, MemstrataError) as exc:
            tally.errors.append(FileError(target.source, str(exc)))
            return manifest
        if entry is None:
            tally.added += 1
        else:
            tally.updated += 1
        tally.chunks_added += len(items)
        tally.chunks_deleted += len(stale)
        tally.oversized += sum(1 for item in items if item.extra.get("oversized"))
        return manifest.with_entry(tenant, target.key, new_entry)

    def _plan(
        self,
        target: _Target,
        tenant: str,
        content: _Content,
        entry: FileEntry | None,
    ) -> tuple[FileEntry, list[NewItem], list[str]]:
        """The target's new manifest entry, the points to write and the ids to delete."""
        if content.text is not None:
            text = content.text
        else:
            try:
                text = decode_document(content.data or b"")
            except ValueError as exc:
                raise _FileProblem(str(exc)) from exc
        mtime = content.modified_at
        chunks = self._chunker.chunk(text, target.fmt, title=target.title)
        # A point whose payload source changed is rewritten even if its text did not.
        reusable = set(entry.all_ids()) if entry and entry.source == target.source else set()
        ids_by_hash: dict[str, list[str]] = {}
        items: list[NewItem] = []
        for chunk in chunks:
            # Sanitized before hashing and storing: a secret never reaches the store,
            # and the stored hash is the hash of the stored text.
            clean = self._sanitizer.text(chunk.text, location=_LOCATION, field="text")
            if len(clean) > MAX_TEXT_CHARS:
                raise _FileProblem(
                    f"chunk {chunk.index} is {len(clean)} chars, over the {MAX_TEXT_CHARS} limit"
                )
            content_hash = sha256_hex(clean)
            same = ids_by_hash.setdefault(content_hash, [])
            variant = content_hash if target.level == "low" else f"{content_hash}|{target.level}"
            pid = point_id(tenant, target.key, variant, len(same))
            same.append(pid)
            if pid in reusable:
                continue
            section = self._sanitizer.text(chunk.section, location=_LOCATION, field="section")
            extra: dict[str, str | int | float | bool] = {
                "section": section,
                "chunk_index": chunk.index,
                "content_hash": content_hash,
                "token_count": chunk.token_count,
                "modified_at": mtime,
                "level": target.level,
            }
            if chunk.oversized:
                extra["oversized"] = True
            items.append(
                NewItem(
                    text=clean,
                    tenant=tenant,
                    type=KNOWLEDGE_TYPE,
                    source=target.source,
                    id=pid,
                    created_at=mtime,
                    updated_at=mtime,
                    extra=extra,
                )
            )
        kept = {pid for ids in ids_by_hash.values() for pid in ids}
        stale = [pid for pid in (entry.all_ids() if entry else ()) if pid not in kept]
        new_entry = FileEntry(
            content.content_hash,
            target.source,
            self._fingerprint(target),
            {h: tuple(ids) for h, ids in ids_by_hash.items()},
        )
        return new_entry, items, stale

    def _remove(self, tenant: str, path: str, manifest: Manifest, tally: _Tally) -> Manifest:
        entry = manifest.get(tenant, path)
        if entry is None:
            return manifest
        ids = list(entry.all_ids())
        if ids:
            self._store.delete(KNOWLEDGE, ids, tenant=tenant)
        tally.removed += 1
        tally.chunks_deleted += len(ids)
        return manifest.without(tenant, path)

    def _retire_files(self, tenant: str, key: str, manifest: Manifest, tally: _Tally) -> Manifest:
        # `memstrata ingest` names a file by its absolute path without the leading '/'
        # and once ingested files by path (``ingest``): the files it ingested that way
        # from the folder it now sends as documents are replaced by them, never doubled.
        if os.sep != "/":
            return manifest
        folder = "/" + key.removeprefix(DOCUMENT_KEY_PREFIX)
        known = [folder] if manifest.get(tenant, folder) else []
        for path in [*known, *manifest.paths_under(tenant, folder)]:
            manifest = self._remove(tenant, path, manifest, tally)
        return manifest

    def _remove_missing(
        self, tenant: str, gone: Path, manifest: Manifest, tally: _Tally
    ) -> Manifest:
        # A path given explicitly that no longer exists: forget what it contributed
        # (a file, or every file of a directory); unknown to the manifest, an error.
        absolute = os.path.abspath(gone)
        known = [absolute] if manifest.get(tenant, absolute) else []
        known += list(manifest.paths_under(tenant, absolute))
        if not known:
            tally.errors.append(FileError(gone.as_posix(), "no such file or directory"))
            return manifest
        for path in known:
            manifest = self._remove(tenant, path, manifest, tally)
        return manifest
