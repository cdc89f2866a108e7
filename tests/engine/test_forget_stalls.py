"""A forget does not stall another tenant (issue 31, "Why" 9): its rebuild swaps only the
part of each collection that holds the forgotten user's tenant, so another tenant's
reads and writes go on while that part is swapped. (How long the swap's engine calls
hold the GIL is measured by ``memstrata bench forget``, not timed here.)"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memstrata.longterm.edge as edge_module
from memstrata.engine import ContextEngine
from memstrata.testing.disk import files_holding

UNBLOCKED_S = 60.0  # a call that is not blocked ends well within this on a loaded machine
# In different parts (tests/longterm/test_parts.py checks it).
LEAVING, STAYING = "acme", "globex"


def test_another_tenant_reads_and_writes_while_a_forget_swaps(
    engine_factory: Callable[..., ContextEngine], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = tmp_path / "forget"
    engine = engine_factory(data)
    marker = f"zq{uuid.uuid4().hex[:10]}"
    engine.remember("bob", f"My code word is {marker}.", tenant=LEAVING)
    engine.remember("carol", "I moved to Porto last spring.", tenant=STAYING)
    engine.flush()
    swapping, release = threading.Event(), threading.Event()
    original = edge_module.swap_in

    def held(live: Path) -> None:
        swapping.set()
        release.wait()
        original(live)

    monkeypatch.setattr(edge_module, "swap_in", held)
    outcome: list[Any] = []
    forget = threading.Thread(target=lambda: outcome.append(engine.forget("bob", tenant=LEAVING)))
    forget.start()
    answers: list[Any] = []
    try:
        assert swapping.wait(UNBLOCKED_S), "the forget never reached its swap"

        def other_tenant() -> None:
            answers.append(engine.retrieve("where do I live", user="carol", tenant=STAYING))
            engine.remember("carol", "I like green tea.", tenant=STAYING)
            engine.flush()

        other = threading.Thread(target=other_tenant)
        other.start()
        other.join(UNBLOCKED_S)
        blocked = other.is_alive()

    finally:
        release.set()
        forget.join()
    other.join()
    assert not blocked, "another tenant's read or write waited for the forget's swap"
    texts = [str(item.payload.get("text")) for item in answers[0].items] if answers else []
    assert any("Porto" in text for text in texts), texts
    assert outcome and outcome[0].points_deleted >= 1
    assert files_holding(data, marker) == []
