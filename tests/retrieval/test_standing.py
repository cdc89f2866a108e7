"""Which standing attributes a question brings first (retrieval/standing.py): a plan
or a recommendation the registry's needs bear on, the user's own, naming none."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.retrieval.standing import ROUTE, standing_attributes


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where should I eat tonight?", ("allergies", "diet", "avoids", "health", "city")),
        ("今晚去哪吃饭？", ("allergies", "diet", "avoids", "health", "city")),
        ("帮我规划一下明天的三餐。", ("allergies", "diet", "avoids", "health", "city")),
        # Going out, exercise, a home: the body, the hours, the money, the place.
        (
            "Suggest a walking tour for this weekend.",
            ("health", "allergies", "children_count", "children", "city"),
        ),
        ("帮我推荐个健身房。", ("health", "job", "schedule", "city")),
        ("帮我找个房子租。", ("budget", "city", "employer")),
        ("How should I get to the airport tomorrow?", ("budget", "city", "schedule")),
        ("帮我订机票", ("budget", "city", "schedule")),
        ("Plan my trip", ("budget", "city", "schedule")),
        # What was said, someone else's plan, a named attribute: none.
        ("What did I eat yesterday?", ()),
        ("Where should Melanie eat?", ()),
        ("What book did Melanie read?", ()),
        ("What are Melanie's plans for the summer?", ()),
        ("What's my budget for the trip?", ()),
        ("What did I do last weekend?", ()),
    ],
)
def test_standing_attributes(question: str, expected: tuple[str, ...]) -> None:
    assert standing_attributes(question) == expected


def test_a_standing_fact_is_confident_when_the_question_shares_no_word_with_it(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    """ "Suggest a walking tour" is far from "I live in Lisbon." by every signal but the
    registry's: the city is served confident (not skipped, not flagged) all the same."""
    clock = FakeClock(datetime(2025, 6, 1, 9, tzinfo=UTC))
    engine = engine_opener(clock=clock)
    engine.start_session("u1", "chat", tenant="standing-floor", session_id="s1")
    for text in ("I live in Lisbon.", "I'm reading Moby Dick."):
        engine.observe("s1", "user", text)
        engine.flush()
        clock.advance(timedelta(days=20))
    found = engine.retrieve(
        "Suggest a walking tour for this weekend.", tenant="standing-floor", user="u1"
    )
    assert not found.l3_skipped
    first = found.items[0]
    assert first.text == "I live in Lisbon." and ROUTE in first.routes
    assert not first.low_confidence
