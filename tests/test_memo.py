"""memstrata.memo: the bounded memo dict shared by the hot-path caches."""

from __future__ import annotations

from memstrata.memo import remember


def test_remember_stores_and_returns_the_value() -> None:
    cache: dict[str, int] = {}
    assert remember(cache, "a", 1, limit=3) == 1
    assert cache == {"a": 1}


def test_a_full_cache_is_emptied_before_the_new_entry() -> None:
    cache = {"a": 1, "b": 2}
    remember(cache, "c", 3, limit=2)
    assert cache == {"c": 3}
    remember(cache, "d", 4, limit=2)
    assert cache == {"c": 3, "d": 4}
