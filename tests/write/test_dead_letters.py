"""Dead letters are input that can never be stored, each with its reason, and an
operator lists and replays them (issue 31, "What to build" 1): through the engine, the
service operations (tenant-scoped: tenant A's admin never sees tenant B's) and the
CLI. The entries here fail in the embedder on their own text while it embeds every
other text (and the outage probe): their failure is theirs, so they spend their
deliveries and are given up; once the embedder is fixed a replay stores them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from typer.testing import CliRunner

from memstrata.client import Client
from memstrata.config import PipelineSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.engine import ContextEngine
from memstrata.errors import NotFoundError, ValidationError
from memstrata.service.inprocess import ServiceTransport
from memstrata.service.local import local_caller, local_service

runner = CliRunner()
# A reclaim every second: short enough for a quick test, long enough that a busy
# host's embedder call (hundreds of ms) is not taken for a lost consumer, which would
# give the entry up as ConsumerLost instead of for what it raised.
FAST = PipelineSettings(block_ms=50, claim_idle_ms=1_000, max_deliveries=2)


class PoisonedEmbedder:
    """INJECTED fault: MiniLM, raising on any text holding ``POISON`` while
    ``poisoned`` (a model that chokes on one input; it answers every other text)."""

    def __init__(self, inner: CachedEmbedder) -> None:
        self._inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.poisoned = True

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if self.poisoned and any("POISON" in text for text in texts):
            raise RuntimeError("cannot embed this text (injected)")
        return np.asarray(self._inner.embed(texts), dtype=np.float32)


def _wait(predicate: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_dead_letters_are_listed_per_tenant_with_their_reason_and_replayed(
    tmp_path: Path, minilm: CachedEmbedder
) -> None:
    embedder = PoisonedEmbedder(minilm)
    data = tmp_path / "data"
    engine = ContextEngine.open(Settings(data_dir=data), embedder=embedder, pipeline=FAST)
    try:
        assert engine.remember("ann", "POISON note of Ann.", tenant="ta").queued
        assert engine.remember("bob", "POISON note of Bob.", tenant="tb").queued
        assert engine.remember("cy", "I live in Hangzhou.", tenant="ta").queued
        queue = engine.parts.pipeline.queue
        _wait(lambda: queue.stats().dead_lettered == 2, "two dead letters")
        engine.flush()
        assert engine.parts.outage is not None and engine.parts.outage.outages == 0

        [ann] = engine.dead_letters(tenant="ta")
        [bob] = engine.dead_letters(tenant="tb")
        assert engine.dead_letters(tenant="tc") == ()
        assert (ann.user, ann.kind, ann.error, ann.deliveries) == ("ann", "note", "RuntimeError", 2)
        assert ann.reason.startswith("the embedder raised RuntimeError on each of 2 deliveries")
        assert "POISON" not in ann.reason  # the reason never quotes the text

        # The service: an admin of tenant ta sees ta's only; tb's id is not found there.
        with Client(transport=ServiceTransport(local_service(engine, local_caller("ta")))) as c:
            listed = c.dead_letters()
            assert [d.dead_id for d in listed] == [ann.dead_id]
            assert listed[0].reason == ann.reason
            with pytest.raises(NotFoundError):
                c.replay_dead_letter(bob.dead_id)
        with pytest.raises(NotFoundError):
            engine.replay_dead_letter(ann.dead_id, tenant="tb")
        with pytest.raises(NotFoundError):
            engine.replay_dead_letter("1-0", tenant="ta")
        with pytest.raises(ValidationError) as bad:
            engine.replay_dead_letter("not-an-id", tenant="ta")
        assert bad.value.field == "dead_id"

        # Fixed: Ann's replay is stored, and leaves the dead letters.
        embedder.poisoned = False
        new_id = engine.replay_dead_letter(ann.dead_id, tenant="ta")
        assert new_id != ann.source_id
        engine.flush()
        assert engine.dead_letters(tenant="ta") == ()
        assert engine.count_memories("ta", user="ann", types=("episode",)) == 1
        assert queue.stats().dead_lettered == 1  # Bob's is still there
    finally:
        engine.close()

    # The CLI, on the data directory: Bob's listed (table and JSON), then replayed.
    from memstrata.cli import app

    listed_json = runner.invoke(
        app, ["deadletters", "list", "--tenant", "tb", "--data-dir", str(data), "--json"]
    )
    assert listed_json.exit_code == 0, listed_json.output
    [row] = json.loads(listed_json.stdout)["dead_letters"]
    assert (row["dead_id"], row["user_id"], row["error"]) == (bob.dead_id, "bob", "RuntimeError")
    table = runner.invoke(app, ["deadletters", "list", "--tenant", "ta", "--data-dir", str(data)])
    assert table.exit_code == 0 and "dead letters (0)" in table.stdout
    unknown = runner.invoke(
        app, ["deadletters", "replay", bob.dead_id, "--tenant", "ta", "--data-dir", str(data),
              "--json"],
    )  # fmt: skip
    assert unknown.exit_code == 2
    assert json.loads(unknown.stdout)["error"]["type"] == "NotFoundError"
    replayed = runner.invoke(
        app, ["deadletters", "replay", bob.dead_id, "--tenant", "tb", "--data-dir", str(data),
              "--json"],
    )  # fmt: skip
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.stdout)["replayed"][0]["dead_id"] == bob.dead_id
