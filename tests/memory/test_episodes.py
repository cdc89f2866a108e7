"""Window keys of long episodes: which windows, what their points carry (pure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from memstrata.config import LongTermSettings
from memstrata.errors import ConfigError
from memstrata.longterm.facade import NewItem
from memstrata.memory.episodes import (
    EPISODE_TYPE,
    EPISODE_WINDOW_TYPE,
    text_windows,
    window_id,
    window_items,
    window_points,
)


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_a_text_the_model_reads_whole_has_no_window() -> None:
    assert text_windows(words(150), 150, 100, 32) == []
    assert text_windows("", 150, 100, 32) == []
    assert text_windows(words(400), 0, 100, 32) == []  # 0: windows off


def test_windows_start_every_stride_and_the_last_ends_with_the_text() -> None:
    windows = text_windows(words(400), 150, 100, 32)
    assert windows == [words(150, 100), words(150, 200), words(150, 250)]
    # A text just past one window: one window, moved back to end at its end.
    assert text_windows(words(160), 150, 100, 32) == [words(150, 10)]
    # Whitespace is normalized; the cap holds.
    assert text_windows("a  b\nc d e", 2, 1, 2) == ["b c", "c d"]


def test_every_word_is_in_some_window_or_in_the_first_read() -> None:
    for n in (151, 199, 250, 251, 333, 1000):
        seen = set(range(150))
        for window in text_windows(words(n), 150, 100, 1000):
            seen.update(int(w[1:]) for w in window.split())
        assert seen == set(range(n)), n


def episode(text: str, item_id: str | None = "8a4c1f2e-1d57-4b6b-9a57-0c3b9e2f1a10") -> NewItem:
    return NewItem(
        text=text,
        tenant="acme",
        user="u1",
        type=EPISODE_TYPE,
        source="turn",
        id=item_id,
        created_at=1_700_000_000.0,
        extra={"thread": "s1", "seq": 3, "role": "assistant"},
    )


def test_window_items_name_their_episode_and_carry_tenant_and_user() -> None:
    settings = LongTermSettings(window_words=150, window_stride_words=100)
    item = episode(words(400))
    keys = window_items(item, settings)
    assert [k.text for k in keys] == text_windows(item.text, 150, 100, 32)
    assert item.id is not None
    for n, key in enumerate(keys, start=1):
        assert key.type == EPISODE_WINDOW_TYPE
        assert (key.tenant, key.user, key.source) == ("acme", "u1", "turn")
        assert key.created_at == item.created_at
        assert key.id == window_id(item.id, n)
        # No conversation position: a key is never a turn of the thread.
        assert dict(key.extra) == {"episode": item.id, "window": n}
    assert len({k.id for k in keys}) == len(keys)
    assert window_items(episode(words(40)), settings) == []
    assert window_items(episode(words(400), None), settings) == []
    assert window_items(item, LongTermSettings(window_words=0)) == []
    assert len(window_items(episode(words(5000)), settings)) == settings.max_windows


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(tuple(texts))
        return np.ones((len(texts), 4), dtype=np.float32)


def test_window_points_embed_once_and_have_no_bm25_terms() -> None:
    embed = Recorder()
    settings = LongTermSettings()
    points = window_points(
        [episode(words(400)), episode(words(10)), episode(words(260), None)], settings, embed
    )
    assert len(points) == 3 and len(embed.calls) == 1
    assert embed.calls[0] == tuple(p.item.text for p in points)
    for point in points:
        assert point.sparse is not None and point.sparse.indices == ()
        assert point.dense.shape == (4,)
    assert window_points([episode(words(10))], settings, embed) == []
    assert len(embed.calls) == 1  # nothing long: no embedding call


@pytest.mark.parametrize(
    "changes",
    [
        {"window_words": -1},
        {"window_words": True},
        {"window_stride_words": 0},
        {"max_windows": 0},
        {"window_words": 50, "window_stride_words": 60},
    ],
)
def test_window_settings_are_validated(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"longterm\.(window|max_windows)"):
        LongTermSettings(**changes)  # type: ignore[arg-type]
