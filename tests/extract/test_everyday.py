"""Everyday phrasings of the attributes users state most (issue 24): home and delivery
addresses (收货地址 gave no fact before), a home said without "I live in", the
language to answer in, schedules; someone else's address and a joke give nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstrata.extract import RuleExtractor
from memstrata.extract.candidates import Turn

AT = datetime(2025, 3, 25, 10, 30, tzinfo=UTC)


def facts(text: str) -> set[tuple[str, str]]:
    turn = Turn(text, "user", "t1", "u1", "s1", "turn-1", AT)
    return {(c.attribute, c.value) for c in RuleExtractor().extract(turn) if c.kind == "fact"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "我的收货地址是北京市海淀区中关村大街1号。",
            ("delivery_address", "北京市海淀区中关村大街1号"),
        ),
        (
            "收货地址换成上海市徐汇区漕溪北路88号。",
            ("delivery_address", "上海市徐汇区漕溪北路88号"),
        ),
        (
            "以后送货地址改为杭州市滨江区江南大道200号",
            ("delivery_address", "杭州市滨江区江南大道200号"),
        ),
        ("快递寄到南京市江宁区天元路8号吧。", ("delivery_address", "南京市江宁区天元路8号")),
        (
            "My shipping address is 12 Oak Lane, Springfield.",
            ("delivery_address", "12 Oak Lane, Springfield"),
        ),
        ("Please ship to 88 Pine Street instead.", ("delivery_address", "88 Pine Street")),
        ("我家地址是北京市朝阳区建国路88号。", ("address", "北京市朝阳区建国路88号")),
        ("We live at 12 Birch Close.", ("address", "12 Birch Close")),
        ("I've been living in Denver for years.", ("city", "Denver")),
        ("Denver has been home for most of my life.", ("city", "Denver")),
        ("Just got the keys to our new apartment in Austin!", ("city", "Austin")),
        ("我家在成都，住了快十年了。", ("city", "成都")),
        ("目前人在广州。", ("city", "广州")),
        ("Please respond in German.", ("language", "German")),
        ("以后请用中文跟我沟通。", ("language", "中文")),
        ("I work the night shift.", ("schedule", "night shift")),
        ("我只有周末有空。", ("schedule", "周末")),
        ("I'm allergic to 芒果.", ("allergies", "芒果")),
    ],
)
def test_an_everyday_phrasing_yields_its_fact(text: str, expected: tuple[str, str]) -> None:
    assert expected in facts(text)


@pytest.mark.parametrize(
    "text",
    [
        "我妈的收货地址是南京市玄武区北京东路2号。",
        "My cousin's shipping address is 5 Oak Street.",
        "帮我查一下我的收货地址是什么？",
        "I'm allergic to homework, lol.",
        "我对加班过敏，哈哈。",
        "我住在浦东新区世纪大道100号。",  # an address, never a city
    ],
)
def test_what_is_no_fact_of_the_user_stays_out(text: str) -> None:
    found = facts(text)
    assert not any(attribute in ("delivery_address", "allergies", "city") for attribute, _ in found)
