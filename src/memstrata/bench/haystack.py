"""``memstrata bench haystack``: retrieve() latency on one long haystack, in minutes.

One generated haystack of LongMemEval_S's shape
(:func:`memstrata.testing.synthetic_longmemeval.long_turns`: long assistant answers,
shorter user turns) is observed through ``observe()`` as one user's sessions, then
``retrieve()`` is asked LongMemEval-shaped questions
(:func:`~memstrata.testing.synthetic_longmemeval.s_shaped_question`):

- without the embedding: each question's model outputs computed before the timing
  (in the engine's embedding cache), against a raw floor in alternating order per
  block: the very engine requests that retrieve() call sent (its route searches, the
  pool read, the link reads), replayed with qdrant-edge alone and their answers read
  (:func:`memstrata.bench.layers.recording_engine_calls`): what a caller of the
  engine alone needs for the same answer;
- with the embedding: other questions (unique texts), the query embedded per call.

The full LongMemEval haystack (~500 turns a question, 11k for 24 questions) takes
an hour to index; ``--turns`` keeps one haystack's worth (default 300 turns).
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from rich.console import Console

from memstrata.bench.layers import TIMING_BLOCK, recording_engine_calls, replay_engine_calls
from memstrata.bench.stats import progress_bar, summary_ms, timed
from memstrata.config import Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.defaults import default_embedder
from memstrata.embed.protocol import TokenEmbedder
from memstrata.engine import ContextEngine
from memstrata.longterm.edge import EdgeIndex
from memstrata.testing.synthetic_longmemeval import long_turns, s_shaped_question

TENANT = "bench"
USER = "haystack-user"
HAYSTACK_TURNS = 300
QUESTIONS = 200
WARMUP = 20


def _questions(work: list[tuple[str, str, str, str]], seed: int, count: int) -> list[str]:
    """``count`` distinct questions about the haystack: the generated LongMemEval-shaped
    questions (a few dozen distinct ones), then questions naming three words of a random
    user turn. Distinct, so no timed read repeats another (its searches would be
    answered from the engine's query cache)."""
    rng = random.Random(seed)
    out = list(
        dict.fromkeys(
            s_shaped_question(i, sessions=2, target_tokens=200, seed=seed)["question"]
            for i in range(count)
        )
    )[: count // 4]
    said = [text for _, _, role, text in work if role == "user"]
    seen = set(out)
    while len(out) < count:
        words = [w.strip(".,!?:;()") for w in rng.choice(said).split()]
        words = [w for w in words if len(w) > 3 and w.isalpha()]
        if len(words) < 3:
            continue
        a, b, c = rng.sample(words, 3)
        question = f"What did I tell you about {a} and {b}, the {c} one?"
        if question not in seen:
            seen.add(question)
            out.append(question)
    return out


def run_haystack_bench(
    data_dir: Path,
    *,
    turns: int = HAYSTACK_TURNS,
    queries: int = QUESTIONS,
    k: int = 10,
    progress: Console | None = None,
) -> dict[str, Any]:
    """Observe ``turns`` haystack turns, then time ``queries`` retrieve() calls
    without and with the query embedding; the JSON document the CLI prints."""
    run_dir = Path(data_dir) / "haystack"
    shutil.rmtree(run_dir, ignore_errors=True)
    work = long_turns(turns)
    # Room for every timed question's vectors and token vectors.
    embedder = CachedEmbedder(default_embedder(), max_token_entries=4 * queries + WARMUP)
    with ContextEngine.open(Settings(data_dir=run_dir), embedder=embedder) as engine:
        sessions: dict[str, str] = {}
        with progress_bar(progress or Console(stderr=True)) as bar:
            task = bar.add_task("observe", total=len(work))
            started = time.perf_counter()
            for i, (_, session, role, text) in enumerate(work):
                if session not in sessions:
                    state = engine.start_session(USER, "haystack", tenant=TENANT)
                    sessions[session] = state.session_id
                engine.observe(sessions[session], role, text)
                if i % 20 == 0:
                    bar.update(task, completed=i, refresh=True)
            bar.update(task, description="flush", completed=len(work), refresh=True)
            engine.flush(timeout_s=max(600.0, turns))
            indexed_s = time.perf_counter() - started
        points = engine.count_memories(TENANT)
        index = engine.parts.longterm.index
        assert isinstance(index, EdgeIndex)  # the embedded default
        ask = partial(engine.retrieve, tenant=TENANT, user=USER, k=k)
        texts = _questions(work, 0, queries)
        for text in _questions(work, 1, WARMUP):  # first-call costs are not retrieval
            if text not in texts:
                ask(text)
        for text in texts:  # "without the embedding": the model's outputs cached
            embedder.embed([text])
            if isinstance(embedder, TokenEmbedder):
                embedder.embed_tokens(text)
        without: list[float] = []
        raw: list[float] = []
        for n, start in enumerate(range(0, len(texts), TIMING_BLOCK)):
            block = texts[start : start + TIMING_BLOCK]
            logs: list[list[tuple[qe.EdgeShard, str, tuple[Any, ...]]]] = []
            for text in block:  # retrieve() first: the raw floor replays its requests
                with recording_engine_calls(index) as log:
                    without.append(timed(ask, text))
                logs.append(list(log))
            replays: list[Callable[[], object]] = [partial(replay_engine_calls, c) for c in logs]
            raw.extend(timed(call) for call in (replays if n % 2 == 0 else replays[::-1]))
        fresh = [f"{q} (#{i})" for i, q in enumerate(_questions(work, 2, queries))]
        with_embedding = [timed(ask, text) for text in fresh]
    a, b, r = summary_ms(without), summary_ms(with_embedding), summary_ms(raw)
    return {
        "turns": turns,
        "points": points,
        "index_s": round(indexed_s, 1),
        "queries": queries,
        "k": k,
        "p50_ms_without_embedding": a["p50_ms"],
        "p99_ms_without_embedding": a["p99_ms"],
        "p50_ms_with_embedding": b["p50_ms"],
        "p99_ms_with_embedding": b["p99_ms"],
        "raw": r,
        "overhead_ratio_vs_raw": round(a["p50_ms"] / r["p50_ms"], 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "timing": (
            f"blocks of {TIMING_BLOCK} questions: retrieve() (model outputs cached "
            "before timing), then raw = its engine requests replayed with qdrant-edge "
            "alone; with embedding: other questions, one embedding each"
        ),
        "targets": {"p99_ms_with_embedding_max": 50.0},
    }
