"""The worth-remembering filter: small talk, pure questions and repeats are dropped."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.extract import Candidate, Turn, WorthFilter

MakeTurn = Callable[..., Turn]
OBSERVED_AT = datetime(2025, 3, 25, 10, 30, tzinfo=UTC)  # make_turn's default time

FILTER_TABLE: list[tuple[str, str | None]] = [
    # dropped, with the reason
    ("ok", "acknowledgement"),
    ("OK!!", "acknowledgement"),
    ("got it", "acknowledgement"),
    ("Sounds good, got it.", "acknowledgement"),
    ("好的", "acknowledgement"),
    ("嗯", "acknowledgement"),
    ("嗯嗯，收到", "acknowledgement"),
    ("哈哈哈", "acknowledgement"),
    ("thanks!", "thanks"),
    ("Thank you so much!!", "thanks"),
    ("ok thanks", "thanks"),
    ("谢谢", "thanks"),
    ("好的，谢谢你", "thanks"),
    ("Hi there!", "greeting"),
    ("Good morning", "greeting"),
    ("你好", "greeting"),
    ("晚安", "greeting"),
    ("Thanks, that's all for today.", "closing"),
    ("Take care, bye!", "closing"),
    ("谢谢，今天就到这里吧。", "closing"),
    ("好的，明天再聊。", "closing"),
    ("👍 ...", "empty"),
    ("What time is it?", "question"),
    ("Can you help me?", "question"),
    ("今天天气怎么样", "question"),
    ("你好吗？", "question"),
    ("What's on today?", "question"),
    ("what time is it", "question"),
    ("Do it now.", None),
    # kept
    ("Hi, I live in Hangzhou", None),
    ("I live in Hangzhou, any tips?", None),
    ("Where is my order ORD-2024-000123?", None),
    ("Can I get a refund of ¥1,299.00?", None),
    ("我搬到成都了", None),
    ("history of Rome", None),
    ("Okay, let's go with the blue plan.", None),
    ("I decided to cancel.", None),
    ("Thanks! Also my budget is 5000", None),
    ("谢谢，我对花生过敏。", None),
]


@pytest.mark.parametrize(("text", "reason"), FILTER_TABLE, ids=[t for t, _ in FILTER_TABLE])
def test_filter_table(make_turn: MakeTurn, text: str, reason: str | None) -> None:
    verdict = WorthFilter().worth_remembering(make_turn(text))
    assert bool(verdict) is (reason is None)
    assert verdict.keep is (reason is None)
    assert verdict.reason == reason


def test_system_turns_are_not_memories(make_turn: MakeTurn) -> None:
    verdict = WorthFilter().worth_remembering(make_turn("You are a helpful agent.", "system"))
    assert (verdict.keep, verdict.reason) == (False, "system")


def test_repeat_of_same_normalized_text_is_dropped(make_turn: MakeTurn) -> None:
    worth = WorthFilter()
    assert worth.worth_remembering(make_turn("I live in Hangzhou."))
    again = worth.worth_remembering(make_turn("  i LIVE in   hangzhou!! "))
    assert (again.keep, again.reason) == (False, "repeat")
    # another user saying it is not a repeat, nor another tenant
    assert worth.worth_remembering(make_turn("I live in Hangzhou.", user="u2"))
    assert worth.worth_remembering(make_turn("I live in Hangzhou.", tenant="t2"))
    # dropped small talk is not remembered, so it never makes a later turn a repeat
    assert not worth.worth_remembering(make_turn("ok"))
    assert worth.worth_remembering(make_turn("I moved to Chengdu."))


def test_repeat_window_uses_turn_time(make_turn: MakeTurn) -> None:
    worth = WorthFilter(repeat_window=timedelta(days=1))
    assert worth.worth_remembering(make_turn("I like tea."))
    later = OBSERVED_AT + timedelta(hours=23)
    assert not worth.worth_remembering(make_turn("I like tea.", observed_at=later))
    much_later = OBSERVED_AT + timedelta(days=2)
    assert worth.worth_remembering(make_turn("I like tea.", observed_at=much_later))


def test_lru_is_bounded_per_user(make_turn: MakeTurn) -> None:
    worth = WorthFilter(max_per_user=2, repeat_window=None)
    for text in ("I like tea.", "I like jazz.", "I like cats."):
        assert worth.worth_remembering(make_turn(text))
    # room for two: "tea" (the oldest) was forgotten, "cats" is still known
    assert worth.worth_remembering(make_turn("I like tea."))
    assert not worth.worth_remembering(make_turn("I like cats."))


def test_lru_is_bounded_in_users(make_turn: MakeTurn) -> None:
    worth = WorthFilter(max_users=2, repeat_window=None)
    assert worth.worth_remembering(make_turn("I like tea.", user="u1"))
    assert worth.worth_remembering(make_turn("I like tea.", user="u2"))
    assert not worth.worth_remembering(make_turn("I like tea.", user="u1"))  # u1 seen last
    assert worth.worth_remembering(make_turn("I like tea.", user="u3"))  # evicts u2
    assert not worth.worth_remembering(make_turn("I like tea.", user="u1"))
    assert worth.worth_remembering(make_turn("I like tea.", user="u2"))  # u2 was forgotten


def test_probe_is_injected(make_turn: MakeTurn) -> None:
    class Everything:
        def extract(self, turn: Turn) -> tuple[Candidate, ...]:
            return (Candidate("user", "asked", turn.text, "event", 0.5, 0.1),)

    assert not WorthFilter().worth_remembering(make_turn("What time is it?"))
    assert WorthFilter(probe=Everything()).worth_remembering(make_turn("What time is it?"))


def test_concurrent_repeats_keep_exactly_one(make_turn: MakeTurn) -> None:
    worth = WorthFilter()
    turn = make_turn("We will ship the release on 2025-03-24.")
    results: list[bool] = []
    lock = threading.Lock()

    def check() -> None:
        verdict = worth.worth_remembering(turn)
        with lock:
            results.append(verdict.keep)

    threads = [threading.Thread(target=check) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_per_user"):
        WorthFilter(max_per_user=0)
    with pytest.raises(ValueError, match="repeat_window"):
        WorthFilter(repeat_window=timedelta(0))
