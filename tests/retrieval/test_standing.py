"""Which standing attributes a question brings first (retrieval/standing.py): a plan
or a recommendation the registry's needs bear on, the user's own, naming none."""

from __future__ import annotations

import pytest

from memstrata.retrieval.standing import standing_attributes


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where should I eat tonight?", ("allergies", "diet", "avoids", "city")),
        ("今晚去哪吃饭？", ("allergies", "diet", "avoids", "city")),
        ("帮我订机票", ("budget", "city", "schedule")),
        ("Plan my trip", ("budget", "city", "schedule")),
        # What was said, someone else's plan, a named attribute: none.
        ("What did I eat yesterday?", ()),
        ("Where should Melanie eat?", ()),
        ("What book did Melanie read?", ()),
        ("What are Melanie's plans for the summer?", ()),
        ("What's my budget for the trip?", ()),
    ],
)
def test_standing_attributes(question: str, expected: tuple[str, ...]) -> None:
    assert standing_attributes(question) == expected
