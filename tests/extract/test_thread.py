"""A turn read in its conversation (memstrata.extract.thread) by the rule extractor, and
whether a bare value fits a value type (memstrata.extract.fit)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstrata.errors import ValidationError
from memstrata.extract.candidates import (
    MAX_PREVIOUS_TURNS,
    Candidate,
    PriorFact,
    PriorTurn,
    Turn,
)
from memstrata.extract.fit import fits, shape
from memstrata.extract.rules import RuleExtractor
from memstrata.extract.thread import disputes, with_disputes

AT = datetime(2025, 3, 1, tzinfo=UTC)
RULES = RuleExtractor()


def turn(text: str, *previous: PriorTurn, role: str = "user") -> Turn:
    return Turn(text, role, "t", "u", "s", "x", AT, previous=previous)  # type: ignore[arg-type]


def said(text: str, role: str = "user") -> PriorTurn:
    """An earlier turn with the facts the rules read in it."""
    found = RULES.extract(turn(text, role=role))
    facts = tuple(PriorFact(c.subject, c.attribute, c.value) for c in found if c.kind == "fact")
    return PriorTurn(text, role, facts)  # type: ignore[arg-type]


def read(c: Candidate) -> tuple[str, str, str]:
    return c.attribute, c.value, c.change


@pytest.mark.parametrize(
    ("before", "text", "expected"),
    [
        (("我的生日是5月3号。",), "不对，是6月3号。", [("birthday", "6月3号", "correct")]),
        (("我的生日是5月3号。",), "我记错了，是6月3号。", [("birthday", "6月3号", "correct")]),
        (("我的生日是5月3号。",), "应该是6月3号才对。", [("birthday", "6月3号", "correct")]),
        (("My birthday is May 3.",), "Actually it's June 3.", [("birthday", "June 3", "correct")]),
        (
            ("My birthday is May 3.",),
            "Actually it's June 3, not May 3.",
            [("birthday", "June 3", "correct")],
        ),
        (("My budget is 8000 yuan.",), "I meant 10,000.", [("budget", "10,000", "correct")]),
        (("My budget is 8000 yuan.",), "Make that $9000.", [("budget", "$9000", "correct")]),
        (("我的预算是8000元。",), "不对，预算应该是一万元。", [("budget", "一万元", "correct")]),
        (("我的预算是8000元。",), "说错了，两万五。", [("budget", "两万五", "correct")]),
        (("I live in Hangzhou.",), "No wait, Chengdu.", [("city", "Chengdu", "correct")]),
        (("我住在杭州。",), "不对，是成都。", [("city", "成都", "correct")]),
        (("I live in Hangzhou.",), "Not anymore.", [("city", "Hangzhou", "remove")]),
        (("我住在杭州。",), "现在不是了。", [("city", "杭州", "remove")]),
        (("I live in Hangzhou.",), "That changed.", [("city", "That changed.", "dispute")]),
        # The value fits the budget, stated before the city: the budget is corrected.
        (
            ("My budget is 8000 yuan.", "I live in Hangzhou."),
            "I meant 9000.",
            [("budget", "9000", "correct")],
        ),
        # Fits nothing just stated: no guess.
        (("My birthday is May 3.",), "Sorry, Hangzhou.", []),
        (("我的预算是8000元。",), "不对，是杭州。", []),
        # A question, and a hypothetical, correct nothing.
        (("My budget is 8000 yuan.",), "Actually, is it 10,000?", []),
        (("我住在杭州。",), "如果不对，是成都吗？", []),
        # A reply is no value, whatever was stated.
        (("I live in Hangzhou.",), "No, thanks.", []),
        (("I live in Hangzhou.",), "Actually it's fine.", []),
        (("I work as a teacher.",), "Sorry, never mind.", []),
        (("I live in Hangzhou.",), "no wait, let me think", []),
        (("我住在杭州。",), "不对，算了吧。", []),
        (("我住在杭州。",), "不是，没事了。", []),
        (("My budget is 8000 yuan.",), "Sorry, what was it?", []),
        # The same value said again is not a correction.
        (("I live in Hangzhou.",), "No, Hangzhou.", []),
        # A set takes items: a bare value does not say which one it replaces...
        (("I'm allergic to peanuts and shellfish.",), "Sorry, I meant sesame.", []),
        # ...unless the turn before gave just one: that item is swapped.
        (
            ("I'm allergic to peanuts.",),
            "Sorry, I meant shellfish.",
            [("allergies", "peanuts", "remove"), ("allergies", "shellfish", "state")],
        ),
        (
            ("我对花生过敏。",),
            "口误，是芝麻。",
            [("allergies", "花生", "remove"), ("allergies", "芝麻", "state")],
        ),
        # A slip named (口误, typo) and a spelling note ("with a y", 玛雅的雅) are cues
        # and no value; a dash ends a clause.
        (("我在腾讯上班。",), "口误，是字节。", [("employer", "字节", "correct")]),
        (("My budget is 8000 yuan.",), "Typo - 9000.", [("budget", "9000", "correct")]),
        (
            ("I work at Siemens.",),
            "Sorry, I meant Bosch - Siemens was my last job.",
            [("employer", "Siemens", "remove"), ("employer", "Bosch", "correct")],
        ),
    ],
)
def test_a_turn_is_read_with_the_turns_before_it(
    before: tuple[str, ...], text: str, expected: list[tuple[str, str, str]]
) -> None:
    found = RULES.extract(turn(text, *(said(b) for b in before)))
    assert [read(c) for c in found if c.kind == "fact"] == expected


@pytest.mark.parametrize(
    ("before", "text", "expected"),
    [
        (("I like hiking, chess and jazz.",), "My back is bad so hiking is out now.", ["hiking"]),
        (("I speak German and Spanish.",), "Sadly my German is gone.", ["German"]),
        (("I follow a paleo diet.",), "Quit paleo, too much meat.", ["paleo"]),
        (("我对花生和牛奶过敏。",), "牛奶现在可以喝了。", ["牛奶"]),
        (("我会说日语和法语。",), "法语早就忘光了。", ["法语"]),
        (("我不吃猪肉和羊肉。",), "最近又吃羊肉了。", ["羊肉"]),
        (("我有胃炎。",), "胃炎治好了。", ["胃炎"]),
        # The end is in the clause after the one naming the value.
        (("我喜欢下棋。",), "下棋太费脑子了，已经不下了。", ["下棋"]),
        # Not done, asked, someone else's, or a value the thread does not hold.
        (("I follow a paleo diet.",), "I haven't quit paleo.", []),
        (("I like hiking, chess and jazz.",), "Is hiking out for me with a bad knee?", []),
        (("I follow a paleo diet.",), "My brother quit paleo.", []),
        (("I like chess.",), "Hiking is out now.", []),
        # Eating it again ends only what is kept away from.
        (("我喜欢吃羊肉。",), "最近又吃羊肉了。", []),
    ],
)
def test_a_held_value_said_to_be_over_is_removed(
    before: tuple[str, ...], text: str, expected: list[str]
) -> None:
    found = RULES.extract(turn(text, *(said(b) for b in before)))
    assert [c.value for c in found if c.change == "remove"] == expected
    # What the turn ends it does not state again.
    gone = {c.value for c in found if c.change == "remove"}
    assert not [c for c in found if c.value in gone and c.change != "remove"]


@pytest.mark.parametrize(
    ("before", "text", "expected"),
    [
        (
            ("I follow a paleo diet.",),
            "Dropped paleo. Going pescatarian now.",
            [("diet", "paleo", "remove"), ("diet", "pescatarian", "correct")],
        ),
        (
            ("我在做生酮。",),
            "生酮我放弃了，改成地中海饮食。",  # the rules read the new value themselves
            [("diet", "地中海饮食", "state"), ("diet", "生酮", "remove")],
        ),
        (("我的预算是两万。",), "家里商量了，降到一万二。", [("budget", "一万二", "correct")]),
        (("I'm vegan.",), "Update: I'm back to vegetarian.", [("diet", "vegetarian", "correct")]),
        # A change of work said, then its value.
        (
            ("I'm a nurse.",),
            "Got promoted, I'm head nurse now!",
            [("job", "head nurse", "correct")],
        ),
        (
            ("我在腾讯上班。",),
            "我从腾讯离职了，去了京东。",
            [("employer", "腾讯", "remove"), ("employer", "京东", "correct")],
        ),
        # No change said: "I'm X now", 去了 say nothing of the slot.
        (("I'm a nurse.",), "I'm tired now.", []),
        (("我在腾讯上班。",), "我去了趟超市。", []),
        # Not done; and "going" with nothing ended says nothing of a slot.
        (("I follow a paleo diet.",), "I might switch to keto.", []),
        (("I follow a paleo diet.",), "I'm going shopping now.", []),
    ],
)
def test_a_change_verb_gives_the_held_slot_its_new_value(
    before: tuple[str, ...], text: str, expected: list[tuple[str, str, str]]
) -> None:
    found = RULES.extract(turn(text, *(said(b) for b in before)))
    slots = {e[0] for e in expected} or {"diet", "job", "employer"}
    assert [read(c) for c in found if c.kind == "fact" and c.attribute in slots] == expected


def test_a_correction_naming_its_attribute_is_read_alone() -> None:
    found = RULES.extract(turn("不对，预算应该是一万元。"))
    assert [read(c) for c in found] == [("budget", "一万元", "correct")]
    # Words after a label are no correction without the thread stating that attribute
    # (what the rules make of the sentence on their own is theirs).
    for text in ("Actually, my job is stressful.", "Actually, my birthday party is on June 3."):
        assert all(c.change != "correct" for c in RULES.extract(turn(text)))


def test_alone_the_same_turn_says_nothing() -> None:
    for text in ("不对，是6月3号。", "I meant 10,000.", "Not anymore.", "Me too!"):
        assert RULES.extract(turn(text)) == ()


def test_me_too_takes_the_other_speakers_statement() -> None:
    found = RULES.extract(turn("Me too!", said("I'm vegetarian.", role="assistant")))
    assert [read(c) for c in found] == [("diet", "vegetarian", "state")]
    found = RULES.extract(turn("我也是。", said("我住在杭州。", role="assistant")))
    assert [read(c) for c in found] == [("city", "杭州", "state")]
    # After the user's own statement, "me too" has nobody to agree with.
    assert RULES.extract(turn("Me too!", said("I'm vegetarian."))) == ()


def test_an_assistant_turn_is_not_read_in_the_thread() -> None:
    found = RULES.extract(turn("No wait, Chengdu.", said("I live in Hangzhou."), role="assistant"))
    assert found == ()


def test_a_turn_that_states_its_own_fact_is_read_as_the_rules_read_it() -> None:
    found = RULES.extract(
        turn("Sorry, I got that wrong: I live in Chengdu.", said("I live in Hangzhou."))
    )
    assert [read(c) for c in found] == [("city", "Chengdu", "correct")]


@pytest.mark.parametrize(
    ("text", "attributes"),
    [
        ("我搬家了。", ["city", "address"]),
        ("We moved last month.", ["city", "address"]),
        ("I changed jobs.", ["employer", "job"]),
        ("我换工作了。", ["employer", "job"]),
        ("I left Alibaba and joined ByteDance.", ["employer", "job"]),
        ("我的预算变了。", ["budget"]),
        ("My diet is different now.", ["diet"]),
        ("我还没搬家。", []),
        ("I might change jobs.", []),
        ("My brother moved.", []),
        ("他搬家了。", []),
        ("Should I move?", []),
        ("I moved to Chengdu.", []),  # a new value: the rules' (no candidates here)
        ("I left my umbrella at home.", []),
        ("That changed.", []),  # no topic: only in its thread
    ],
)
def test_change_cues_dispute_their_topic(text: str, attributes: list[str]) -> None:
    found = disputes(text, [])
    assert [c.attribute for c in found] == attributes
    assert all(c.change == "dispute" and c.kind == "fact" for c in found)


def test_a_change_the_rules_read_a_value_of_disputes_nothing() -> None:
    found = RULES.extract(turn("I moved to Chengdu."))
    assert [read(c) for c in found] == [("city", "Chengdu", "state")]
    assert with_disputes(turn("I moved to Chengdu."), found) == found
    # Not the user's turn: nothing.
    assert with_disputes(turn("我搬家了。", role="assistant"), ()) == ()


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("6月3号", "date"),
        ("June 3", "date"),
        ("3 March", "date"),
        ("Tuesday", "date"),
        ("周二", "date"),
        ("10,000", "amount"),
        ("一万元", "amount"),
        ("八千块", "amount"),
        ("两万五", "amount"),
        ("0.8万", "amount"),
        ("$500", "amount"),
        ("10k", "amount"),
        ("32", "number"),
        ("MU1234", "id"),
        ("Hangzhou", "words"),
        ("杭州", "words"),
        ("", "none"),
    ],
)
def test_shapes(value: str, kind: str) -> None:
    assert shape(value) == kind


@pytest.mark.parametrize(
    ("value_type", "value", "ok"),
    [
        ("date", "6月3号", True),
        ("date", "Hangzhou", False),
        ("amount", "10,000", True),
        ("amount", "9000", True),
        ("amount", "June 3", False),
        ("place", "Chengdu", True),
        ("place", "10,000", False),
        ("place", "fine", False),
        ("place", "thanks", False),
        ("place", "chengdu later", False),
        ("place", "好吧", False),
        ("place", "New York", True),
        ("job", "nurse", True),
        ("job", "fine", False),
        ("place", "6月3号", False),
        ("person", "Li Wei", True),
        ("person", "R2D2 unit", False),
        ("count", "3", True),
        ("count", "tea", False),
    ],
)
def test_fits(value_type: str, value: str, ok: bool) -> None:
    assert fits(value_type, value) is ok


def test_bad_previous_turns_are_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as caught:
        Turn("hi", "user", "t", "u", "s", "x", AT, previous=("not a turn",))  # type: ignore[arg-type]
    assert caught.value.field == "previous"
    many = tuple(PriorTurn("hi", "user") for _ in range(MAX_PREVIOUS_TURNS + 1))
    with pytest.raises(ValidationError) as caught:
        Turn("hi", "user", "t", "u", "s", "x", AT, previous=many)
    assert caught.value.field == "previous"
    with pytest.raises(ValidationError) as caught:
        PriorTurn("hi", "robot")  # type: ignore[arg-type]
    assert caught.value.field == "role"
    with pytest.raises(ValidationError) as caught:
        PriorFact("user", " city", "x")
    assert caught.value.field == "attribute"
