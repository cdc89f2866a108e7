"""Hostile inputs must terminate with correct output (timing lives in `memstrata bench gateway`)."""

from __future__ import annotations

import pytest

from memstrata.bench.gateway import DIRTY_2KB, HOSTILE, PLAIN_2KB
from memstrata.gateway import Sanitizer


def test_bench_texts_are_what_they_claim() -> None:
    sanitizer = Sanitizer()
    assert sanitizer.text(PLAIN_2KB, location="t") == PLAIN_2KB
    cleaned = sanitizer.text(DIRTY_2KB, location="t")
    assert "sk-proj-" not in cleaned and "alice@example.com" not in cleaned
    assert "13812345678" not in cleaned


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_are_sanitized_idempotently(name: str) -> None:
    sanitizer = Sanitizer()
    text = HOSTILE[name] * 3000
    once = sanitizer.text(text, location="t")
    assert sanitizer.text(once, location="t") == once
