"""Never-compress values: ids, amounts and dates are found and kept verbatim."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memstrata.extract import find_extras
from memstrata.extract.verbatim import resolve_date

EXTRAS_TABLE: list[tuple[str, tuple[tuple[str, str], ...]]] = [
    (
        "Refund ¥1,299.00 for order ORD-2024-000123 on 2025-03-24",
        (("amount", "¥1,299.00"), ("order_id", "ORD-2024-000123"), ("date", "2025-03-24")),
    ),
    ("we raised $3.5M last year", (("amount", "$3.5M"), ("date", "last year"))),
    (
        "花了300元，订单号 12345，3月24日",
        (("amount", "300元"), ("order_id", "12345"), ("date", "3月24日")),
    ),
    ("budget is 5k USD by March 3rd", (("amount", "5k USD"), ("date", "March 3rd"))),
    ("ticket #12345 yesterday", (("id", "#12345"), ("date", "yesterday"))),
    ("order #12345 please", (("order_id", "#12345"),)),
    ("我付了￥88，昨天下单的", (("amount", "￥88"), ("date", "昨天"))),
    ("order no. 98765 arrived on 3 March 2025", (("order_id", "98765"), ("date", "3 March 2025"))),
    ("2025年3月24日 我们转账 3万元", (("date", "2025年3月24日"), ("amount", "3万元"))),
    (
        "€20 on Friday, 下周五再付 100 美元",
        (("amount", "€20"), ("date", "Friday"), ("date", "下周五"), ("amount", "100 美元")),
    ),
    # version names and short codes are not ids
    ("GPT-4 and COVID-19 are not ids, INV-88812 is", (("id", "INV-88812"),)),
    ("no numbers here at all", ()),
    # the same pair twice is kept once
    ("ORD-1-2345 and again ORD-1-2345", (("id", "ORD-1-2345"),)),
]


@pytest.mark.parametrize(("text", "expected"), EXTRAS_TABLE, ids=[t[:30] for t, _ in EXTRAS_TABLE])
def test_extras_table(text: str, expected: tuple[tuple[str, str], ...]) -> None:
    found = find_extras(text)
    assert found == expected
    for _label, value in found:
        assert value in text  # verbatim: a substring of the original


OBSERVED = datetime(2025, 3, 25, 15, 45, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("yesterday", datetime(2025, 3, 24, tzinfo=UTC)),
        ("Today", datetime(2025, 3, 25, tzinfo=UTC)),
        ("前天", datetime(2025, 3, 23, tzinfo=UTC)),
        ("明天", datetime(2025, 3, 26, tzinfo=UTC)),
        ("2024-12-31", datetime(2024, 12, 31, tzinfo=UTC)),
        ("2024/1/5", datetime(2024, 1, 5, tzinfo=UTC)),
        ("3月1日", datetime(2025, 3, 1, tzinfo=UTC)),
        ("2023年3月1号", datetime(2023, 3, 1, tzinfo=UTC)),
        ("2025-02-30", None),
        ("March 3rd", None),
        ("next Friday", None),
    ],
)
def test_resolve_date(value: str, expected: datetime | None) -> None:
    assert resolve_date(value, OBSERVED) == expected


def test_resolve_date_keeps_the_turn_zone() -> None:
    shanghai = timezone(timedelta(hours=8))
    observed = datetime(2025, 3, 25, 1, 0, tzinfo=shanghai)
    assert resolve_date("昨天", observed) == datetime(2025, 3, 24, tzinfo=shanghai)
