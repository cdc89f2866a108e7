"""Fixtures for extraction tests: a turn factory with fixed ids and time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memstrata.extract import Role, Turn

OBSERVED_AT = datetime(2025, 3, 25, 10, 30, tzinfo=UTC)

MakeTurn = Callable[..., Turn]


@pytest.fixture
def make_turn() -> MakeTurn:
    """Build a Turn; keyword arguments override the defaults."""

    def make(
        text: str,
        role: Role = "user",
        *,
        user: str = "u1",
        tenant: str = "t1",
        turn_id: str = "turn-1",
        observed_at: datetime = OBSERVED_AT,
    ) -> Turn:
        return Turn(
            text=text,
            role=role,
            tenant=tenant,
            user=user,
            session_id="s1",
            turn_id=turn_id,
            observed_at=observed_at,
        )

    return make
