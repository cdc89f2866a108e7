"""Frames (issue 32, items 1 and 2): who + the registry's cue + a copula or change verb +
a typed value, and the removal frames, read through the real engine (the embedded
Valkey and qdrant-edge): what each "Why" case of the issue must leave current, in
English and Chinese."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.extract import RuleExtractor, Turn
from memstrata.memory.versioning import item_key, value_items

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def _observe(engine: ContextEngine, texts: Sequence[str]) -> None:
    clock = engine.parts.clock
    assert isinstance(clock, FakeClock)
    state = engine.start_session("u1", "chat", tenant="acme", session_id="s1")
    for text in texts:
        assert engine.observe(state.session_id, "user", text).queued
        clock.advance(timedelta(days=2))
    engine.flush()


def _current(engine: ContextEngine, attribute: str) -> set[str] | None:
    unit = engine.parts.memory.active_fact("acme", "u1", "user", attribute)
    if unit is None:
        return None
    separator = engine.settings.memory.value_separator
    return {item_key(v) for v in value_items(unit.value, separator)}


def _history(engine: ContextEngine, attribute: str) -> list[tuple[str, bool]]:
    return [
        (u.value, u.active) for u in engine.parts.memory.history("acme", "u1", "user", attribute)
    ]


@pytest.fixture
def engine(engine_opener: Factory) -> ContextEngine:
    return engine_opener(clock=FakeClock(START))


@pytest.mark.parametrize(
    ("allergy", "now", "left"),
    [
        ("I'm allergic to eggs and shrimp.", "I can eat eggs now.", {"shrimp"}),
        ("我对鸡蛋和虾过敏。", "我现在能吃鸡蛋了。", {"虾"}),
    ],
)
def test_can_eat_now_takes_the_food_out_of_the_allergies(
    engine: ContextEngine, allergy: str, now: str, left: set[str]
) -> None:
    _observe(engine, (allergy, now))
    assert _current(engine, "allergies") == left


@pytest.mark.parametrize(
    ("diet", "retraction"),
    [
        ("I'm vegetarian.", "I'm not vegetarian anymore."),
        ("我吃素。", "我现在不吃素了，开始吃肉了。"),
    ],
)
def test_a_diet_given_up_is_no_longer_current_and_stays_in_history(
    engine: ContextEngine, diet: str, retraction: str
) -> None:
    _observe(engine, (diet, retraction))
    assert _current(engine, "diet") is None
    history = _history(engine, "diet")
    assert history and history[0][1] is False  # the old value stays, closed
    assert _current(engine, "avoids") is None  # 不吃素 is no food avoided


@pytest.mark.parametrize(
    ("before", "change", "employer", "job", "old_job"),
    [
        (
            "I work as a backend engineer at Alibaba.",
            "I left Alibaba and joined ByteDance as a product manager.",
            "bytedance",
            "product manager",
            "backend engineer",
        ),
        (
            "我在阿里巴巴做后端工程师。",
            "我从阿里巴巴离职了，加入字节跳动做产品经理。",
            "字节跳动",
            "产品经理",
            "后端工程师",
        ),
    ],
)
def test_a_job_change_makes_the_new_employer_and_job_current(
    engine: ContextEngine, before: str, change: str, employer: str, job: str, old_job: str
) -> None:
    _observe(engine, (before, change))
    assert _current(engine, "employer") == {employer}
    assert _current(engine, "job") == {job}
    assert (old_job, False) in [(item_key(v), a) for v, a in _history(engine, "job")]


@pytest.mark.parametrize(
    ("text", "attribute", "expected"),
    [
        ("我的收货地址是北京市朝阳区。", "delivery_address", {"北京市朝阳区"}),
        (
            "My shipping address is now 5 Elm Street, Springfield.",
            "delivery_address",
            {"5 elm street, springfield"},
        ),
        ("我家住在北京市朝阳区望京。", "address", {"北京市朝阳区望京"}),
        ("I can't have dairy or eggs.", "avoids", {"dairy", "egg"}),
        ("我不能吃辣，也不喝酒。", "avoids", {"辣", "酒"}),
        ("I avoid gluten.", "avoids", {"gluten"}),
        ("I teach chemistry at a high school these days.", "job", {"chemistry teacher"}),
        ("我现在在一所中学教化学。", "job", {"化学老师"}),
        ("I don't eat pork.", "avoids", {"pork"}),
        ("我不吃猪肉。", "avoids", {"猪肉"}),
    ],
)
def test_plain_statements_yield_their_fact(
    engine: ContextEngine, text: str, attribute: str, expected: set[str]
) -> None:
    _observe(engine, (text,))
    assert _current(engine, attribute) == expected


@pytest.mark.parametrize(
    ("first", "correction", "value"),
    [
        ("我的预算是8000元。", "不对，预算应该是一万元。", "一万元"),
        ("My budget is $8,000.", "No wait, the budget should be $10,000.", "$10,000"),
    ],
)
def test_a_corrected_budget_is_current(
    engine: ContextEngine, first: str, correction: str, value: str
) -> None:
    _observe(engine, (first, correction))
    assert _current(engine, "budget") == {item_key(value)}
    assert [a for _, a in _history(engine, "budget")] == [False, True]


def test_the_llm_prompt_lists_the_registry_attributes() -> None:
    from memstrata.attributes import ATTRIBUTES
    from memstrata.extract import SYSTEM_PROMPT

    for attribute in ATTRIBUTES:
        assert f"- {attribute.name} (" in SYSTEM_PROMPT
    assert "allergies (food, a set, one memory per item)" in SYSTEM_PROMPT


@pytest.mark.parametrize(
    ("text", "removed"),
    [
        ("I don't live in Hangzhou anymore.", [("city", "Hangzhou")]),
        ("我不住在杭州了", [("city", "杭州")]),
        ("I'm no longer a student.", [("job", "student")]),
        ("我不再是老师了。", [("job", "老师")]),
        ("I left Alibaba.", [("employer", "Alibaba")]),
        ("我从阿里巴巴离职了。", [("employer", "阿里巴巴")]),
        # a new value in the same sentence supersedes; nothing is removed besides
        ("I no longer live in Berlin, I moved to Paris.", []),
        ("I'm not a teacher.", []),
        ("If I can eat eggs now, great.", []),
    ],
)
def test_removal_frames_take_a_single_value_back(
    make_turn: Callable[..., Turn], text: str, removed: list[tuple[str, str]]
) -> None:
    found = RuleExtractor().extract(make_turn(text))
    assert [(c.attribute, c.value) for c in found if c.change == "remove"] == removed


def test_a_removed_diet_names_each_of_its_forms(make_turn: Callable[..., Turn]) -> None:
    found = RuleExtractor().extract(make_turn("I'm not vegetarian anymore."))
    removed = {c.value for c in found if c.change == "remove" and c.attribute == "diet"}
    assert {"vegetarian", "吃素", "素食主义者"} <= removed
    assert not [c for c in found if c.change != "remove"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a change verb for a city is no employer change ("as a student" is no job)
        ("I moved to London as a student.", []),
        ("I switched to Python as a beginner.", []),
        # where one teaches is no subject taught
        ("I teach at Stanford.", [("employer", "Stanford")]),
        ("I teach yoga on weekends.", [("job", "yoga teacher")]),
        ("我在清华教书。", [("job", "老师")]),
        ("I teach my kids to swim.", []),
    ],
)
def test_frames_do_not_misread_neighbouring_phrasings(
    make_turn: Callable[..., Turn], text: str, expected: list[tuple[str, str]]
) -> None:
    found = RuleExtractor().extract(make_turn(text))
    stated = [(c.attribute, c.value) for c in found if c.change != "remove"]
    assert [s for s in stated if s[0] in ("employer", "job")] == expected


@pytest.mark.parametrize(
    ("liked", "change", "left"),
    [
        ("I love coffee and jazz.", "I'm not into coffee anymore.", {"jazz"}),
        ("我喜欢喝咖啡和看电影。", "我现在不爱喝咖啡了。", {"看电影"}),
    ],
)
def test_a_preference_given_up_leaves_the_likes(
    engine: ContextEngine, liked: str, change: str, left: set[str]
) -> None:
    _observe(engine, (liked, change))
    assert _current(engine, "likes") == left


@pytest.mark.parametrize(
    ("allergies", "only", "left"),
    [
        (
            "I'm allergic to peanuts, shrimp and eggs.",
            "I'm only allergic to peanuts now.",
            {"peanut"},
        ),
        ("我对花生、虾和鸡蛋过敏。", "我现在只对花生过敏了。", {"花生"}),
    ],
)
def test_only_now_leaves_just_the_named_items(
    engine: ContextEngine, allergies: str, only: str, left: set[str]
) -> None:
    _observe(engine, (allergies, only))
    assert _current(engine, "allergies") == left


@pytest.mark.parametrize(
    "text",
    [
        "I can't eat anymore, I'm full.",
        "I can't eat another bite.",
        "I avoid conflict.",
        "我现在在北京出差。",
        "My birthday is coming up.",
        "The budget is tight.",
    ],
)
def test_no_fact_where_nothing_is_stated(make_turn: Callable[..., Turn], text: str) -> None:
    found = RuleExtractor().extract(make_turn(text))
    assert [(c.attribute, c.value) for c in found if c.kind == "fact"] == []
