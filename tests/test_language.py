"""Language detection per text: Chinese, English, or both mixed."""

from __future__ import annotations

import pytest

from memstrata.language import detect_language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Austin last month", "en"),
        ("我上个月搬到了深圳", "zh"),
        ("我用 iPhone 拍照", "zh"),  # one brand name keeps a Chinese sentence Chinese
        ("明天的 meeting 改到 Tuesday afternoon 了", "mixed"),
        ("Remind me to buy 牛奶", "en"),
        ("帮我 book 一下 next Friday 去 Shanghai 的 flight", "mixed"),
        ("12345 !!", "en"),
        ("", "en"),
    ],
)
def test_detect_language(text: str, expected: str) -> None:
    assert detect_language(text) == expected
