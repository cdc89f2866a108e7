"""Prints the second model's (USE) embeddings and the ingest time of an English-only
run through ``observe()``, with ``longterm.multilingual_points`` at ``all`` (every
point embedded by both models: the write path before issue 33) and at ``auto``, on
the same turns in one process, each with a fresh MiniLM cache.

Run: ``.venv/bin/python -m tests.longterm.measure_multilingual_points [TURNS]``
(default 3000 turns; loads both models; under a minute). Wall-clock numbers: take
the benchmark lock on a shared machine and report the load average.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from memstrata.bench.write import generate_turns
from memstrata.config import LongTermSettings, PipelineSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.engine import ContextEngine
from memstrata.language import detect_language
from memstrata.wiring import build_stack


class Counting:
    """The real multilingual model (no cache: every text it embeds is counted)."""

    def __init__(self, inner: MultilingualEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts = 0
        self.seconds = 0.0
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        started = time.perf_counter()
        rows = self.inner.embed(texts)
        with self._lock:
            self.texts += len(texts)
            self.seconds += time.perf_counter() - started
        return rows


def run(policy: str, turns: list[tuple[str, str]], model: MiniLMEmbedder) -> dict[str, object]:
    use = Counting(MultilingualEmbedder())
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp), longterm=LongTermSettings(multilingual_points=policy)
        )
        pipeline = PipelineSettings(batch_size=256, queue_maxlen=max(len(turns), 1000))
        stack = build_stack(
            settings,
            embedder=CachedEmbedder(model, max_entries=16384),
            multilingual=use,
            pipeline=pipeline,
        )
        with ContextEngine(stack) as engine:
            for user in sorted({user for user, _ in turns}):
                engine.start_session(user, "bench", tenant="bench", session_id=f"s-{user}")
            started = time.perf_counter()
            for user, text in turns:
                engine.observe(f"s-{user}", "user", text)
            engine.flush(600)
            took = time.perf_counter() - started
            catchup = engine.parts.longterm.catchup_state().as_dict()
    return {
        "use_texts": use.texts,
        "use_seconds": round(use.seconds, 2),
        "ingest_s": round(took, 2),
        "turns_per_s": round(len(turns) / took, 1),
        "catchup": catchup,
    }


def main(count: int) -> dict[str, object]:
    turns = [(u, t) for u, t in generate_turns(4 * count) if detect_language(t) == "en"][:count]
    model = MiniLMEmbedder()
    model.embed(["warm"])
    MultilingualEmbedder().embed(["warm"])
    report: dict[str, object] = {"turns": len(turns)}
    for policy in ("all", "auto"):
        report[policy] = run(policy, turns, model)
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000), indent=1))
