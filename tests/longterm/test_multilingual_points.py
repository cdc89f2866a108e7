"""Issue 33: the multilingual vector only where it pays. An English-only tenant's
writes never call the second model; a Chinese text, a configured tenant or a tenant
that turns cross-language gets it (the earlier points in the background); a Chinese
question over points still catching up says so; ``all`` keeps every write as it was."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from memstrata.config import ConfigError, LongTermSettings, load_settings
from memstrata.longterm.catchup import SYNC_MAX
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES, MULTILINGUAL_VECTOR, Filter
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.results import RetrievalQuery
from memstrata.retrieval.retriever import Retriever
from memstrata.testing.embedders import HashEmbedder

CATCHUP_THREAD = "memstrata-multilingual-catchup"
ENGLISH = (
    "I live in Hangzhou with my sister",
    "My brother plays the violin in an orchestra",
    "I work as a nurse at the city hospital",
)


class Counting:
    """An embedder that counts the texts it is asked for, by thread; ``gate`` (when
    set) holds the background catch-up's calls until it is opened."""

    def __init__(self, inner: HashEmbedder) -> None:
        self.inner = inner
        self.name = "counting"
        self.dim = inner.dim
        self.texts: list[str] = []
        self.background: list[str] = []
        self.gate: threading.Event | None = None
        self.held = threading.Event()
        """Set once a catch-up call waits at the gate."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if threading.current_thread().name == CATCHUP_THREAD:
            if self.gate is not None:
                self.held.set()
                self.gate.wait(30)
            self.background.extend(texts)
        else:
            self.texts.extend(texts)
        return self.inner.embed(texts)


def open_store(
    path: Path, second: Counting, settings: LongTermSettings | None = None
) -> LongTermStore:
    return LongTermStore(
        EdgeIndex(path),
        HashEmbedder(32),
        Bm25Encoder(),
        settings or LongTermSettings(),
        multilingual=second,
    )


@pytest.fixture
def second() -> Counting:
    return Counting(HashEmbedder(16))


@pytest.fixture
def store(tmp_path: Path, second: Counting) -> Iterator[LongTermStore]:
    opened = open_store(tmp_path / "l3", second)
    yield opened
    opened.close()


def with_vector(store: LongTermStore, ids: Sequence[str], tenant: str) -> set[str]:
    return set(store.dense_vectors(MEMORIES, ids, tenant=tenant, using=MULTILINGUAL_VECTOR))


def test_an_english_only_tenant_never_calls_the_second_model(
    store: LongTermStore, second: Counting
) -> None:
    ids = store.add(MEMORIES, [NewItem(t, tenant="en", user="u1") for t in ENGLISH])
    ids += store.add(MEMORIES, [NewItem("Thanks, talk tomorrow", tenant="en", user="u1")])
    assert second.texts == [] and second.background == []
    assert with_vector(store, ids, "en") == set()
    # Acknowledged and searchable by English questions at once.
    reader = Retriever(store, store.embedder)
    found = reader.retrieve(RetrievalQuery("violin orchestra brother", tenant="en", user="u1"))
    assert found.items[0].text == ENGLISH[1]
    # An English question over an English-only tenant: no cross route, no USE call.
    assert second.texts == []
    assert store.catchup_state().tenants_queued == 0


def test_chinese_text_gets_both_vectors_and_turns_its_tenant_cross_language(
    store: LongTermStore, second: Counting
) -> None:
    english = store.add(MEMORIES, [NewItem(t, tenant="mix", user="u1") for t in ENGLISH])
    assert with_vector(store, english, "mix") == set()
    [chinese] = store.add(MEMORIES, [NewItem("我对花生过敏", tenant="mix", user="u1")])
    assert second.texts == ["我对花生过敏"]
    assert with_vector(store, [chinese], "mix") == {chinese}
    # The earlier English points get it in the background, with the same vectors a
    # write would have given them.
    assert store.settle(30)
    assert sorted(second.background) == sorted(ENGLISH)
    stored = store.dense_vectors(MEMORIES, english, tenant="mix", using=MULTILINGUAL_VECTOR)
    for point_id, text in zip(english, ENGLISH, strict=True):
        assert np.allclose(stored[point_id], second.inner.embed([text])[0], atol=1e-5)
    # From now on every point of the tenant is written with both.
    [later] = store.add(MEMORIES, [NewItem("I moved to Chengdu", tenant="mix", user="u1")])
    assert second.texts[-1] == "I moved to Chengdu"
    assert with_vector(store, [later], "mix") == {later}
    state = store.catchup_state()
    assert (state.state, state.tenants_queued, state.points_done) == ("idle", 0, len(ENGLISH))


def test_a_configured_tenant_and_the_all_policy_embed_every_point_at_write(
    tmp_path: Path, second: Counting
) -> None:
    configured = LongTermSettings(cross_language_tenants=("acme",))
    store = open_store(tmp_path / "configured", second, configured)
    try:
        ids = store.add(MEMORIES, [NewItem(t, tenant="acme") for t in ENGLISH])
        other = store.add(MEMORIES, [NewItem(ENGLISH[0], tenant="beta")])
        assert with_vector(store, ids, "acme") == set(ids)
        assert with_vector(store, other, "beta") == set()
        assert second.texts == list(ENGLISH)
    finally:
        store.close()
    every = open_store(tmp_path / "all", second, LongTermSettings(multilingual_points="all"))
    try:
        ids = every.add(MEMORIES, [NewItem(t, tenant="beta") for t in ENGLISH])
        assert with_vector(every, ids, "beta") == set(ids)
        assert every.catchup_state().policy == "all"
        assert second.background == []
    finally:
        every.close()


def test_update_vectors_sets_one_named_vector_and_nothing_else(store: LongTermStore) -> None:
    extra = {"thread": "t1", "seq": 3, "note": "kept"}
    [point] = store.add(MEMORIES, [NewItem(ENGLISH[0], tenant="en", extra=extra)])
    [other] = store.add(MEMORIES, [NewItem(ENGLISH[1], tenant="zz")])
    [before] = store.get(MEMORIES, [point], tenant="en")
    dense = store.dense_vectors(MEMORIES, [point], tenant="en")[point]
    index = store.index
    row = np.ones(16, dtype=np.float32) / 4.0
    # Another tenant's id and a point deleted meanwhile are left alone, without error.
    deleted = store.add(MEMORIES, [NewItem("gone soon", tenant="en")])
    store.delete(MEMORIES, deleted, tenant="en")
    index.update_vectors(
        MEMORIES, "en", MULTILINGUAL_VECTOR, {point: row, other: row, deleted[0]: row}
    )
    [after] = store.get(MEMORIES, [point], tenant="en")
    assert dict(after.payload) == dict(before.payload)
    assert np.allclose(store.dense_vectors(MEMORIES, [point], tenant="en")[point], dense)
    assert np.allclose(with_vectors(store, point, "en"), row)
    assert with_vector(store, [other], "zz") == set()
    # BM25 still finds it: its sparse vector was not touched.
    reader = Retriever(store, store.embedder)
    hits = reader.search(MEMORIES, "Hangzhou sister", tenant="en", mode="sparse")
    assert [h.id for h in hits] == [point]
    # A point that has the vector keeps its own (the update is conditioned on it
    # still missing: a rewrite with the vector meanwhile wins).
    index.update_vectors(MEMORIES, "en", MULTILINGUAL_VECTOR, {point: -row})
    assert np.allclose(with_vectors(store, point, "en"), row)
    assert index.count(MEMORIES, Filter(tenant="en", lacks_vector=MULTILINGUAL_VECTOR)) == 0


def with_vectors(store: LongTermStore, point: str, tenant: str) -> NDArray[np.float32]:
    return store.dense_vectors(MEMORIES, [point], tenant=tenant, using=MULTILINGUAL_VECTOR)[point]


def test_a_chinese_question_embeds_a_bounded_number_first_and_names_the_rest(
    store: LongTermStore, second: Counting
) -> None:
    second.gate = threading.Event()  # the background catch-up waits
    texts = [f"note number {i} about the garden" for i in range(SYNC_MAX + 36)]
    ids = store.add(MEMORIES, [NewItem(t, tenant="en", user="u1") for t in texts])
    reader = Retriever(store, store.embedder)
    result = reader.retrieve(RetrievalQuery("我的花园怎么样", tenant="en", user="u1"))
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("36 memories are not yet indexed")
    assert result.warnings[0].endswith("[multilingual_pending]")
    assert len(with_vector(store, ids, "en")) == SYNC_MAX
    assert "我的花园怎么样" in second.texts  # the question's own embedding
    second.gate.set()
    assert store.settle(30)
    assert with_vector(store, ids, "en") == set(ids)
    again = reader.retrieve(RetrievalQuery("我的花园怎么样", tenant="en", user="u1"))
    assert again.warnings == ()


def test_a_restart_in_the_middle_resumes(tmp_path: Path, second: Counting) -> None:
    second.gate = threading.Event()
    store = open_store(tmp_path / "l3", second)
    texts = [f"entry {i} of the travel diary" for i in range(150)]
    ids = store.add(MEMORIES, [NewItem(t, tenant="trip", user="u1") for t in texts])
    store.add(MEMORIES, [NewItem("我下个月去日本", tenant="trip", user="u1")])
    assert store.catchup_state().tenants_queued == 1
    # Stopped while its first chunk waits: close() lets that chunk finish, no more.
    # Each step waits for the one before (no timer: a busy machine reorders those).
    assert second.held.wait(60), "the catch-up never reached its first chunk"
    closer = threading.Thread(target=store.close)
    closer.start()
    deadline = time.monotonic() + 60
    while store.catchup_state().state != "stopped" and time.monotonic() < deadline:
        time.sleep(0.01)
    second.gate.set()
    closer.join(60)
    assert not closer.is_alive()
    assert len(second.background) == 16
    left = len(ids) - len(second.background)
    fresh = Counting(HashEmbedder(16))
    store = open_store(tmp_path / "l3", fresh)
    try:
        # The next write of the tenant finds its Chinese point, so it is
        # cross-language again, and its points still lacking the vector are found.
        store.add(MEMORIES, [NewItem("one more line", tenant="trip", user="u1")])
        assert store.settle(60)
        assert with_vector(store, ids, "trip") == set(ids)
        assert len(fresh.background) == left
    finally:
        store.close()


def test_bad_settings_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"longterm\.multilingual_points: must be one of"):
        LongTermSettings(multilingual_points="some")
    with pytest.raises(ConfigError, match=r"longterm\.cross_language_tenants\[1\]"):
        LongTermSettings(cross_language_tenants=("acme", "bad id!"))
    with pytest.raises(ConfigError, match=r"longterm\.cross_language_tenants: must be a list"):
        LongTermSettings(cross_language_tenants="acme")  # type: ignore[arg-type]
    path = tmp_path / "settings.json"
    path.write_text('{"longterm": {"cross_language_tenants": ["acme", "beta"]}}')
    assert load_settings(path).longterm.cross_language_tenants == ("acme", "beta")


def test_a_failing_model_in_the_catch_up_says_why_and_loses_nothing(
    store: LongTermStore, second: Counting
) -> None:
    english = store.add(MEMORIES, [NewItem(t, tenant="mix", user="u1") for t in ENGLISH])
    real = second.inner.embed

    def broken(texts: Sequence[str]) -> NDArray[np.float32]:
        if threading.current_thread().name == CATCHUP_THREAD:
            raise RuntimeError("model file unreadable")
        return real(texts)

    second.inner.embed = broken  # type: ignore[method-assign]
    [chinese] = store.add(MEMORIES, [NewItem("我对花生过敏", tenant="mix", user="u1")])
    assert store.settle(30)
    # The foreground write stood; the catch-up failed, said why, and wrote nothing.
    assert with_vector(store, [chinese], "mix") == {chinese}
    assert with_vector(store, english, "mix") == set()
    state = store.catchup_state()
    assert state.last_error is not None and "model file unreadable" in state.last_error
    assert state.state == "idle" and state.points_done == 0
    # Repaired, the next trigger finds every point still lacking the vector.
    second.inner.embed = real  # type: ignore[method-assign]
    coverage = store.coverage
    assert coverage is not None
    coverage.schedule("mix")
    assert store.settle(30)
    assert with_vector(store, english, "mix") == set(english)
    assert store.catchup_state().points_done == len(ENGLISH)
