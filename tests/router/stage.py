"""What the router tests share: the engine's thresholds and a per-test view of it.

One real engine per test module (embedded Valkey, qdrant-edge, MiniLM; see
``conftest.py``) runs on a fake clock with confidence thresholds the tests' texts
straddle. Each test takes its own tenant, user and session ids and its own intent
names, so the tests of a module share the engine without seeing each other's data.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.session import SessionState

LOW_CONFIDENCE = 0.6
"""``low_confidence_cosine`` of the tests' engine: a paraphrase (~0.5) is flagged, a
near restatement (~0.85) is not."""
SKIP_BELOW = 0.3
"""``skip_below_cosine`` of the tests' engine: unrelated texts (~0.0-0.1) fall below."""
START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@dataclass
class Stage:
    """The shared engine and its clock, with fresh ids for one test."""

    engine: ContextEngine
    clock: FakeClock
    tenant: str
    user: str

    def session(self, initial_query: str = "help me", *, user: str | None = None) -> SessionState:
        """A new session of this test's tenant (of ``user``, default this test's user)."""
        return self.engine.start_session(
            user or self.user,
            initial_query,
            tenant=self.tenant,
            session_id=f"s-{uuid.uuid4().hex[:12]}",
        )

    def intent(self, prefix: str) -> str:
        """A fresh intent name (an engine registers each name once)."""
        return f"{prefix}_{uuid.uuid4().hex[:8]}"
