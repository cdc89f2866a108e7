"""Documents given as text take the files' path: chunked, sanitized, incremental by hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstrata.errors import BackendError, ValidationError
from memstrata.knowledge import Document, KnowledgeIngestor
from memstrata.knowledge.ingest import DOCUMENT_KEY_PREFIX
from memstrata.knowledge.manifest import JsonManifestStore
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import KNOWLEDGE, Filter, Record

GUIDE = "# Guide\n\nWelcome.\n\n## Install\n\nUnpack the pump.\n\n## Operate\n\nPress start.\n"
SECRET = "sk-proj-AbCdEf0123456789AbCdEf0123456789AbCd"


def records(store: LongTermStore, tenant: str) -> dict[str, Record]:
    return {r.id: r for r in store.iter_records(KNOWLEDGE, Filter(tenant=tenant))}


def test_documents_are_added_updated_and_skipped_by_name(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, tmp_path: Path
) -> None:
    guide = Document("guides/pump.md", GUIDE, "markdown")
    faq = Document("faq.html", "<h1>FAQ</h1><p>Is it loud? No.</p>", "html")
    first = ingestor.ingest_documents([guide, faq], tenant=tenant)
    assert (first.files_seen, first.files_added, first.errors) == (2, 2, ())
    stored = records(store, tenant)
    assert first.chunks_added == len(stored) == 3 + 1
    assert {r.payload["source"] for r in stored.values()} == {"guides/pump.md", "faq.html"}
    install = next(r for r in stored.values() if r.payload["section"] == "Guide > Install")
    assert install.payload["text"].endswith("Unpack the pump.")

    again = ingestor.ingest_documents([guide, faq], tenant=tenant)
    assert (again.files_skipped, again.chunks_added, again.chunks_deleted) == (2, 0, 0)

    edited = Document("guides/pump.md", GUIDE.replace("Press start.", "Press go."), "markdown")
    changed = ingestor.ingest_documents([edited], tenant=tenant)
    assert (changed.files_updated, changed.chunks_added, changed.chunks_deleted) == (1, 1, 1)
    # Not named this time, but never removed: documents are only added or replaced.
    assert changed.files_removed == 0 and len(records(store, tenant)) == 4
    keys = JsonManifestStore(tmp_path / "data").load().entries
    assert (tenant, DOCUMENT_KEY_PREFIX + "faq.html") in keys


def test_a_document_and_a_file_of_the_same_name_are_apart(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.txt").write_text("Release notes\n\nVersion 2 is faster.", encoding="utf-8")
    ingestor.ingest([folder], tenant=tenant)
    ingestor.ingest_documents([Document("notes.txt", "Other notes", "text")], tenant=tenant)
    # Re-ingesting the folder forgets files gone from it, never the documents.
    report = ingestor.ingest([folder], tenant=tenant)
    assert (report.files_skipped, report.files_removed) == (1, 0)
    texts = sorted(r.payload["text"] for r in records(store, tenant).values())
    # A text without a heading is titled by the name's stem, as a file by its own.
    assert texts == ["Release notes\n\nVersion 2 is faster.", "notes\n\nOther notes"]


def test_a_secret_in_a_document_is_never_stored(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, tmp_path: Path
) -> None:
    text = f"# Ops\n\nexport OPENAI_API_KEY={SECRET}\n\nThen run it.\n"
    ingestor.ingest_documents([Document("ops.md", text, "markdown")], tenant=tenant)
    texts = [r.payload["text"] for r in records(store, tenant).values()]
    assert texts == ["Ops\n\nexport OPENAI_API_KEY=[REDACTED:api_key]\n\nThen run it."]
    manifest = (tmp_path / "data" / "knowledge_manifest.json").read_text(encoding="utf-8")
    assert SECRET not in manifest


def test_a_failing_document_is_reported_by_name_and_the_rest_ingested(
    tenant: str,
    ingestor: KnowledgeIngestor,
    store: LongTermStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_add = store.add

    def add(collection: str, items: Any) -> list[str]:
        if any(item.source == "bad.md" for item in items):
            raise BackendError("disk full")
        return real_add(collection, items)

    monkeypatch.setattr(store, "add", add)
    report = ingestor.ingest_documents(
        [
            Document("bad.md", "# Bad\n\nnever stored", "markdown"),
            Document("ok.txt", "fine", "text"),
        ],
        tenant=tenant,
    )
    assert report.files_added == 1
    assert [(e.path, e.reason) for e in report.errors] == [("bad.md", "disk full")]
    assert [r.payload["source"] for r in records(store, tenant).values()] == ["ok.txt"]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("../etc/passwd", "'..'"),
        ("docs/../../x.md", "'..'"),
        ("a\\..\\b.md", "'..'"),
        ("/abs/path.md", "relative"),
        ("x" * 513, "limit is 512"),
        ("bad\nname.md", "control"),
    ],
)
def test_a_bad_name_is_rejected_naming_the_field(name: str, reason: str) -> None:
    with pytest.raises(ValidationError) as err:
        Document(name, "text", "text")
    assert err.value.field == "name" and reason in err.value.reason


def test_names_up_to_the_limit_with_dots_are_fine() -> None:
    assert Document("a/b..c/v1.2.md", "t", "markdown").name == "a/b..c/v1.2.md"
    assert len(Document("x" * 512, "t", "text").name) == 512


def test_bad_documents_and_batches_are_rejected(tenant: str, ingestor: KnowledgeIngestor) -> None:
    with pytest.raises(ValidationError) as err:
        Document("a.md", "t", "pdf")  # type: ignore[arg-type]
    assert err.value.field == "format"
    with pytest.raises(ValidationError) as err:
        Document("a.md", b"bytes", "text")  # type: ignore[arg-type]
    assert err.value.field == "text"
    with pytest.raises(ValidationError) as err:
        ingestor.ingest_documents([], tenant=tenant)
    assert err.value.field == "documents"
    twice = [Document("a.md", "one", "text"), Document("a.md", "two", "text")]
    with pytest.raises(ValidationError) as err:
        ingestor.ingest_documents(twice, tenant=tenant)
    assert err.value.field == "documents[1].name"
    with pytest.raises(ValidationError) as err:
        ingestor.ingest_documents(["a.md"], tenant=tenant)  # type: ignore[list-item]
    assert err.value.field == "documents[0]"


def test_a_folder_manifest_prunes_what_is_gone_from_it(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore
) -> None:
    guide = Document("docs/guides/pump.md", GUIDE, "markdown")
    faq = Document("docs/faq.txt", "Is it loud? No.", "text")
    other = Document("docsextra/keep.txt", "Not under docs/.", "text")
    ingestor.ingest_documents([guide, faq, other], tenant=tenant)
    # Sent in two calls: the first's names are kept by the second's prune.
    ingestor.ingest_documents([guide], tenant=tenant)
    kept = ingestor.ingest_documents(
        [faq], tenant=tenant, prune_missing_under=["docs"], also_present=[guide.name]
    )
    assert (kept.files_skipped, kept.files_removed) == (1, 0)
    # The guide deleted from the folder: its chunks go; a name outside the folder stays.
    gone = ingestor.ingest_documents([faq], tenant=tenant, prune_missing_under=["docs/"])
    assert (gone.files_removed, gone.chunks_deleted) == (1, 3)
    sources = {r.payload["source"] for r in records(store, tenant).values()}
    assert sources == {"docs/faq.txt", "docsextra/keep.txt"}
    # Only a prune: no document at all, the whole folder is gone.
    emptied = ingestor.ingest_documents([], tenant=tenant, prune_missing_under=["docs"])
    assert (emptied.files_seen, emptied.files_removed) == (0, 1)
    with pytest.raises(ValidationError) as bad:
        ingestor.ingest_documents([faq], tenant=tenant, prune_missing_under=["../etc"])
    assert bad.value.field == "prune_missing_under[0]"


def test_a_folder_sent_as_documents_replaces_its_files_ingested_by_path(
    tenant: str, ingestor: KnowledgeIngestor, store: LongTermStore, tmp_path: Path
) -> None:
    # `memstrata ingest` once ingested a folder by path; now it sends it as documents
    # named by the absolute path without its leading '/': one copy of each chunk.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "pump.md").write_text(GUIDE, encoding="utf-8")
    ingestor.ingest([folder], tenant=tenant)
    assert len(records(store, tenant)) == 3
    name = str(folder / "pump.md").lstrip("/")
    report = ingestor.ingest_documents(
        [Document(name, GUIDE, "markdown")],
        tenant=tenant,
        prune_missing_under=[str(folder).lstrip("/")],
    )
    assert (report.files_added, report.files_removed, report.chunks_deleted) == (1, 1, 3)
    assert {r.payload["source"] for r in records(store, tenant).values()} == {name}
