"""Never-compress fields survive compression verbatim; a summary is never re-summarized."""

from __future__ import annotations

import pytest

from memstrata.context import Turn, compress_turns, find_protected
from memstrata.context.compress import digest_turn, render_summary, turn_ids
from memstrata.errors import ValidationError

PROTECTED = [
    "ORD-2024-000123",
    "#88812",
    "u_789",
    "123e4567-e89b-12d3-a456-426614174000",
    "¥1,280.50",
    "$3.2M",
    "300元",
    "2024-03-05",
    "2025-04-01T08:22:00Z",
    "2024年3月5日",
    "3月24日",
]
DECISIONS = [
    "We decided to refund the full amount.",
    "我们决定下周二发货。",
    "Let's go with the premium plan.",
]

HISTORY = (
    Turn("user", "Hi! Order ORD-2024-000123 cost ¥1,280.50 and arrived broken on 2024-03-05."),
    Turn(
        "assistant",
        "Sorry about that. I see ticket #88812 for user u_789 opened at "
        "2025-04-01T08:22:00Z. The weather is lovely, by the way.",
    ),
    Turn(
        "user",
        "The company raised $3.2M. Request id 123e4567-e89b-12d3-a456-426614174000. "
        "Can you refund it?",
    ),
    Turn("assistant", "We decided to refund the full amount. 我们决定下周二发货。"),
    Turn("user", "我在2024年3月5日付了300元，3月24日之前要到账。Let's go with the premium plan."),
)


def test_protected_fields_are_found_verbatim() -> None:
    found = {field.value for turn in HISTORY for field in find_protected(turn.content)}
    for value in [*PROTECTED, *DECISIONS]:
        assert value in found, value
    assert not any(field.value == "GPT-4" for field in find_protected("GPT-4 is a model"))
    with pytest.raises(ValidationError) as err:
        find_protected(42)  # type: ignore[arg-type]
    assert err.value.field == "text"


@pytest.mark.parametrize("detail", ["full", "fields"])
def test_protected_fields_survive_compression(detail: str) -> None:
    (summary,) = compress_turns(HISTORY, detail=detail)  # type: ignore[arg-type]
    assert summary.summary and summary.role == "system"
    assert summary.covers == turn_ids(HISTORY)
    for value in [*PROTECTED, *DECISIONS]:
        assert value in summary.content, value
    assert "weather" not in summary.content  # small talk is what gets compressed away
    assert "never summarize it again" in summary.content


def test_full_detail_keeps_key_lines_and_questions() -> None:
    (summary,) = compress_turns(HISTORY)
    assert "- user: Order ORD-2024-000123 cost ¥1,280.50 and arrived broken" in summary.content
    assert "Can you refund it?" in summary.content
    (short,) = compress_turns(HISTORY, detail="fields")
    assert len(short.content) < len(summary.content)


def test_a_summary_is_never_summarized_again() -> None:
    (first,) = compress_turns(HISTORY[:3])
    later = (first, *HISTORY[3:])
    compressed = compress_turns(later)
    assert compressed[0] is first  # kept as-is, same object, same text
    second = compressed[1]
    assert second.summary and second.covers == turn_ids(HISTORY[3:])
    assert first.content not in second.content
    assert "ORD-2024-000123" not in second.content  # first's fields are not copied over
    # Only summaries left: nothing to do.
    assert compress_turns(compressed) == compressed
    assert compress_turns([first]) == (first,)
    with pytest.raises(ValidationError) as err:
        digest_turn("s", first)
    assert err.value.field == "turn"


def test_turn_ids_are_stable_and_unique() -> None:
    turns = (Turn("user", "ok"), Turn("user", "ok"), Turn("user", "x", id="mine"))
    ids = turn_ids(turns)
    assert len(set(ids)) == 3 and ids[2] == "mine"
    assert ids == turn_ids(turns)
    assert turn_ids(turns[1:])[0] == ids[0]  # same content, same id, wherever it sits


def test_compress_validates() -> None:
    with pytest.raises(ValidationError) as err:
        compress_turns("not turns")  # type: ignore[arg-type]
    assert err.value.field == "turns"
    with pytest.raises(ValidationError) as err:
        compress_turns([Turn("user", "a"), {"role": "user"}])  # type: ignore[list-item]
    assert err.value.field == "turns[1]"
    with pytest.raises(ValidationError) as err:
        render_summary([])
    assert err.value.field == "turns"
    with pytest.raises(ValidationError) as err:
        compress_turns(HISTORY, detail="tiny")  # type: ignore[arg-type]
    assert err.value.field == "detail"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"role": "tool", "content": "x"}, "role"),
        ({"role": "user", "content": "  "}, "content"),
        ({"role": "user", "content": "x", "id": "bad id"}, "id"),
        ({"role": "user", "content": "x", "covers": ("a",)}, "covers"),
        ({"role": "user", "content": "x", "summary": 1}, "summary"),
        ({"role": "system", "content": "x", "summary": True, "covers": "abc"}, "covers"),
    ],
)
def test_turn_validation_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        Turn(**kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


CONSTRAINTS = [
    "The refund must not exceed ¥1,280.50.",
    "I'm allergic to shellfish.",
    "Delivery no later than Friday, please.",
    "我对花生过敏。",
    "预算不超过5000元。",
    "最晚3月24日之前要到账。",
]


@pytest.mark.parametrize("detail", ["full", "fields", "compact"])
def test_constraints_are_never_compressed_either(detail: str) -> None:
    turns = (
        Turn("user", "Hello! The weather is lovely. " + " ".join(CONSTRAINTS[:3])),
        Turn("assistant", "Noted. 天气不错。" + "".join(CONSTRAINTS[3:])),
    )
    kinds = {f.value: f.kind for turn in turns for f in find_protected(turn.content)}
    for sentence in CONSTRAINTS:
        assert kinds.get(sentence) == "constraint", sentence
    assert "Hello!" not in kinds and "天气不错。" not in kinds
    (summary,) = compress_turns(turns, detail=detail)  # type: ignore[arg-type]
    for sentence in CONSTRAINTS:
        assert sentence in summary.content, sentence
    assert "weather" not in summary.content and "天气" not in summary.content
    # A decision that states a limit is listed once, as a decision.
    both = find_protected("We decided the budget is at most ¥300.")
    assert [f.kind for f in both] == ["amount", "decision"]
