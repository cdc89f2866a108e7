"""``memstrata bench write``: the write pipeline end to end against the raw embedder.

One run measures, on the embedded defaults (Valkey + qdrant-edge + MiniLM on CPU):

* ``turns_per_s``: ``observe`` of N varied English and Chinese turns (facts that
  supersede each other, preferences, decisions, orders and payments with ids and
  amounts) until every turn's episode and every extracted unit is searchable - the
  clock stops after ``flush()`` returned and a search found the last user's newest
  fact;
* ``embedders``: every model the run used - MiniLM and, when the store's second
  dense route is on, the multilingual USE - replayed raw in the same process right
  after, each on exactly the texts it embedded (recorded below the engine's caches:
  what the models really computed), call by call in the same batches;
* ``ratio`` = turns_per_s / (turns ÷ the replays' summed seconds): the run's
  end-to-end time against the raw embedders' time for the same work. The models are
  the bound of the pipeline, so anything far below 1 is overhead of our own code.
  ``--english`` observes the same turns without the Chinese ones, and its ratio is
  against raw MiniLM alone (``ratio_against`` names the models counted;
  ``ratio_minilm_only`` is given in every mode);
* ``stage_s``: where the write path's time went (the handler's stage clocks:
  extraction, the MiniLM call, fact commits, the episode upsert, and
  ``embed_multilingual``, the second model's time inside the writes, counted apart),
  and ``observe_us_per_turn``, the caller's side;
* ``upsert_ms_per_point``: the ``upsert`` stage per point it wrote, and
  ``upsert_micro``: the store's ``add_points`` timed alone on copies of the run's
  points (:func:`upsert_cost`), the second model's time apart;
* ``rss_mb_per_10k``: the resident-memory growth of the process over the run (read
  from /proc/self/status, VmRSS), per 10k stored points.

``--long`` observes LongMemEval-like turns instead
(:func:`memstrata.testing.synthetic_longmemeval.long_turns`: haystack sessions of
LongMemEval_S's shape, median ~90 words a turn, mean ~160, every other turn a long
assistant answer), one engine session per haystack session, as ``memstrata eval
longmemeval`` observes them: the window keys of long turns, the BM25 context terms
and extraction all on, as the engine runs them. What the run embedded (episodes, the
window keys of long ones, facts) is what the raw embedder replays, in the same
batches; ``words`` gives the turns' lengths and ``texts_per_turn`` what a turn cost.

The run writes into a new directory under ``--data-dir`` (numbers for an empty
store); nothing that was there before is touched.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from rich.console import Console

from memstrata.bench.stats import progress_bar
from memstrata.config import PipelineSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.embed.protocol import Embedder
from memstrata.engine import ContextEngine
from memstrata.longterm.facade import IndexedItem
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.testing.synthetic_longmemeval import long_turns
from memstrata.validation import check_positive_int
from memstrata.wiring import build_stack
from memstrata.write.index import item_of_record

TENANT = "bench"
TURNS_PER_USER = 10
TARGET_RATIO = 0.8
SHORT_TURNS = 10_000
SHORT_BATCH = 256
LONG_TURNS = 600

_CITIES_EN = ("Hangzhou", "Chengdu", "Osaka", "Berlin", "Austin", "Lyon", "Pune", "Porto")
_CITIES_CN = ("杭州", "成都", "深圳", "苏州", "南京", "武汉", "西安", "厦门")
_JOBS_EN = ("nurse", "engineer", "teacher", "pilot", "accountant", "designer", "chef")
_JOBS_CN = ("工程师", "护士", "老师", "会计", "设计师", "厨师", "医生")
_PREFS_EN = ("aisle seats", "green tea", "email summaries", "morning calls", "PDF reports")
_PREFS_CN = ("靠窗的座位", "绿茶", "邮件摘要", "早上的电话", "PDF报告")
_ACTIONS_EN = (
    "renew the fleet contract for device D{n}",
    "switch supplier for the cooling loop of site S{n}",
    "cancel the maintenance visit planned for unit U{n}",
    "upgrade the firmware of inverter I{n}",
)
_ACTIONS_CN = (
    "续签设备D{n}的合同",
    "更换站点S{n}的供应商",
    "取消机组U{n}的维护",
    "升级逆变器I{n}的固件",
)


def _turn_text(rng: random.Random, user_no: int, k: int, *, english: bool = False) -> str:
    """The k-th turn of a user: a mix of facts, updates and events, half in Chinese
    (``english``: none; the same draws, so the English turns are the same turns)."""
    chinese = (user_no + k) % 2 == 1 and not english
    n = rng.randint(100, 99_999)
    day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    order = f"ORD-2025-{rng.randint(0, 999_999):06d}"
    amount = rng.randint(5, 5_000)
    kind = k % 5
    if chinese:
        if kind == 0:
            return (
                f"我{'住在' if k < 5 else '搬到'}{rng.choice(_CITIES_CN)}{'' if k < 5 else '了'}。"
            )
        if kind == 1:
            return f"我是一名{rng.choice(_JOBS_CN)}。"
        if kind == 2:
            return f"我偏好{rng.choice(_PREFS_CN)}。"
        if kind == 3:
            return f"我决定在{day}{rng.choice(_ACTIONS_CN).format(n=n)}。"
        return f"我的订单{order}已经付款{amount}元。"
    if kind == 0:
        verb = "I live in" if k < 5 else "I moved to"
        return f"{verb} {rng.choice(_CITIES_EN)}."
    if kind == 1:
        job = rng.choice(_JOBS_EN)
        return f"I work as {'an' if job[0] in 'aeiou' else 'a'} {job}."
    if kind == 2:
        return f"I prefer {rng.choice(_PREFS_EN)}."
    if kind == 3:
        return f"I decided to {rng.choice(_ACTIONS_EN).format(n=n)} on {day}."
    return f"My order {order} cost {amount} yuan."


def generate_turns(turns: int, seed: int = 7, *, english: bool = False) -> list[tuple[str, str]]:
    """``(user_id, text)`` pairs, ``TURNS_PER_USER`` turns per user, deterministic
    (``english``: English turns only)."""
    check_positive_int("turns", turns)
    rng = random.Random(seed)
    return [
        (
            f"user{i // TURNS_PER_USER}",
            _turn_text(rng, i // TURNS_PER_USER, i % TURNS_PER_USER, english=english),
        )
        for i in range(turns)
    ]


@dataclass(frozen=True, slots=True)
class BenchTurn:
    """One turn the benchmark observes: in which session (of which user), by whom."""

    user: str
    session: str
    role: str
    text: str


def short_work(turns: int, seed: int = 7, *, english: bool = False) -> list[BenchTurn]:
    """:func:`generate_turns` as bench turns: one session per user, every turn the user's."""
    return [
        BenchTurn(user, f"s-{user}", "user", text)
        for user, text in generate_turns(turns, seed, english=english)
    ]


def long_work(turns: int, seed: int = 0) -> list[BenchTurn]:
    """LongMemEval-like turns (module docstring): one user per generated question,
    one session per haystack session, the turns' own roles."""
    check_positive_int("turns", turns)
    return [
        BenchTurn(question, f"s-{session}", role, text)
        for question, session, role, text in long_turns(turns, seed=seed)
    ]


class RecordingEmbedder:
    """An embedder that keeps the batches it was asked for (to replay them raw).

    Placed right above a model and below the engine's cache of it, it sees what the
    model really embeds (cache misses), call by call, in the batches the engine made.
    """

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.calls: list[list[str]] = []
        self.recording = True

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if self.recording:
            with self._lock:
                self.calls.append(list(texts))
        return self._inner.embed(texts)


def fresh_run_dir(root: Path) -> Path:
    """A new directory under ``root`` for one run (``ingest-1``, ``ingest-2``...):
    a benchmark never deletes, or writes into, what it did not create."""
    root.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        path = root / f"ingest-{n}"
        try:
            path.mkdir()
        except FileExistsError:
            n += 1
            continue
        return path


def rss_mb() -> float:
    """Resident set size of this process in MiB (VmRSS of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


def replay(model: Embedder, calls: Sequence[Sequence[str]]) -> float:
    """Seconds ``model`` takes to embed ``calls`` again, raw, call by call."""
    started = time.perf_counter()
    for batch in calls:
        model.embed(batch)
    return time.perf_counter() - started


UPSERT_POINTS = 2048
UPSERT_TENANT = "bench-upsert"


def upsert_cost(engine: ContextEngine, *, points: int = UPSERT_POINTS) -> dict[str, Any]:
    """Per-point cost of :meth:`LongTermStore.add_points` (the store the engine holds),
    on copies of points the run wrote (episodes and facts, their payloads and dense
    vectors as stored) under a tenant of their own, in the write path's batches.

    The second model's time inside the writes is measured apart (the store's own
    clock of it) and not counted as upsert: ``ms_per_point`` is our code and the
    engine's, ``multilingual_ms_per_point`` the model's.
    """
    longterm = engine.parts.longterm
    records = []
    for record in longterm.iter_records(MEMORIES, Filter(tenant=TENANT), page_size=512):
        if record.payload.get("type") in ("episode", "fact", "event"):
            records.append(record)
        if len(records) >= points:
            break
    if not records:
        return {"points": 0}
    dense = longterm.dense_vectors(MEMORIES, [r.id for r in records], tenant=TENANT)
    items = [
        IndexedItem(
            replace(
                item_of_record(r),
                tenant=UPSERT_TENANT,
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"upsert/{r.id}")),
            ),
            dense[r.id],
        )
        for r in records
        if r.id in dense
    ]
    model_before = longterm.multilingual_seconds()
    started = time.perf_counter()
    for start in range(0, len(items), SHORT_BATCH):
        longterm.add_points(MEMORIES, items[start : start + SHORT_BATCH])
    total = time.perf_counter() - started
    model = longterm.multilingual_seconds() - model_before
    return {
        "points": len(items),
        "batch": SHORT_BATCH,
        "ms_per_point": round((total - model) / len(items) * 1e3, 4),
        "multilingual_ms_per_point": round(model / len(items) * 1e3, 4),
    }


def run_write_bench(
    data_dir: Path,
    *,
    turns: int | None = None,
    batch_size: int | None = None,
    threads: int = 2,
    long: bool = False,
    english: bool = False,
    progress: Console | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the JSON document the CLI prints.

    ``threads`` consumer threads drain the queue (see ``PipelineSettings.worker_threads``);
    ``long``: LongMemEval-like turns instead of short ones (module docstring);
    ``english``: the short turns without their Chinese ones, against raw MiniLM alone.
    Defaults: ``SHORT_TURNS`` turns in batches of ``SHORT_BATCH``; ``LONG_TURNS`` long
    turns (about one LongMemEval_S haystack) in the engine's own batches.
    """
    if turns is None:
        turns = LONG_TURNS if long else SHORT_TURNS
    if batch_size is None:
        batch_size = PipelineSettings().batch_size if long else SHORT_BATCH
    check_positive_int("turns", turns)
    check_positive_int("batch_size", batch_size, maximum=4096)
    work = long_work(turns) if long else short_work(turns, english=english)
    run_dir = fresh_run_dir(Path(data_dir))
    model = MiniLMEmbedder()
    recorder = RecordingEmbedder(model)
    # The cache must hold a whole batch (window keys of long turns included); the
    # recorder below it sees what the model really embeds (cache misses), in the
    # batches the handler made.
    embedder = CachedEmbedder(recorder, max_entries=max(4096, 16 * batch_size))
    # The second model as the wiring builds it (memstrata.wiring.default_multilingual:
    # USE behind the same LRU cache), recorded below its cache the same way: whichever
    # texts the store decides to give the multilingual vector are the ones replayed.
    second = MultilingualEmbedder()
    second_recorder = RecordingEmbedder(second)
    users = sorted({turn.user for turn in work})
    sessions = sorted({(turn.user, turn.session) for turn in work})
    settings = PipelineSettings(
        batch_size=batch_size, queue_maxlen=max(turns, 1000), worker_threads=threads
    )
    stack = build_stack(
        Settings(data_dir=run_dir),
        embedder=embedder,
        pipeline=settings,
        multilingual=CachedEmbedder(second_recorder),
    )
    with ContextEngine(stack) as engine:
        longterm = engine.parts.longterm
        second_on = longterm.multilingual is not None
        # Load the models and let their allocators reach their steady size for a full
        # batch, and load jieba's dictionary (~1 s, once per process): none of it is
        # ingest time, nor memory that grows with the stored units.
        warm = long_work(batch_size, seed=1) if long else short_work(batch_size, seed=1)
        model.embed([turn.text for turn in warm])
        if second_on:
            second.embed([turn.text for turn in warm])
        Bm25Encoder().encode_document("我住在杭州。")
        for user, session in sessions:
            engine.start_session(user, "bench", tenant=TENANT, session_id=session)
        rss_before = rss_mb()
        recorder.calls.clear()
        second_recorder.calls.clear()
        with progress_bar(progress or Console(stderr=True)) as bar:
            task = bar.add_task("observe", total=len(work))
            started = time.perf_counter()
            not_queued = 0
            for i, turn in enumerate(work):
                if not engine.observe(turn.session, turn.role, turn.text).queued:
                    not_queued += 1
                if i % 100 == 0:
                    bar.update(task, completed=i, refresh=True)
            observed = time.perf_counter() - started
            bar.update(task, description="flush", completed=len(work), refresh=True)
            engine.flush(timeout_s=max(600.0, turns / 5))
            recorder.recording = False
            second_recorder.recording = False
            query = work[-1].text[:200] if long else "which city does the user live in"
            last = engine.search(work[-1].user, query, tenant=TENANT)
            elapsed = time.perf_counter() - started
        rss_after = rss_mb()
        points = engine.count_memories(TENANT)
        episodes = engine.count_memories(TENANT, types=("episode",))
        stats = engine.write_stats()
        upsert = upsert_cost(engine)
    calls = [batch for batch in recorder.calls if batch]
    second_calls = [batch for batch in second_recorder.calls if batch]
    # Every model the run used, on exactly the texts each embedded, call by call.
    minilm_s = replay(model, calls)
    second_s = replay(second, second_calls)
    texts = sum(len(batch) for batch in calls)
    second_texts = sum(len(batch) for batch in second_calls)
    # English-only turns are compared with raw MiniLM alone (the target); the
    # second model's replay is reported all the same, to show what it still costs.
    embed_s = minilm_s if english else minilm_s + second_s
    turns_per_s = turns / elapsed
    embedder_per_s = texts / minilm_s if minilm_s > 0 else 0.0
    # The raw embedders' throughput in turns: their time for the same texts.
    embedder_turns_per_s = turns / embed_s if embed_s > 0 else 0.0
    handler = stats.handler
    words = [len(turn.text.split()) for turn in work]
    upserted = handler.points_upserted
    return {
        "mode": ("long" if long else "short") + ("-english" if english else ""),
        "turns": turns,
        "users": len(users),
        "sessions": len(sessions),
        "words": {
            "median": statistics.median(words),
            "mean": round(statistics.fmean(words), 1),
            "max": max(words),
            "total": sum(words),
        },
        "words_per_s": round(sum(words) / elapsed, 1),
        "points_stored": points,
        "episodes_stored": episodes,
        "episodes_written": handler.episodes_written,
        "units_written": handler.units_written,
        "turns_dropped_by_filter": dict(handler.dropped),
        "extraction_failures": handler.extraction_failures,
        "not_queued": not_queued,
        "observe_s": round(observed, 3),
        "observe_us_per_turn": round(observed / turns * 1e6, 1),
        "end_to_end_s": round(elapsed, 3),
        "turns_per_s": round(turns_per_s, 1),
        "embedders": {
            model.name: {
                "calls": len(calls),
                "texts": texts,
                "replay_s": round(minilm_s, 3),
                "texts_per_turn": round(texts / turns, 2),
            },
            second.name: {
                "on": second_on,
                "status": longterm.multilingual_status,
                "calls": len(second_calls),
                "texts": second_texts,
                "replay_s": round(second_s, 3),
                "texts_per_turn": round(second_texts / turns, 2),
            },
        },
        "ratio_against": [model.name] if english else [model.name, second.name],
        "embedder_s": round(embed_s, 3),
        "embedder_texts": texts,
        "embedder_calls": len(calls),
        "texts_per_turn": round(texts / turns, 2),
        "embedder_texts_per_s": round(embedder_per_s, 1),
        "embedder_turns_per_s": round(embedder_turns_per_s, 1),
        "ratio": round(turns_per_s / embedder_turns_per_s, 3) if embedder_turns_per_s else None,
        "ratio_minilm_only": round(turns_per_s / (turns / minilm_s), 3) if minilm_s else None,
        "stage_s": dict(handler.seconds),
        "stage_ms_per_turn": {k: round(v / turns * 1e3, 3) for k, v in handler.seconds.items()},
        "points_upserted": upserted,
        "upsert_ms_per_point": (
            round(handler.seconds.get("upsert", 0.0) / upserted * 1e3, 4) if upserted else None
        ),
        "upsert_micro": upsert,
        "rss_mb_before": round(rss_before, 1),
        "rss_mb_after": round(rss_after, 1),
        "rss_mb_per_10k": round((rss_after - rss_before) / max(points, 1) * 10_000, 1),
        "search_found_last_user": bool(last),
        "batch_size": batch_size,
        "worker_threads": threads,
        "embedder": model.name,
        "data_dir": str(run_dir),
        "target_ratio_min": TARGET_RATIO,
    }
