"""The ``memstrata`` row: the product's own path, as a user runs it.

Every turn of a data set goes through ``engine.observe()`` - one engine session per
conversation session, the engine clock set to that session's date, the speaker
given - so it passes the gateway, the queue, the extractor and the streaming
episode index. After ``engine.flush()``, every question goes through
``engine.retrieve()``; the episodes (and the facts, through the episodes they were
said in) it returns are mapped back to the data set's turn ids.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import groupby
from pathlib import Path

from memstrata.clock import FakeClock
from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import BackendError
from memstrata.eval.datasets import Turn
from memstrata.eval.systems import Retrieved
from memstrata.extract.candidates import ROLES
from memstrata.retrieval.results import RetrievalResult, RetrievedItem

EVAL_USER = "eval-user"
"""Each conversation (tenant) is one user's memory."""
PRODUCT_SYSTEM = "memstrata"
FLUSH_TIMEOUT_S = 3_600.0


class EngineSystem:
    """An :class:`~memstrata.eval.systems.EvalSystem` over a :class:`ContextEngine`
    whose clock is ``clock`` (the harness sets it to each session's date)."""

    def __init__(
        self, engine: ContextEngine, clock: FakeClock, *, name: str = PRODUCT_SYSTEM
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._name = name
        self._turn_of: dict[str, str] = {}
        self._sessions = 0

    @property
    def name(self) -> str:
        """The system's key in the report."""
        return self._name

    def index(self, tenant: str, turns: Sequence[Turn]) -> None:
        """Observe ``turns`` in order, one engine session per data-set session."""
        for session, grouped in groupby(turns, key=lambda t: t.session):
            session_turns = list(grouped)
            self._clock.set(session_turns[0].at)
            self._sessions += 1
            state = self._engine.start_session(
                EVAL_USER,
                f"{tenant} {session}",
                tenant=tenant,
                session_id=f"{tenant}.s{self._sessions}",
            )
            for turn in session_turns:
                self._clock.set(turn.at)
                # LoCoMo's speakers are two people (both users to the engine, named);
                # LongMemEval's turns carry their chat role.
                role = turn.speaker if turn.speaker in ROLES else "user"
                speaker = None if turn.speaker in ROLES else turn.speaker
                receipt = self._engine.observe(state.session_id, role, turn.text, speaker=speaker)
                if not receipt.queued:
                    raise BackendError(f"observe failed for turn {turn.id}: {receipt.error}")
                for episode_id in receipt.episode_ids:
                    self._turn_of[episode_id] = turn.id

    def finish_indexing(self) -> None:
        """Wait for the write pipeline, then merge the index's segments once."""
        self._engine.flush(FLUSH_TIMEOUT_S)
        self._engine.parts.longterm.optimize()

    def search(self, tenant: str, query: str, at: datetime, k: int) -> list[Retrieved]:
        """``engine.retrieve`` at ``at``, mapped to turn ids (a fact counts as the
        turn it was said in; each turn once, in rank order)."""
        self._clock.set(at)
        result = self._engine.retrieve(query, tenant=tenant, user=EVAL_USER, k=k, now=at)
        # Skipped L3 (everything below the floor) still counts its would-be items
        # here: the harness scores retrieval; CER reads the confidence.
        found: list[Retrieved] = []
        seen: set[str] = set()
        skipped = not result.items
        for item in result.items or result.below_threshold:
            turn = self._turn(item)
            if turn is not None and turn not in seen:
                seen.add(turn)
                found.append(Retrieved(turn, item.cosine, skipped or item.low_confidence))
        return found

    def retrieve(self, tenant: str, query: str, at: datetime, k: int) -> RetrievalResult:
        """``engine.retrieve`` at ``at`` as :meth:`search` makes it (the whole result)."""
        self._clock.set(at)
        return self._engine.retrieve(query, tenant=tenant, user=EVAL_USER, k=k, now=at)

    def turn_of(self, item: RetrievedItem) -> str | None:
        """The data set's turn ``item`` was said in (None: not one of its turns)."""
        return self._turn(item)

    def _turn(self, item: RetrievedItem) -> str | None:
        if item.kind == "episode":
            return self._turn_of.get(item.id)
        episodes = item.payload.get("episodes") or ()
        return next((self._turn_of[e] for e in episodes if e in self._turn_of), None)


@contextmanager
def fake_clock_engine(
    name: str, data_dir: Path | None = None
) -> Iterator[tuple[ContextEngine, FakeClock]]:
    """An engine on the embedded defaults whose clock the harness sets, under
    ``<data_dir>/<name>`` or a temporary directory removed afterwards (the scenario
    and update-sequence harnesses)."""
    clock = FakeClock()
    with tempfile.TemporaryDirectory(prefix=f"memstrata-{name}-") as tmp:
        root = Path(data_dir) if data_dir is not None else Path(tmp)
        engine = ContextEngine.open(Settings(data_dir=root / name), clock=clock)
        try:
            yield engine, clock
        finally:
            engine.close()
