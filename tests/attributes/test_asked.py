"""Which attributes a question asks the current value of (registry ``asks`` cues),
for phrasings the outsider's dev set used: an employer asked as 哪家company, foods
to avoid asked with the verb (which asks the allergies too)."""

from __future__ import annotations

import pytest

from memstrata.attributes import asked


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("我现在在哪家company上班？", ("employer", "job")),
        ("Which company do I work for?", ("employer", "job")),
        ("Which fruit do I need to avoid?", ("avoids", "allergies")),
        ("我不能吃什么？", ("avoids", "allergies")),
        # Someone else's: no first person, nothing asked.
        ("Which company does Melanie work for?", ()),
    ],
)
def test_asked(question: str, expected: tuple[str, ...]) -> None:
    assert asked(question) == expected
