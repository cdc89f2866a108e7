"""The reply check's rules on text (``consistency.text_conflicts``): agreement written
another way, a held value beside others in one clause, ids of another shape, and
garbage or oversized input, which is judged without an error."""

from __future__ import annotations

import random

import pytest

from memstrata.cer import StepOutcome, cer, cer_summary
from memstrata.decision.consistency import text_conflicts


@pytest.mark.parametrize(
    ("memories", "reply"),
    [
        (["user budget: 5000元"], "Your budget is 5,000 yuan."),
        (["我的年薪是30万。"], "你的年薪是300000元。"),
        (["The discount is 15%."], "VAT of 19% is added after your 15% discount."),
        (["My order number is A1234.", "My other order is B7777."], "Order B7777 shipped."),
        (["I don't eat pork."], "You don't eat pork, so I picked chicken."),
        (["我不吃猪肉。"], "你不吃猪肉，所以我点了鸡肉。"),
        (["I'm allergic to peanuts."], "You can eat anything except peanuts."),
        (["I'm allergic to peanuts."], "You're not allergic to shellfish, so the shrimp is fine."),
        (["user city: Shanghai"], "你住在上海浦东。"),  # the same city in another script
        (["user city: Shanghai"], "你住在石家庄。"),  # a city the glossary lacks: not judged
        (["user budget: 5000 yuan"], "You haven't told me your budget yet."),
        (["我的预算是5000元。"], "你没告诉我你的预算。"),
        (["rms_baseline_mm_s: 2.12"], "RMS 2.2 mm/s at 08:05:10Z against 2.12 mm/s baseline [3]."),
    ],
)
def test_agreement_is_not_a_conflict(memories: list[str], reply: str) -> None:
    assert text_conflicts(reply, memories) == ()


@pytest.mark.parametrize(
    ("memories", "reply", "names"),
    [
        (["total: 120"], "The total is 150 yuan.", "total as 150"),
        (["我的房租是3000元。"], "你的房租是3,500元。", "3,500元"),
        (["user birthday: May 3"], "Your birthday is on 3 June.", "3 June"),
        (["The support ticket is #5521."], "Your ticket #5512 is still open.", "#5512"),
        (["user diet: vegetarian"], "You're not vegetarian, so try the steak.", "vegetarian"),
        (["我讨厌香菜。"], "你喜欢香菜，我给你多加了一点。", "香菜"),
        (["user city: Shanghai"], "你住在北京。", "Shanghai"),  # across scripts (issue 32)
    ],
)
def test_a_conflict_names_what_the_reply_gave(memories: list[str], reply: str, names: str) -> None:
    found = text_conflicts(reply, memories)
    assert found and names in found[0], found


def test_garbage_and_long_input_is_judged_without_an_error() -> None:
    pieces = [
        *"0123456789.,;:!?$¥%-#_[]()/你我不没有过敏元块万千百零两五月日号年 aZk",
        "May ",
        "you ",
        "don't ",
        "allergic to ",
        "are fine",
        " yuan",
        "2026-05-03",
        "A1234",
        "MU 1234",
        "两万五",
        "三月五号",
        "peanut-free ",
        "海鲜",
    ]
    rng = random.Random(25)
    for _ in range(300):
        reply = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        memories = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))]
        assert isinstance(text_conflicts(reply, memories), tuple)
    many = "Your budget is " + "1 yuan, " * 2400
    assert text_conflicts(many, ["user budget: 5000 yuan"])


def test_a_step_whose_output_contradicts_its_context_is_not_effective() -> None:
    steps = [StepOutcome(True, True, "agrees"), StepOutcome(True, True, "conflict", False)]
    assert [s.effective for s in steps] == [True, False]
    assert cer(steps) == 0.5 and cer_summary(steps)["used_rate"] == 1.0
