"""Items under the low-confidence floor stay out of the memory block while a confident
memory answers the request, and come in as one marked group when nothing confident
exists (seed 003 §6.2). Through ``engine.build_context``, in English and Chinese."""

from __future__ import annotations

import re

import pytest

from memstrata.context import Turn
from memstrata.context.render import LOW_CONFIDENCE_HEADER
from memstrata.engine import ContextEngine
from memstrata.errors import ValidationError

SYSTEM = "You are a support agent. Use the memories when they answer the question."
CASES = {
    "en": (
        "I'm allergic to peanuts.",
        ("I live in Hangzhou.", "My budget is 5000 yuan.", "My order ORD-20240311 shipped."),
        ("Hangzhou", "5000", "ORD-20240311"),
        "What am I allergic to?",
        "peanuts",
        ("I sneeze a lot in spring.", "sneeze"),
    ),
    "zh": (
        "我对花生过敏。",
        ("我住在杭州。", "我的预算是5000元。", "我的订单ORD-20240312已经发货了。"),
        ("杭州", "5000", "ORD-20240312"),
        "我对什么过敏？",
        "花生",
        ("我是一名医生。", "医生"),
    ),
}


def _memory_block(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages[1:-1] if "## Retrieved context" in m["content"])


# A stored memory in a block: its label line ("[id] L3 ...") and its text, fenced.
_MEMORY = re.compile(r"^\[[^\]\n]*\] L3 [^\n]*\n(`{3,})\n(.*?)\n\1$", re.MULTILINE | re.DOTALL)


def _memory_texts(block: str) -> list[str]:
    """The stored memories' own texts in a block: what an absence is checked against,
    never the labels, the session state or anything else carrying a random id (a
    session id holding "5000" failed the Chinese case by chance)."""
    return [match[2] for match in _MEMORY.finditer(block)]


@pytest.mark.parametrize("lang", sorted(CASES))
def test_noise_under_the_floor_is_not_packed_next_to_a_confident_answer(
    engine: ContextEngine, lang: str
) -> None:
    allergy, noise, noise_values, question, answer, _ = CASES[lang]
    for text in (allergy, *noise):
        engine.remember("u1", text, tenant="t")
    engine.flush()
    state = engine.start_session("u1", "support", tenant="t", session_id="s-5000-ORD-20240311")
    built = engine.build_context(state, None, question, system_prompt=SYSTEM)
    block = _memory_block(built.messages())
    assert answer in block
    texts = _memory_texts(block)
    assert texts and any(answer in text for text in texts)
    for value in noise_values:  # a city, a budget, an order: none packed
        assert not any(value in text for text in texts), value
    assert LOW_CONFIDENCE_HEADER not in block
    # Nothing is lost silently: each one left out is reported, with its reason.
    withheld = [d for d in built.dropped if d.reason == "low_confidence"]
    assert withheld and all(d.origin.low_confidence for d in withheld)
    assert all(d.section == "memory" for d in withheld)
    assert not any(a.origin.low_confidence for a in built.admitted)
    assert built.as_dict()["dropped"][0]["reason"] in {"low_confidence", "duplicate"}


@pytest.mark.parametrize("lang", sorted(CASES))
def test_with_only_weak_matches_they_are_packed_as_one_marked_group(
    engine: ContextEngine, lang: str
) -> None:
    _, noise, noise_values, question, _, (weak_text, weak_value) = CASES[lang]
    # A weak match (under the floor, above the skip threshold) keeps L3 from being
    # skipped outright: the weak matches are then all the request found.
    for text in (weak_text, *noise):
        engine.remember("u2", text, tenant="t")
    engine.flush()
    # An id that holds a noise value (a random one did, by chance): only the memories'
    # texts are checked, never the labels and ids around them.
    state = engine.start_session("u2", "support", tenant="t", session_id="s-d4dd68116b5000f")
    built = engine.build_context(state, None, question, system_prompt=SYSTEM)
    block = _memory_block(built.messages())
    assert LOW_CONFIDENCE_HEADER in block
    before, weak = (_memory_texts(part) for part in block.split(LOW_CONFIDENCE_HEADER, 1))
    assert any(weak_value in text for text in weak)
    for value in (weak_value, *noise_values):  # all of them under the header, none above
        assert not any(value in text for text in before), value
    assert block.count(LOW_CONFIDENCE_HEADER) == 1
    low = [a for a in built.admitted if a.origin.low_confidence]
    assert low and all(a.section == "memory" for a in low)
    assert not any(d.reason == "low_confidence" for d in built.dropped)


def test_bad_budget_is_refused_naming_the_field(engine: ContextEngine) -> None:
    engine.remember("u3", "I'm allergic to peanuts.", tenant="t")
    engine.flush()
    state = engine.start_session("u3", "support", tenant="t")
    question = "What am I allergic to?"
    with pytest.raises(ValidationError) as err:
        engine.build_context(state, None, question, system_prompt=SYSTEM, window_tokens=-5)
    assert err.value.field == "window_tokens"
    with pytest.raises(ValidationError) as err:
        engine.build_context(
            state,
            None,
            question,
            system_prompt=SYSTEM,
            budget="8k",  # type: ignore[arg-type]
        )
    assert err.value.field == "budget"
    # nothing lost: the memory is still there, and packed
    again = engine.build_context(state, None, question, system_prompt=SYSTEM)
    assert "peanuts" in _memory_block(again.messages())


def test_a_history_element_that_is_not_a_turn_is_refused_naming_it(
    engine: ContextEngine,
) -> None:
    engine.remember("u4", "I'm allergic to peanuts.", tenant="t")
    engine.flush()
    state = engine.start_session("u4", "support", tenant="t")
    question = "What am I allergic to?"
    for bad, field in (
        ((Turn("user", "hi"), "not a turn"), "history[1]"),
        ("just a string", "history"),
    ):
        with pytest.raises(ValidationError) as err:
            engine.build_context(
                state,
                None,
                question,
                system_prompt=SYSTEM,
                history=bad,  # type: ignore[arg-type]
            )
        assert err.value.field == field
    again = engine.build_context(state, None, question, system_prompt=SYSTEM)
    assert "peanuts" in _memory_block(again.messages())
