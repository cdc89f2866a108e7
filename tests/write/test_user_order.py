"""One user's entries are applied in order whatever the worker count (issue 31, "Why" 8
and "What to build" 8). Four worker threads take one entry each; the embedder is slow
on the statements that add a value, so on a queue without per-user order the thread
holding the removal or correction that follows ("I'm no longer allergic to peanuts")
writes it first, and the addition it takes back lands after it (peanuts current
again). With the queue's work partitioned by (tenant, user), every user ends with the
right current facts, round after round."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from tests.write.facts import START

from memstrata.clock import FakeClock
from memstrata.config import PipelineSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.engine import ContextEngine

# (user, texts in the order said, attribute, its current value after the last one)
SCRIPTS: tuple[tuple[str, tuple[str, ...], str, str | None], ...] = (
    (
        "ana",
        ("I'm allergic to peanuts and shellfish.", "I'm no longer allergic to peanuts."),
        "allergies",
        "shellfish",
    ),
    (
        "bo",
        ("I'm allergic to peanuts and shellfish.", "I'm allergic to shellfish, not peanuts."),
        "allergies",
        "shellfish",
    ),
    ("chen", ("我对花生和海鲜过敏。", "把花生去掉。"), "allergies", "海鲜"),
    (
        "dee",
        ("My birthday is May 3.", "Sorry, I got that wrong: my birthday is June 3."),
        "birthday",
        "June 3",
    ),
    (
        "eli",
        ("I speak English and French.", "I don't speak French anymore."),
        "languages_spoken",
        "English",
    ),
    (
        "fay",
        ("You can reach me by email or phone.", "Not by phone, please."),
        "contact_channels",
        "email",
    ),
    (
        "gus",
        ("I'm allergic to cats.", "Good news: I'm not allergic to cats anymore."),
        "allergies",
        None,
    ),
)
SLOW_S = 0.4
ROUNDS = 3


class SlowOnStatements:
    """INJECTED delay: MiniLM, ``SLOW_S`` slower on a batch holding a user's first
    statement (what a later turn takes back or corrects)."""

    def __init__(self, inner: CachedEmbedder, slow: set[str]) -> None:
        self._inner = inner
        self._slow = slow
        self.name = inner.name
        self.dim = inner.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if any(text in self._slow for text in texts):
            time.sleep(SLOW_S)
        return np.asarray(self._inner.embed(texts), dtype=np.float32)


def _current(engine: ContextEngine, tenant: str, user: str, attribute: str) -> str | None:
    store = engine.parts.memory
    assert store is not None
    active = store.active_fact(tenant, user, "user", attribute)
    return None if active is None else active.value


def test_four_workers_apply_each_users_additions_removals_and_corrections_in_order(
    tmp_path: Path, minilm: CachedEmbedder
) -> None:
    clock = FakeClock(START)
    embedder = SlowOnStatements(minilm, {texts[0] for _, texts, _, _ in SCRIPTS})
    pipeline = PipelineSettings(worker_threads=4, batch_size=1, block_ms=100)
    wrong: list[str] = []
    with ContextEngine.open(
        Settings(data_dir=tmp_path / "data"), clock=clock, embedder=embedder, pipeline=pipeline
    ) as engine:
        assert len(engine.parts.pipeline.workers) == 4
        for n in range(ROUNDS):
            tenant = f"order-{n}"
            # Each user's turns back to back, so that idle workers take them together.
            for user, texts, _, _ in SCRIPTS:
                for text in texts:
                    assert engine.remember(user, text, tenant=tenant).queued
                    clock.advance(timedelta(minutes=1))
            engine.flush(timeout_s=120)
            for user, _, attribute, expected in SCRIPTS:
                got = _current(engine, tenant, user, attribute)
                if got != expected:
                    wrong.append(f"round {n}, {user}: {attribute} is {got!r}, not {expected!r}")
        stats = engine.parts.pipeline.queue.stats()
    assert wrong == []
    assert stats.dead_lettered == 0
