"""The cold path's memory of what it ingested: per (tenant, file), hashes and point ids.

A :class:`Manifest` is an immutable value; :class:`JsonManifestStore` persists it
as one JSON file, replaced atomically (temp file + fsync + ``os.replace``) so a
crash leaves either the old or the new manifest, never a torn one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from memstrata.errors import ConfigError
from memstrata.validation import check_id

MANIFEST_FILE = "knowledge_manifest.json"
MANIFEST_VERSION = 1

FileKey = tuple[str, str]
"""(tenant, absolute file path)."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """What is stored for one file of one tenant.

    ``chunks`` maps each stored chunk's content hash to the ids of its points (a
    hash repeated within the file has one id per occurrence). ``fingerprint`` is
    the chunker's, so a new budget or tokenizer re-chunks unchanged files.
    """

    file_hash: str
    source: str
    fingerprint: str
    chunks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        frozen = {h: tuple(ids) for h, ids in self.chunks.items()}
        object.__setattr__(self, "chunks", MappingProxyType(frozen))

    def all_ids(self) -> tuple[str, ...]:
        """Every point id of the file."""
        return tuple(i for ids in self.chunks.values() for i in ids)


@dataclass(frozen=True, slots=True)
class Manifest:
    """All ingested files, keyed by (tenant, absolute path). Updates return new values."""

    entries: Mapping[FileKey, FileEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", MappingProxyType(dict(self.entries)))

    def get(self, tenant: str, path: str) -> FileEntry | None:
        """The entry of ``path`` for ``tenant``, if it was ingested."""
        return self.entries.get((tenant, path))

    def with_entry(self, tenant: str, path: str, entry: FileEntry) -> Manifest:
        """A manifest with ``entry`` recorded for (tenant, path)."""
        return Manifest({**self.entries, (tenant, path): entry})

    def without(self, tenant: str, path: str) -> Manifest:
        """A manifest that no longer knows (tenant, path)."""
        return Manifest({k: v for k, v in self.entries.items() if k != (tenant, path)})

    def paths_under(self, tenant: str, directory: str) -> Iterator[str]:
        """The tenant's ingested paths inside ``directory`` (absolute), sorted."""
        prefix = directory.rstrip(os.sep) + os.sep
        return iter(sorted(p for t, p in self.entries if t == tenant and p.startswith(prefix)))


class ManifestStore(Protocol):
    """Where the manifest lives between runs."""

    def load(self) -> Manifest:
        """The last saved manifest (empty when none was saved)."""
        ...

    def save(self, manifest: Manifest) -> None:
        """Persist ``manifest`` atomically."""
        ...


def manifest_to_json(manifest: Manifest) -> dict[str, Any]:
    """The JSON document of a manifest (entries sorted, so saves are deterministic)."""
    files = [
        {
            "tenant": tenant,
            "path": path,
            "file_hash": entry.file_hash,
            "source": entry.source,
            "fingerprint": entry.fingerprint,
            "chunks": {h: list(ids) for h, ids in sorted(entry.chunks.items())},
        }
        for (tenant, path), entry in sorted(manifest.entries.items())
    ]
    return {"version": MANIFEST_VERSION, "files": files}


def manifest_from_json(document: Any) -> Manifest:
    """Parse :func:`manifest_to_json` output; raises ConfigError when it is malformed."""
    try:
        if document["version"] != MANIFEST_VERSION:
            raise ConfigError(f"manifest version {document['version']!r} is not supported")
        entries: dict[FileKey, FileEntry] = {}
        for item in document["files"]:
            chunks = {str(h): tuple(str(i) for i in ids) for h, ids in item["chunks"].items()}
            key = (check_id("tenant", item["tenant"]), str(item["path"]))
            entries[key] = FileEntry(
                str(item["file_hash"]), str(item["source"]), str(item["fingerprint"]), chunks
            )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"malformed knowledge manifest: {exc!r}") from exc
    return Manifest(entries)


class JsonManifestStore:
    """The manifest as ``<directory>/knowledge_manifest.json``."""

    def __init__(self, directory: Path) -> None:
        self._path = Path(directory) / MANIFEST_FILE

    @property
    def path(self) -> Path:
        """The manifest file."""
        return self._path

    def load(self) -> Manifest:
        try:
            raw = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Manifest()
        try:
            document = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{self._path}: not valid JSON ({exc})") from exc
        return manifest_from_json(document)

    def save(self, manifest: Manifest) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(manifest_to_json(manifest), ensure_ascii=False, indent=1)
        fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".tmp", dir=self._path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
