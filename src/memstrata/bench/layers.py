"""``memstrata bench layers``: L2 overhead, L3 hybrid search, route() latency.

Every number comes with its baseline measured in the same run:
- L2: memstrata's working-memory calls against the same commands issued with raw
  redis-py on the same embedded Valkey, interleaved op by op so drift hits both. The
  raw caller serializes with the standard ``json`` module (the ratio the targets
  use) and, as a second baseline, with orjson (what memstrata uses inside).
- L3: hybrid (dense + BM25, fused) tenant-filtered search on qdrant-edge at each size,
  against a raw qdrant-edge caller making the same two engine calls (the fused RRF
  query, then the top hits' cosines and payloads by id) on the same shard: the
  engine's own floor. Timed in alternating blocks of ``TIMING_BLOCK`` queries (the
  headline) and, on other queries, interleaved query by query (every call right
  after the other path's). Points use stored vectors: a few thousand texts are
  embedded with MiniLM once and the rest are jittered copies, so 100k points take
  minutes, not hours.
- route(): the generate_report intent (L1 + L2 result + preference + 2 L3 searches),
  with the query embedding precomputed and with a fresh embedding per call; the
  first against a raw caller reading the same L2 keys with redis-py and making the
  same two L3 searches as the raw L3 caller, in alternating blocks.

L3 and route() are timed in steady state: ``WARMUP_QUERIES`` other queries run first
(the first queries after a build fault in pages of the engine's files; measured:
p99 3.5 ms cold against 2.8-3.1 ms warm at 100k).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import qdrant_edge as qe
import redis
from numpy.typing import NDArray
from rich.console import Console

from memstrata.bench.stats import progress_bar, summary_ms, summary_us, timed
from memstrata.clock import SystemClock
from memstrata.config import LongTermSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.protocol import Embedder, TokenEmbedder
from memstrata.engine import ContextEngine
from memstrata.gateway import Sanitizer
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.edge_requests import (
    dense_params,
    ids_filter,
    sparse_params,
    sparse_query,
    tenant_filter,
)
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.fusion import ENGINE_RRF_K
from memstrata.longterm.points import DENSE_VECTOR, SparseVector
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval import Retriever
from memstrata.retrieval.search import hybrid_route_depth
from memstrata.session.state import SessionState
from memstrata.wiring import (
    embedded_valkey,
    open_index,
    open_longterm,
    open_reader,
    open_working,
    redis_backend,
)
from memstrata.working import keys as K
from memstrata.working.stepgraph import StepGraph, StepSpec
from memstrata.working.values import META_PREFIX

L2_OPS = 3000
BASE_TEXTS = 2000
TENANTS = 100
BATCH = 2000
WARMUP_QUERIES = 200
# L3 queries timed in a row before the other path takes its turn (see bench_l3).
TIMING_BLOCK = 50

_SUBJECTS = (
    "device",
    "battery pack",
    "cooling loop",
    "inverter",
    "charger",
    "user",
    "order",
    "sensor",
)
_VERBS = ("reported", "exceeded", "dropped below", "recovered from", "was checked for", "logged")
_OBJECTS = (
    "temperature alarm",
    "vibration spike",
    "voltage sag",
    "coolant flow limit",
    "firmware update",
    "calibration offset",
    "refund request",
    "delivery delay",
)
_PLACES = ("Hangzhou", "Chengdu", "Shenzhen", "Berlin", "Austin", "Osaka", "Lyon", "Pune")


def _texts(rng: random.Random, n: int) -> list[str]:
    return [
        f"{rng.choice(_SUBJECTS)} D{rng.randint(100, 999)} {rng.choice(_VERBS)} "
        f"{rng.choice(_OBJECTS)} in {rng.choice(_PLACES)} on 2025-0{rng.randint(1, 9)}-"
        f"{rng.randint(10, 28)} (ticket T{rng.randint(10000, 99999)})"
        for _ in range(n)
    ]


def _jitter(
    base: NDArray[np.float32], rng: np.random.Generator, scale: float = 0.08
) -> NDArray[np.float32]:
    noisy = base + rng.normal(0.0, scale / np.sqrt(base.shape[1]), base.shape).astype(np.float32)
    unit: NDArray[np.float32] = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


def _raw_set(client: redis.Redis, key: str, value: object) -> object:
    # What a raw redis-py caller does too: serialize, then SET with an expiry.
    return client.set(key, json.dumps(value, separators=(",", ":")), ex=900)


def _raw_get(client: redis.Redis, key: str) -> object:
    return json.loads(client.get(key) or "null")


def _raw_fast_set(client: redis.Redis, key: str, value: object) -> object:
    # The same with orjson, the encoder memstrata's L2 uses.
    return client.set(key, orjson.dumps(value), ex=900)


def _raw_fast_get(client: redis.Redis, key: str) -> object:
    return orjson.loads(client.get(key) or "null")


L2_OPERATIONS = (
    "mem_set",
    "mem_get",
    "gw_set",
    "raw_set",
    "raw_get",
    "raw_orjson_set",
    "raw_orjson_get",
)
"""What :func:`bench_l2` times, interleaved, each ``ops`` times (its ``by_op``)."""


def bench_l2(data_dir: Path, ops: int = L2_OPS) -> dict[str, Any]:
    """memstrata L2 calls vs raw redis-py calls on one embedded Valkey."""
    with embedded_valkey(Settings(data_dir=data_dir)) as server:
        backend = redis_backend(server.url)
        clock = SystemClock()
        config = Settings(data_dir=data_dir)
        plain = open_working(config, backend, clock, sanitizer=None)
        guarded = open_working(config, backend, clock, sanitizer=Sanitizer())
        # The baseline: plain redis-py calls on a connection of their own.
        raw_backend = redis_backend(server.url)
        raw = raw_backend.client
        value = {
            "device_id": "D123",
            "status": "ok",
            "temps": [41.5, 42.0, 47.2],
            "window": "2025-03-24T08:00Z",
        }
        samples: dict[str, list[float]] = {name: [] for name in L2_OPERATIONS}
        wm_plain = plain.session("bench_s1")
        wm_guarded = guarded.session("bench_s2")
        for i in range(ops):
            params = {"i": i}
            raw_key = f"wm:{{bench_raw}}:api:{i}"
            samples["mem_set"].append(timed(wm_plain.put_api_response, "ep", params, value))
            samples["raw_set"].append(timed(_raw_set, raw, raw_key, value))
            samples["gw_set"].append(timed(wm_guarded.put_api_response, "ep", params, value))
            samples["mem_get"].append(timed(wm_plain.get_api_response, "ep", params))
            samples["raw_get"].append(timed(_raw_get, raw, raw_key))
            fast_key = f"wm:{{bench_raw_orjson}}:api:{i}"
            samples["raw_orjson_set"].append(timed(_raw_fast_set, raw, fast_key, value))
            samples["raw_orjson_get"].append(timed(_raw_fast_get, raw, fast_key))
        raw_backend.close()
        plain.close()
    mem = samples["mem_set"] + samples["mem_get"]
    base = samples["raw_set"] + samples["raw_get"]
    gw = samples["gw_set"] + samples["mem_get"]
    fast = samples["raw_orjson_set"] + samples["raw_orjson_get"]
    mem_s, base_s, gw_s = summary_us(mem), summary_us(base), summary_us(gw)
    fast_s = summary_us(fast)
    return {
        **mem_s,
        "overhead_ratio": round(mem_s["p50_us"] / base_s["p50_us"], 3),
        "overhead_ratio_vs_raw_orjson": round(mem_s["p50_us"] / fast_s["p50_us"], 3),
        "overhead_ratio_with_gateway": round(gw_s["p50_us"] / base_s["p50_us"], 3),
        "raw": base_s,
        "raw_orjson": fast_s,
        "with_gateway": gw_s,
        "by_op": {name: summary_us(values) for name, values in samples.items()},
        "ops_each": ops,
        "note": (
            "ratio = p50 of memstrata put/get_api_response / p50 of raw redis-py "
            "json.dumps+SET EX and GET+json.loads on the same server, interleaved; "
            "vs_raw_orjson: the raw calls with orjson.dumps / orjson.loads instead"
        ),
    }


def _build_store(
    path: Path,
    size: int,
    embedder: Embedder,
    base_vecs: NDArray[np.float32],
    texts: list[str],
    seed: int,
    settings: LongTermSettings,
) -> LongTermStore:
    """An embedded L3 under ``path`` as an engine opens it, holding ``size`` points."""
    config = Settings(data_dir=path, longterm=settings)
    store = open_longterm(config, open_index(config), embedder, clock=SystemClock())
    rng = np.random.default_rng(seed)
    pyrng = random.Random(seed)
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        picks = rng.integers(0, len(texts), n)
        vectors = _jitter(base_vecs[picks], rng)
        items = [
            NewItem(
                text=texts[int(p)],
                tenant=f"t{pyrng.randrange(TENANTS)}",
                user=f"u{pyrng.randrange(10)}",
                type=pyrng.choice(("fact", "event")),
                source="bench",
            )
            for p in picks
        ]
        store.add_vectors("memories", items, vectors)
    store.optimize()
    return store


def raw_edge_search(
    shard: qe.EdgeShard,
    vector: list[float],
    sparse: SparseVector,
    tenant: str,
    *,
    k: int,
    dense_depth: int,
    sparse_depth: int,
    ef: int,
    scope: qe.Filter | None = None,
) -> list[tuple[Any, float, Any]]:
    """A hybrid search as a caller of qdrant-edge alone would make it: the fused RRF
    query, then the cosines and payloads of its top ``k`` by id; results read.

    The engine requests are built by the edge adapter's own pure builders, so they
    are the ones the reader's hybrid search sends; around them no validation,
    tokenizing, caches or tie handling: the engine's floor for the same answer.
    ``scope``: the routes' filter (default: the tenant alone).
    """
    own = tenant_filter(tenant) if scope is None else scope
    routes = [
        qe.Prefetch(
            limit=dense_depth,
            query=qe.Query.Nearest(vector, using=DENSE_VECTOR),
            filter=own,
            params=dense_params(ef),
        ),
        qe.Prefetch(
            limit=sparse_depth,
            query=sparse_query(sparse, tenant),
            filter=own,
            params=sparse_params(tenant),
        ),
    ]
    fused = shard.query(
        qe.QueryRequest(
            limit=k,
            prefetches=routes,
            query=qe.Fusion.Rrf(k=ENGINE_RRF_K),  # type: ignore[arg-type]
            with_payload=False,
        )
    )
    if not fused:
        return []
    scored = shard.query(
        qe.QueryRequest(
            limit=len(fused),
            query=qe.Query.Nearest(vector, using=DENSE_VECTOR),
            # The engine's UUID objects as they came: a raw caller has no text ids.
            filter=ids_filter([p.id for p in fused], tenant),
            with_payload=True,
            params=dense_params(ef),
        )
    )
    return [(p.id, p.score, p.payload) for p in scored]


def _l3_searches(
    reader: Retriever,
    shard_of: Callable[[str], qe.EdgeShard],
    encoder: Bm25Encoder,
    texts: list[str],
    vectors: NDArray[np.float32],
    *,
    dense_depth: int,
    sparse_depth: int,
    ef: int,
) -> tuple[list[Callable[[], object]], list[Callable[[], object]]]:
    """Each query as memstrata's search and as the raw engine calls, ready to time."""
    ours: list[Callable[[], object]] = []
    engine: list[Callable[[], object]] = []
    for i, (text, vec) in enumerate(zip(texts, vectors, strict=True)):
        tenant = f"t{i % TENANTS}"
        ours.append(partial(reader.search, "memories", text, tenant=tenant, k=10, query_vector=vec))
        engine.append(
            partial(
                raw_edge_search,
                shard_of(tenant),  # the part of the collection holding the tenant
                (vec / np.linalg.norm(vec)).tolist(),
                encoder.encode_query(text),
                tenant,
                k=10,
                dense_depth=dense_depth,
                sparse_depth=sparse_depth,
                ef=ef,
            )
        )
    return ours, engine


def _time_in_blocks(
    ours: list[Callable[[], object]],
    raw: list[Callable[[], object]],
    *,
    alternate: bool = True,
) -> tuple[list[float], list[float]]:
    """Each path times ``TIMING_BLOCK`` queries in a row, then the other path the
    same queries; which goes first alternates, so drift hits both (``alternate``
    False: ours first in every block, for a raw path replaying what ours did)."""
    ours_s: list[float] = []
    raw_s: list[float] = []
    for n, start in enumerate(range(0, len(ours), TIMING_BLOCK)):
        end = start + TIMING_BLOCK
        runs = [(ours[start:end], ours_s), (raw[start:end], raw_s)]
        for calls, into in runs if n % 2 == 0 or not alternate else runs[::-1]:
            into.extend(timed(call) for call in calls)
    return ours_s, raw_s


def _time_interleaved(
    ours: list[Callable[[], object]], raw: list[Callable[[], object]]
) -> tuple[list[float], list[float]]:
    """Query by query, the two paths alternately, which goes first alternating."""
    ours_s: list[float] = []
    raw_s: list[float] = []
    for i, pair in enumerate(zip(ours, raw, strict=True)):
        runs = [(pair[0], ours_s), (pair[1], raw_s)]
        for call, into in runs if i % 2 else runs[::-1]:
            into.append(timed(call))
    return ours_s, raw_s


def bench_l3(
    data_dir: Path, sizes: list[int], queries: int, embedder: Embedder, progress: Console | None
) -> dict[str, Any]:
    rng = random.Random(7)
    texts = _texts(rng, BASE_TEXTS)
    query_texts = _texts(random.Random(11), queries)
    mixed_texts = _texts(random.Random(13), queries)
    mixed_vecs = embedder.embed(mixed_texts)
    warmup_texts = _texts(random.Random(19), WARMUP_QUERIES)
    base_vecs = embedder.embed(texts)
    query_vecs = embedder.embed(query_texts)
    warmup_vecs = embedder.embed(warmup_texts)
    encoder = Bm25Encoder()
    config = Settings()
    settings = config.longterm
    # The route depths the reader's hybrid search uses for k = 10.
    dense_depth = hybrid_route_depth(settings.dense_top_n, 10)
    sparse_depth = hybrid_route_depth(settings.sparse_top_n, 10)
    results: dict[str, Any] = {}
    for size in sizes:
        path = data_dir / f"qdrant_{size}"
        shutil.rmtree(path, ignore_errors=True)
        if progress:
            progress.print(f"[bench] building L3 with {size} points ...")
        started = time.perf_counter()
        store = _build_store(path, size, embedder, base_vecs, texts, size, settings)
        build_s = time.perf_counter() - started
        reader = open_reader(config, store)
        index = store.index
        assert isinstance(index, EdgeIndex)  # the embedded default
        searches = partial(
            _l3_searches,
            reader,
            partial(index.engine_shard, "memories"),
            encoder,
            dense_depth=dense_depth,
            sparse_depth=sparse_depth,
            ef=settings.hnsw_ef,
        )

        for i in range(WARMUP_QUERIES):
            reader.search(
                "memories",
                warmup_texts[i],
                tenant=f"t{i % TENANTS}",
                k=10,
                query_vector=warmup_vecs[i],
            )
        # Timed two ways, each on its own queries (a repeated search would be answered
        # by the query cache): in blocks (the headline: each path runs as a loop of
        # searches does) and interleaved query by query (each call right after the
        # other path's, as the previous releases timed it).
        block_ours, block_raw = _time_in_blocks(*searches(query_texts, query_vecs))
        mixed_ours, mixed_raw = _time_interleaved(*searches(mixed_texts, mixed_vecs))
        mem_s, raw_s = summary_ms(block_ours), summary_ms(block_raw)
        results[str(size)] = {
            **mem_s,
            "raw_edge": raw_s,
            "overhead_ratio_vs_raw_edge": round(mem_s["p50_ms"] / raw_s["p50_ms"], 3),
            "interleaved": {
                **summary_ms(mixed_ours),
                "raw_edge": summary_ms(mixed_raw),
            },
            "timing": (
                f"blocks of {TIMING_BLOCK} queries, memstrata and raw alternating "
                "(interleaved: query by query, order alternating)"
            ),
            "build_s": round(build_s, 1),
            "queries": queries,
            "warmup_queries": WARMUP_QUERIES,
        }
        store.close()
    return results


ROUTE_MEMORIES = 10_000
ROUTE_INTENT = "generate_report"
ROUTE_TOKEN_CACHE = 1024


# The engine calls a caller makes on a shard: recorded from route(), replayed raw.
_ENGINE_CALLS = frozenset({"query", "retrieve", "scroll", "count"})


class _RecordingShard:
    """A qdrant-edge shard that logs every engine call made through it (its method
    and arguments) before making it: what route() asked the engine, to replay raw."""

    def __init__(self, shard: qe.EdgeShard, log: list[tuple[qe.EdgeShard, str, tuple[Any, ...]]]):
        self._shard = shard
        self._log = log

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._shard, name)
        if name not in _ENGINE_CALLS:
            return attr
        log, shard = self._log, self._shard

        def call(*args: Any) -> Any:
            log.append((shard, name, args))
            return attr(*args)

        return call


@contextmanager
def recording_engine_calls(
    index: EdgeIndex,
) -> Iterator[list[tuple[qe.EdgeShard, str, tuple[Any, ...]]]]:
    """Every engine call the index makes inside the block, in order (its shards
    swapped for recording ones meanwhile; a benchmark's own engine only)."""
    log: list[tuple[qe.EdgeShard, str, tuple[Any, ...]]] = []
    shards = index._shards  # the bench's own index: no public way to wrap its shards
    saved = dict(shards)
    shards.update({key: _RecordingShard(s, log) for key, s in saved.items()})  # type: ignore[misc]
    try:
        yield log
    finally:
        shards.update(saved)


def _read_answer(answer: Any) -> int:
    """An engine answer read as a caller reads it: every point's id, score (or
    nothing) and payload; how many points."""
    points = answer[0] if isinstance(answer, tuple) else answer  # scroll: (records, next)
    if isinstance(points, int):  # count
        return points
    for point in points:
        _ = (point.id, getattr(point, "score", None), point.payload)
    return len(points)


def replay_engine_calls(calls: list[tuple[qe.EdgeShard, str, tuple[Any, ...]]]) -> list[int]:
    """``calls`` (recorded by :func:`recording_engine_calls`) made again on their
    shards, each answer read; the points of each answer."""
    return [_read_answer(getattr(shard, method)(*args)) for shard, method, args in calls]


def _raw_route(
    client: redis.Redis,
    result_key: str,
    extend_ms: int,
    preference_key: str,
    calls: list[tuple[qe.EdgeShard, str, tuple[Any, ...]]],
) -> tuple[dict[str, Any], dict[Any, Any], list[int]]:
    """What route() reads, as a caller of redis-py and qdrant-edge alone reads it: the
    step result with its TTL extension (one pipelined round trip), the preference
    hash, then the engine requests route() sent for the same query (its searches, pool
    read and link reads, built already), each answer read."""
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(result_key)
    pipe.pexpire(result_key, extend_ms, gt=True)
    stored, _ = pipe.execute()
    result = {n: orjson.loads(v) for n, v in stored.items() if not n.startswith(META_PREFIX)}
    preference = client.hgetall(preference_key)
    return result, preference, replay_engine_calls(calls)


def route_calls(
    engine: ContextEngine,
    state: SessionState,
    client: redis.Redis,
    texts: list[str],
    vectors: NDArray[np.float32],
) -> tuple[list[Callable[[], object]], list[Callable[[], object]]]:
    """Each query as route() and as the raw calls reading the same things. The raw
    call of a query replays the engine requests its route() call made: call it after
    that route() call (the block timing runs route() first in every block)."""
    parts = engine.parts  # route() without the query embedding is reached raw
    index = parts.longterm.index
    assert isinstance(index, EdgeIndex)  # the embedded default
    result_key = K.result_key(state.session_id, "step5")
    # The TTL route() grants step5's result when step7 reads it: the plan's stored
    # extension, never below the working memory's minimum (as its read script does).
    planned_ms = client.hget(
        K.plan_extensions_key(state.session_id), K.extension_field("step5", "step7")
    )
    extend_ms = max(
        int(str(planned_ms)),
        K.seconds_to_ms("min_result_ttl_s", engine.settings.working.min_result_ttl_s),
    )
    preference_key = K.pref_key(state.tenant, state.user_id, "report_format")
    # "Without the embedding": every model output route() needs for the query is
    # computed before the timing, in the engine's own embedding cache (route()'s
    # retrieve() pools the query and its entities from the query's token vectors).
    cache = parts.embedder
    for text in texts:
        cache.embed([text])
        if isinstance(cache, TokenEmbedder):
            cache.embed_tokens(text)
    ours: list[Callable[[], object]] = []
    raw: list[Callable[[], object]] = []
    for text, vector in zip(texts, vectors, strict=True):
        calls: list[tuple[qe.EdgeShard, str, tuple[Any, ...]]] = []

        def routed(text: str = text, vector: Any = vector, calls: list[Any] = calls) -> object:
            with recording_engine_calls(index) as log:
                bundle = parts.router.route(state, ROUTE_INTENT, text, query_vector=vector)
            calls[:] = log
            return bundle

        ours.append(routed)
        raw.append(partial(_raw_route, client, result_key, extend_ms, preference_key, calls))
    return ours, raw


@contextmanager
def route_engine(
    path: Path, embedder: Embedder, memories: int = ROUTE_MEMORIES
) -> Iterator[tuple[ContextEngine, SessionState, redis.Redis]]:
    """An engine with ``memories`` memories of one user, 50 knowledge items, a
    planned step result and a preference; a session at step 7; a raw client of its
    Valkey (a plain redis-py connection of its own)."""
    shutil.rmtree(path, ignore_errors=True)
    # Room in the token cache for every timed query's token vectors (route_calls).
    cached = CachedEmbedder(embedder, max_token_entries=ROUTE_TOKEN_CACHE)
    with ContextEngine.open(Settings(data_dir=path), embedder=cached) as engine:
        texts = _texts(random.Random(3), 1000)
        vectors = embedder.embed(texts)
        nprng = np.random.default_rng(5)
        for start in range(0, memories, BATCH):
            picks = nprng.integers(0, len(texts), min(BATCH, memories - start))
            engine.parts.longterm.add_vectors(
                "memories",
                [
                    NewItem(text=texts[int(p)], tenant="bench", user="u1", source="bench")
                    for p in picks
                ],
                _jitter(vectors[picks], nprng),
            )
        engine.parts.longterm.add(
            "knowledge", [NewItem(text=t, tenant="bench", type="knowledge") for t in texts[:50]]
        )
        engine.parts.longterm.optimize()
        engine.set_preference("u1", "report_format", "pdf with charts", 0.9, tenant="bench")
        state = engine.start_session("u1", "write the device report", tenant="bench")
        wm = engine.working(state.session_id)
        wm.plan_steps(StepGraph((StepSpec("step5", 60), StepSpec("step7", 60, ("step5",)))))
        wm.put_step_result("step5", {"device": "D123", "delta": 1.7})
        state = engine.update_session(state.session_id, lambda s: s.advance(7))
        raw = redis_backend(engine.parts.redis_url)
        client = raw.client
        assert isinstance(client, redis.Redis)  # the embedded Valkey
        try:
            yield engine, state, client
        finally:
            raw.close()


def bench_route(
    data_dir: Path, queries: int, embedder: Embedder, memories: int = ROUTE_MEMORIES
) -> dict[str, Any]:
    """route() for generate_report on a ``memories``-point engine, with/without the
    query embedding; without it, against the raw redis-py + qdrant-edge calls that
    read the same context (timed in alternating blocks, as L3)."""
    with route_engine(data_dir / "route", embedder, memories) as (engine, state, client):
        query_texts = _texts(random.Random(13), queries)
        warmup_texts = _texts(random.Random(23), WARMUP_QUERIES)
        warm_ours, warm_raw = route_calls(
            engine, state, client, warmup_texts, embedder.embed(warmup_texts)
        )
        for call in warm_ours + warm_raw:
            call()
        without, raw = _time_in_blocks(
            *route_calls(engine, state, client, query_texts, embedder.embed(query_texts)),
            alternate=False,
        )
        with_embedding = []
        fresh = _texts(random.Random(17), queries)
        for i in range(queries):
            q = f"{fresh[i]} #{i}"  # unique text: a cache miss, a real embedding
            with_embedding.append(timed(engine.route, state, ROUTE_INTENT, q))
    a, b, r = summary_ms(without), summary_ms(with_embedding), summary_ms(raw)
    return {
        "p50_ms_without_embedding": a["p50_ms"],
        "p99_ms_without_embedding": a["p99_ms"],
        "p50_ms_with_embedding": b["p50_ms"],
        "p99_ms_with_embedding": b["p99_ms"],
        "raw": r,
        "overhead_ratio_vs_raw": round(a["p50_ms"] / r["p50_ms"], 3),
        "timing": (
            f"without embedding: blocks of {TIMING_BLOCK} queries, route() then raw; "
            "the query's model outputs cached before timing; raw = the same L2 reads "
            "with redis-py and, replayed with qdrant-edge alone, the engine requests "
            "route() sent for that query (its retrieve()'s route searches, pool read "
            "and link reads, the knowledge search when not cached)"
        ),
        "memories": memories,
        "queries": queries,
        "warmup_queries": WARMUP_QUERIES,
    }


def run_layers_bench(
    data_dir: Path, *, sizes: list[int], queries: int, progress: Console | None = None
) -> dict[str, Any]:
    """Run every layer benchmark; returns the JSON document the CLI prints."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    embedder = MiniLMEmbedder()
    with progress_bar(progress or Console(stderr=True)) as bar:
        task = bar.add_task("bench layers", total=3)
        l2 = bench_l2(data_dir)
        bar.update(task, advance=1, refresh=True)
        l3 = bench_l3(data_dir, sizes, queries, embedder, progress)
        bar.update(task, advance=1, refresh=True)
        route = bench_route(data_dir, min(queries, 300), embedder)
        bar.update(task, advance=1, refresh=True)
    return {
        "l2": l2,
        "l3": l3,
        "route": route,
        "targets": {
            "l2_overhead_ratio_max": 1.3,
            "l3_p99_ms_at_100k_max": 2.0,
            "route_p99_ms_without_embedding_max": 5.0,
        },
    }
