"""Request building and tolerant answer parsing, without any server."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.extract import (
    RESPONSE_FORMAT,
    SYSTEM_PROMPT,
    Candidate,
    Turn,
    build_request_body,
    parse_answer,
)
from memstrata.extract.llm_payload import UnusableAnswerError, message_content

MakeTurn = Callable[..., Turn]

GOOD = {
    "subject": "user",
    "attribute": "city",
    "value": "Chengdu",
    "kind": "fact",
    "confidence": 0.9,
    "importance": 0.7,
    "extras": [],
    "valid_from": None,
}
GOOD_JSON = json.dumps(GOOD)


def test_request_body(make_turn: MakeTurn) -> None:
    body = build_request_body("qwen2.5-7b", make_turn("我搬到成都了"))
    assert body["model"] == "qwen2.5-7b"
    assert body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert body["messages"][1]["role"] == "user"
    assert "我搬到成都了" in body["messages"][1]["content"]
    assert "2025-03-25T10:30:00+00:00" in body["messages"][1]["content"]
    assert body["response_format"] is RESPONSE_FORMAT
    schema = RESPONSE_FORMAT["json_schema"]["schema"]
    assert RESPONSE_FORMAT["type"] == "json_schema"
    item = schema["properties"]["memories"]["items"]
    assert set(item["required"]) == set(item["properties"])  # what strict mode demands
    assert json.loads(json.dumps(body)) == body  # serializable as is


@pytest.mark.parametrize(
    "content",
    [
        f'{{"memories": [{GOOD_JSON}]}}',
        f"[{GOOD_JSON}]",
        GOOD_JSON,  # a single object without a list
        f"```json\n[{GOOD_JSON}]\n```",
        f'Here are the memories I found:\n```\n{{"memories": [{GOOD_JSON}]}}\n```\nDone.',
        f"Sure! [{GOOD_JSON}] Hope this helps.",
        f"Note [see below]: [{GOOD_JSON}]",
        f'{{"memories": [{GOOD_JSON},],}}',  # trailing commas
        f'{{"memories": [{GOOD_JSON[:-1]}, "valid_from": None,}}]}}',  # Python literal
        f'{{"memories": [{GOOD_JSON}',  # cut off before the closers
        f'{{"candidates": [{GOOD_JSON}]}}',
        f'{{"memories": {GOOD_JSON}}}',
    ],
)
def test_tolerant_parsing(content: str) -> None:
    parsed = parse_answer(content)
    assert [(c.attribute, c.value, c.kind) for c in parsed.candidates] == [
        ("city", "Chengdu", "fact")
    ]
    assert parsed.dropped == ()


def test_trailing_comma_inside_a_string_is_kept() -> None:
    item = dict(GOOD, value="a, b,]")
    parsed = parse_answer(f"[{json.dumps(item)},]")
    assert parsed.candidates[0].value == "a, b,]"


@pytest.mark.parametrize(
    "content",
    [
        "",
        "I could not find anything.",
        "42",
        '"memories"',
        "[[[",
        '{"answer": "none"}',
        "null",
        '[{"kind": "opinion"}]',  # a list, but nothing in it is a candidate
    ],
)
def test_garbage_is_unusable(content: str) -> None:
    with pytest.raises(UnusableAnswerError):
        parse_answer(content)


def test_empty_list_is_a_valid_answer() -> None:
    assert parse_answer('{"memories": []}').candidates == ()


def test_invalid_candidates_are_dropped_one_by_one() -> None:
    items = [
        GOOD,
        dict(GOOD, kind="opinion"),
        dict(GOOD, confidence=1.7),
        dict(GOOD, confidence="high"),
        dict(GOOD, subject=""),
        dict(GOOD, valid_from="last Tuesday"),
        dict(GOOD, extras=[{"label": "amount"}]),
        "just a string",
        dict(GOOD, attribute="job", value="nurse"),
    ]
    parsed = parse_answer(json.dumps({"memories": items}))
    assert [c.value for c in parsed.candidates] == ["Chengdu", "nurse"]
    assert [(d.index, d.field) for d in parsed.dropped] == [
        (1, "kind"),
        (2, "confidence"),
        (3, "confidence"),
        (4, "subject"),
        (5, "valid_from"),
        (6, "extras"),
        (7, "item"),
    ]


def test_lenient_field_forms() -> None:
    item = {
        "subject": " user ",
        "attribute": "payment",
        "value": 1299,
        "kind": "EVENT",
        "confidence": "0.8",
        "extras": {"amount": "¥1,299.00", "order_id": "ORD-2024-000123"},
        "valid_from": "2025-03-24",
    }
    (candidate,) = parse_answer(json.dumps([item])).candidates
    assert (candidate.subject, candidate.value, candidate.kind) == ("user", "1299", "event")
    assert candidate.confidence == 0.8
    assert candidate.importance == 0.5  # absent: no opinion
    assert candidate.extras == (("amount", "¥1,299.00"), ("order_id", "ORD-2024-000123"))
    assert candidate.valid_from == datetime(2025, 3, 24, tzinfo=UTC)


def _completion(content: object) -> bytes:
    return json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": content}}]}
    ).encode()


def test_message_content() -> None:
    assert message_content(_completion("[]")) == "[]"
    assert message_content(_completion([{"type": "text", "text": "[1"}, {"text": "]"}])) == "[1]"
    for body in (
        b"<html>502</html>",
        b"{}",
        b'{"choices": []}',
        _completion(None),
        _completion("  "),
    ):
        with pytest.raises(UnusableAnswerError):
            message_content(body)
    refusal = json.dumps({"choices": [{"message": {"content": None, "refusal": "no"}}]}).encode()
    with pytest.raises(UnusableAnswerError, match="refused"):
        message_content(refusal)


_JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)
# Each field either valid or any JSON value: mixes of good and bad candidates.
_CANDIDATE_LIKE = st.fixed_dictionaries(
    {key: st.just(value) | _JSON for key, value in GOOD.items()}
)


@given(
    st.text(max_size=300)
    | _JSON.map(json.dumps)
    | st.lists(_CANDIDATE_LIKE, max_size=4).map(json.dumps)
)
def test_parsing_gives_valid_candidates_or_unusable(content: str) -> None:
    """Whatever comes back: validated candidates, or UnusableAnswerError, nothing else."""
    try:
        parsed = parse_answer(content)
    except UnusableAnswerError:
        return
    assert all(isinstance(candidate, Candidate) for candidate in parsed.candidates)
