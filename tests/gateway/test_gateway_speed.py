"""Hostile inputs must terminate with correct output (timing lives in `memstrata bench gateway`)."""

from __future__ import annotations

from typing import Any

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


def test_the_bench_times_scans_not_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every timed call of ``sanitize_us`` scans its text: the sanitizer's memory of
    clean texts would otherwise turn the number into a dictionary lookup."""
    import memstrata.bench.gateway as bench
    import memstrata.gateway.sanitizer as sanitizer_module

    scans = 0
    real = sanitizer_module.find_matches

    def counting(text: str) -> Any:
        nonlocal scans
        scans += 1
        return real(text)

    monkeypatch.setattr(sanitizer_module, "find_matches", counting)
    monkeypatch.setattr(bench, "HOSTILE", {})
    bench.run_gateway_bench(calls=3)
    # Two texts x 5 rounds x 3 calls of scans; the "seen" timing adds one scan of
    # each text (its first call) and the dirty text's every call (never cached).
    assert scans >= 2 * 5 * 3
