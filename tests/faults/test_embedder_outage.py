"""The embedder outage (issue 31, "Why" 1 and "What to build" 1): our own failures
never use up deliveries. With the embedder failing - the model cache pointing at a
file so MiniLM cannot load, or an embedder raising - ``remember`` is accepted, the
queue's consumers pause (``/healthz`` says the embedder is down), and once the
embedder is back every acknowledged write is stored exactly once; nothing is
dead-lettered, however long the outage outlasts ``max_deliveries`` x
``claim_idle_ms``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from tests.faults.support import (
    FAST_PIPELINE,
    TENANT,
    Ledger,
    Load,
    Served,
    served,
    wait_until,
)

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.onnx import default_cache_dir
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.testing.embedders import HashEmbedder

# Three times max_deliveries x claim_idle_ms: an outage that spent deliveries would
# have dead-lettered everything it held by then.
OUTAGE_S = 3 * FAST_PIPELINE.max_deliveries * FAST_PIPELINE.claim_idle_ms / 1000


def _episodes(app: Served) -> list[str]:
    flt = Filter(tenant=TENANT, types=("episode",))
    return [str(r.payload["text"]) for r in app.engine.parts.longterm.iter_records(MEMORIES, flt)]


def _paused_by_the_embedder(app: Served) -> None:
    wait_until(
        lambda: "embedder" in app.healthz().json()["checks"]["write_queue"]["detail"],
        30,
        "healthz to say the embedder paused the queue",
    )
    health = app.healthz().json()
    queue, embedder = health["checks"]["write_queue"], health["checks"]["embedder"]
    assert queue["status"] == "degraded", health
    assert queue["detail"].startswith("consumers paused, down: embedder"), queue
    assert embedder["status"] == "degraded" and embedder["detail"].startswith("down ("), health
    assert health["status"] == "degraded"
    assert app.healthz(reads=True).status_code == 200


def _stored_once(app: Served, ledger: Ledger) -> None:
    app.engine.flush(timeout_s=120)
    stats = app.engine.parts.pipeline.queue.stats()
    assert (stats.pending, stats.lag, stats.dead_lettered) == (0, 0, 0), stats
    assert ledger.unkept_200s == []
    assert ledger.missing_from(app.engine) == []
    texts = _episodes(app)
    acked = [text for _, text, _ in ledger.acked]
    # Once each: no episode twice, none missing.
    assert sorted(t for t in texts if t in set(acked)) == sorted(acked)
    health = app.healthz().json()
    assert health["checks"]["embedder"]["status"] == "ok", health
    assert health["checks"]["write_queue"]["dead_lettered"] == 0, health


def test_why1_a_model_that_cannot_load_pauses_the_queue_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """The issue's case: MiniLM's model cache is a file, so the model cannot load."""
    cache = tmp_path / "model-cache"
    cache.write_text("not a directory")
    model = MiniLMEmbedder(runtime="onnx", cache_dir=cache)
    ledger = Ledger()
    with served(tmp_path / "data", embedder=model) as app:
        for n in range(12):
            text = f"Note {n}: the spare key of locker {n} is at the front desk."
            reply = app.remember_here(f"u{n % 3}", text)
            ledger.record(f"u{n % 3}", text, reply.status_code, reply.body)
        assert ledger.answers == {200: 12}, ledger.bodies[:3]  # accepted, queued
        time.sleep(OUTAGE_S)
        assert app.engine.parts.pipeline.queue.stats().dead_lettered == 0
        _paused_by_the_embedder(app)
        assert _episodes(app) == []  # nothing could be embedded yet
        # The cache is repaired: the model loads at the next probe.
        cache.unlink()
        cache.symlink_to(default_cache_dir(), target_is_directory=True)
        _stored_once(app, ledger)


class FlakyEmbedder:
    """INJECTED fault: the hash embedder, raising RuntimeError while ``down``."""

    name = "flaky-hash"

    def __init__(self) -> None:
        self._inner = HashEmbedder(64)
        self.dim = self._inner.dim
        self.down = False

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if self.down:
            raise RuntimeError("embedder failed (injected)")
        return self._inner.embed(texts)


def test_an_embedder_raising_under_load_pauses_consumers_and_stores_every_write_once(
    tmp_path: Path,
) -> None:
    embedder = FlakyEmbedder()
    ledger = Ledger()
    with served(tmp_path / "data", embedder=embedder) as app:
        with Load(app.remember_here, ledger):
            wait_until(lambda: len(ledger.acked) >= 30, 60, "30 acknowledged writes")
            embedder.down = True
            during = len(ledger.acked)
            wait_until(lambda: len(ledger.acked) >= during + 40, 60, "writes in the outage")
            time.sleep(OUTAGE_S)
            assert app.engine.parts.pipeline.queue.stats().dead_lettered == 0
            _paused_by_the_embedder(app)
            embedder.down = False
            after = len(ledger.acked)
            wait_until(lambda: len(ledger.acked) >= after + 20, 60, "20 more writes")
        # Every 200 was queued (a 429 is the key's rate limit, answered before it).
        assert set(ledger.answers) <= {200, 429}, ledger.answers
        assert ledger.answers[200] == len(ledger.acked)
        _stored_once(app, ledger)
        wait_until(lambda: app.healthz().status_code == 200, 10, "healthy again")
