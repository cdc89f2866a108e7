"""The cold path end to end on temporary files and an embedded store."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.progress import Progress

from memstrata.clock import FakeClock
from memstrata.errors import BackendError, ConfigError, ValidationError
from memstrata.gateway import Sanitizer
from memstrata.knowledge import (
    Chunker,
    FileEntry,
    IngestReport,
    JsonManifestStore,
    KnowledgeIngestor,
    Manifest,
    rich_progress,
    run_ingest_command,
)
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import KNOWLEDGE, Filter, Record

SECRET = "sk-proj-AbCdEf0123456789AbCdEf0123456789AbCd"


def records(store: LongTermStore, tenant: str) -> dict[str, Record]:
    return {r.id: r for r in store.iter_records(KNOWLEDGE, Filter(tenant=tenant))}


def ids_of(store: LongTermStore, tenant: str, source: str, section: str | None = None) -> set[str]:
    return {
        r.id
        for r in records(store, tenant).values()
        if r.payload["source"] == source and (section is None or r.payload["section"] == section)
    }


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GUIDE = """# Guide

Welcome to the pump guide.

## Install

Unpack the pump. Bolt it to the floor.

## Operate

Press start. Watch the gauge.

## Service

Replace the seal every year.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(root / "guide.md", GUIDE)
    write(
        root / "sub" / "faq.html", "<h1>FAQ</h1><p>Is it loud? No.</p><h2>Noise</h2><p>50 dB.</p>"
    )
    write(root / "notes.txt", "Release notes\n\nVersion 2 is faster.\n\nVersion 3 is quieter.")
    write(root / "ignored.pdf", "not a supported type")
    write(root / ".hidden" / "secret.md", "# Hidden\n\nnever ingested")
    return root


def test_first_ingest_adds_every_chunk_with_its_payload(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, docs: Path
) -> None:
    report = ingestor.ingest([docs], tenant=tenant)
    assert (report.files_seen, report.files_added, report.files_skipped) == (3, 3, 0)
    assert report.errors == ()
    stored = records(store, tenant)
    assert report.chunks_added == len(stored) == store.count(KNOWLEDGE, tenant=tenant) == 4 + 2 + 1
    assert {r.payload["source"] for r in stored.values()} == {
        "guide.md",
        "sub/faq.html",
        "notes.txt",
    }
    install = next(r for r in stored.values() if r.payload["section"] == "Guide > Install")
    mtime = os.stat(docs / "guide.md").st_mtime
    assert install.payload["text"] == "Guide > Install\n\nUnpack the pump. Bolt it to the floor."
    assert install.payload["type"] == "knowledge"
    assert install.payload["created_at"] == pytest.approx(mtime)
    assert install.payload["modified_at"] == pytest.approx(mtime)
    assert install.payload["chunk_index"] == 1
    assert len(install.payload["content_hash"]) == 64
    notes = next(r for r in stored.values() if r.payload["source"] == "notes.txt")
    assert notes.payload["section"] == "Release notes"


def test_second_ingest_of_unchanged_files_skips_everything(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, docs: Path, tmp_path: Path
) -> None:
    ingestor.ingest([docs], tenant=tenant)
    before = set(records(store, tenant))
    again = ingestor.ingest([docs], tenant=tenant)
    assert (again.files_seen, again.files_skipped, again.files_added, again.files_updated) == (
        3,
        3,
        0,
        0,
    )
    assert (again.chunks_added, again.chunks_deleted) == (0, 0)
    assert set(records(store, tenant)) == before
    # The manifest outlives the ingestor: a new one over the same directory skips too.
    fresh = KnowledgeIngestor(store, Sanitizer(), FakeClock(), manifest_dir=tmp_path / "data")
    assert fresh.ingest([docs], tenant=tenant).files_skipped == 3


def test_editing_one_section_replaces_exactly_its_chunks(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, docs: Path
) -> None:
    ingestor.ingest([docs], tenant=tenant)
    untouched = ids_of(store, tenant, "guide.md") - ids_of(
        store, tenant, "guide.md", "Guide > Operate"
    )
    old_operate = ids_of(store, tenant, "guide.md", "Guide > Operate")
    others = ids_of(store, tenant, "notes.txt") | ids_of(store, tenant, "sub/faq.html")
    write(docs / "guide.md", GUIDE.replace("Watch the gauge.", "Watch the pressure gauge."))

    report = ingestor.ingest([docs], tenant=tenant)

    assert (report.files_updated, report.files_skipped) == (1, 2)
    assert (report.chunks_added, report.chunks_deleted) == (1, 1)
    new_operate = ids_of(store, tenant, "guide.md", "Guide > Operate")
    assert len(new_operate) == 1 and not new_operate & old_operate
    assert ids_of(store, tenant, "guide.md") == untouched | new_operate
    assert others <= set(records(store, tenant))
    text = records(store, tenant)[next(iter(new_operate))].payload["text"]
    assert text == "Guide > Operate\n\nPress start. Watch the pressure gauge."


def test_deleting_a_section_deletes_its_chunks(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, docs: Path
) -> None:
    ingestor.ingest([docs], tenant=tenant)
    service = ids_of(store, tenant, "guide.md", "Guide > Service")
    assert len(service) == 1
    write(docs / "guide.md", GUIDE.split("## Service")[0])
    report = ingestor.ingest([docs], tenant=tenant)
    assert (report.chunks_added, report.chunks_deleted) == (0, 1)
    assert not service & set(records(store, tenant))
    assert len(ids_of(store, tenant, "guide.md")) == 3


def test_deleting_a_file_deletes_its_chunks(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, docs: Path
) -> None:
    ingestor.ingest([docs], tenant=tenant)
    faq = ids_of(store, tenant, "sub/faq.html")
    (docs / "sub" / "faq.html").unlink()
    report = ingestor.ingest([docs], tenant=tenant)
    assert (report.files_seen, report.files_removed, report.chunks_deleted) == (2, 1, len(faq))
    assert ids_of(store, tenant, "sub/faq.html") == set()
    assert store.count(KNOWLEDGE, tenant=tenant) == 5
    # Named explicitly after it is gone, a file's chunks are forgotten too.
    (docs / "notes.txt").unlink()
    gone = ingestor.ingest([docs / "notes.txt"], tenant=tenant)
    assert (gone.files_removed, gone.errors) == (1, ())
    assert ids_of(store, tenant, "notes.txt") == set()


def test_undecodable_and_binary_files_are_reported_and_the_rest_ingested(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, docs: Path
) -> None:
    (docs / "latin1.txt").write_bytes("Caf\xe9 menu\n\nCr\xe8me br\xfbl\xe9e.".encode("latin-1"))
    (docs / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    report = ingestor.ingest([docs], tenant=tenant)
    assert report.files_seen == 5 and report.files_added == 3
    reasons = {e.path: e.reason for e in report.errors}
    assert set(reasons) == {"latin1.txt", "image.md"}
    assert "not UTF-8" in reasons["latin1.txt"]
    assert "binary" in reasons["image.md"]
    assert store.count(KNOWLEDGE, tenant=tenant) == 7
    # Not recorded as ingested: once fixed, the file is picked up.
    (docs / "latin1.txt").write_text("Cafe menu\n\nCreme brulee.", encoding="utf-8")
    fixed = ingestor.ingest([docs], tenant=tenant)
    assert fixed.files_added == 1 and [e.path for e in fixed.errors] == ["image.md"]


def test_a_secret_in_a_document_is_never_stored(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, tmp_path: Path
) -> None:
    doc = write(tmp_path / "ops.md", f"# Ops\n\nexport OPENAI_API_KEY={SECRET}\n\nThen run it.\n")
    ingestor.ingest([doc], tenant=tenant)
    texts = [r.payload["text"] for r in records(store, tenant).values()]
    assert texts == ["Ops\n\nexport OPENAI_API_KEY=[REDACTED:api_key]\n\nThen run it."]
    manifest = (tmp_path / "data" / "knowledge_manifest.json").read_text(encoding="utf-8")
    assert SECRET not in manifest


def test_a_failed_write_keeps_the_old_version_whole(
    tenant: str,
    ingestor: KnowledgeIngestor,
    store: LongTermStore,
    docs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ingestor.ingest([docs], tenant=tenant)
    before = set(records(store, tenant))
    write(docs / "guide.md", GUIDE.replace("Press start.", "Press go."))

    def broken_add(collection: str, items: Any) -> list[str]:
        raise BackendError("disk full")

    monkeypatch.setattr(store, "add", broken_add)
    report = ingestor.ingest([docs], tenant=tenant)
    assert [(e.path, e.reason) for e in report.errors] == [("guide.md", "disk full")]
    assert set(records(store, tenant)) == before  # nothing deleted before the new chunks exist
    monkeypatch.undo()
    retried = ingestor.ingest([docs], tenant=tenant)
    assert (retried.files_updated, retried.chunks_added, retried.chunks_deleted) == (1, 1, 1)


def test_manifest_is_written_atomically_and_keyed_by_tenant(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, docs: Path, tmp_path: Path
) -> None:
    ingestor.ingest([docs], tenant=tenant)
    data_dir = tmp_path / "data"
    assert os.listdir(data_dir) == ["knowledge_manifest.json"]  # no temp file left behind
    document = json.loads((data_dir / "knowledge_manifest.json").read_text(encoding="utf-8"))
    guide = next(f for f in document["files"] if f["path"].endswith("guide.md"))
    assert guide["tenant"] == tenant and os.path.isabs(guide["path"])
    assert sum(len(ids) for ids in guide["chunks"].values()) == 4
    assert JsonManifestStore(data_dir).load().get(tenant, guide["path"]) is not None
    # Another tenant's ingest of the same files is independent of ours.
    other = ingestor.ingest([docs], tenant=f"{tenant}-b")
    assert other.files_added == 3
    assert (
        store.count(KNOWLEDGE, tenant=f"{tenant}-b") == store.count(KNOWLEDGE, tenant=tenant) == 7
    )


def test_a_new_chunk_budget_rechunks_unchanged_files(
    tenant: str, store: LongTermStore, docs: Path, tmp_path: Path
) -> None:
    long_doc = write(
        docs / "long.md", "# Long\n\n" + " ".join(f"Fact {i} holds." for i in range(60))
    )
    first = KnowledgeIngestor(store, Sanitizer(), FakeClock(), manifest_dir=tmp_path / "m")
    first.ingest([long_doc], tenant=tenant)
    assert store.count(KNOWLEDGE, tenant=tenant) == 1
    small = KnowledgeIngestor(
        store, Sanitizer(), FakeClock(), manifest_dir=tmp_path / "m", chunker=Chunker(max_tokens=64)
    )
    report = small.ingest([long_doc], tenant=tenant)
    assert report.files_updated == 1 and report.chunks_deleted == 1
    assert store.count(KNOWLEDGE, tenant=tenant) == report.chunks_added > 2


def test_progress_bar_and_cli_glue(
    tenant: str,
    store: LongTermStore,
    sanitizer: Sanitizer,
    clock: FakeClock,
    docs: Path,
    tmp_path: Path,
) -> None:
    console = Console(file=io.StringIO(), width=120, record=True)
    (docs / "wide.txt").write_bytes("Wide notes\n\nStored as UTF-16.".encode("utf-16"))
    ingestor = KnowledgeIngestor(store, sanitizer, clock, manifest_dir=tmp_path / "d")
    report = run_ingest_command(
        lambda progress: ingestor.ingest([docs], tenant=tenant, progress=progress), console
    )
    assert isinstance(report, IngestReport) and report.files_added == 4
    out = console.export_text()
    assert "files added" in out and "chunks added" in out
    progress = Progress(console=Console(file=io.StringIO()))
    ingestor = KnowledgeIngestor(store, sanitizer, clock, manifest_dir=tmp_path / "p")
    ingestor.ingest([docs], tenant=f"{tenant}-o", progress=rich_progress(progress))
    (task,) = progress.tasks
    assert task.total == task.completed == 4
    calls: list[tuple[str, int, int]] = []
    ingestor.ingest([docs], tenant=f"{tenant}-o", progress=lambda *call: calls.append(call))
    assert [done for _, done, _ in calls] == [0, 1, 2, 3, 4]
    assert {total for _, _, total in calls} == {4} and calls[-1][0] == ""


def test_cli_glue_prints_errors(
    tenant: str,
    store: LongTermStore,
    sanitizer: Sanitizer,
    clock: FakeClock,
    docs: Path,
    tmp_path: Path,
) -> None:
    console = Console(file=io.StringIO(), width=200, record=True)
    (docs / "broken [v2].txt").write_bytes(b"ok\x00\x01")
    ingestor = KnowledgeIngestor(store, sanitizer, clock, manifest_dir=tmp_path / "d")
    report = run_ingest_command(
        lambda progress: ingestor.ingest([docs], tenant=tenant, progress=progress), console
    )
    assert [e.path for e in report.errors] == ["broken [v2].txt"]
    assert "error: broken [v2].txt: binary file" in console.export_text()


def test_paths_that_cannot_be_ingested_are_reported(
    tenant: str, ingestor: KnowledgeIngestor, docs: Path
) -> None:
    report = ingestor.ingest(
        [docs / "ignored.pdf", docs / "nope.md", docs / "notes.txt"], tenant=tenant
    )
    assert report.files_added == 1
    assert {(e.path.rsplit("/", 1)[-1], e.reason) for e in report.errors} == {
        ("ignored.pdf", "unsupported file type"),
        ("nope.md", "no such file or directory"),
    }


def test_arguments_are_validated(store: LongTermStore, tmp_path: Path, docs: Path) -> None:
    with pytest.raises(ValidationError) as err:
        KnowledgeIngestor(store, Sanitizer(), FakeClock())
    assert err.value.field == "manifest"
    both = {"manifest_dir": tmp_path, "manifest": JsonManifestStore(tmp_path)}
    with pytest.raises(ValidationError):
        KnowledgeIngestor(store, Sanitizer(), FakeClock(), **both)  # type: ignore[arg-type]
    ingestor = KnowledgeIngestor(store, Sanitizer(), FakeClock(), manifest_dir=tmp_path)
    with pytest.raises(ValidationError) as err:
        ingestor.ingest([docs], tenant="no spaces allowed")
    assert err.value.field == "tenant"
    with pytest.raises(ValidationError) as err:
        ingestor.ingest(docs, tenant="ok")  # type: ignore[arg-type]
    assert err.value.field == "paths"


def test_manifest_round_trip_and_corruption(tmp_path: Path) -> None:
    entry = FileEntry("f" * 64, "a.md", "v1:256:x", {"h1": ("id1", "id2"), "h2": ("id3",)})
    manifest = (
        Manifest().with_entry("acme", "/docs/a.md", entry).with_entry("acme", "/x/b.md", entry)
    )
    store = JsonManifestStore(tmp_path)
    assert store.load() == Manifest()
    store.save(manifest)
    loaded = store.load()
    assert loaded.get("acme", "/docs/a.md") == entry
    assert list(loaded.paths_under("acme", "/docs")) == ["/docs/a.md"]
    assert list(loaded.paths_under("other", "/docs")) == []
    assert loaded.without("acme", "/docs/a.md").get("acme", "/docs/a.md") is None
    assert loaded.get("acme", "/docs/a.md") is not None  # values, never mutated
    store.path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError):
        store.load()
    store.path.write_text('{"version": 1, "files": [{"tenant": "acme"}]}', encoding="utf-8")
    with pytest.raises(ConfigError):
        store.load()
