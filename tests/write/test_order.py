"""UserOrder alone (memstrata.write.order): a later batch holding a user waits for the
earlier one holding it; other users' entries go at once; a stop ends a wait."""

from __future__ import annotations

import threading
import time

from memstrata.write.order import UserOrder, user_key


def test_a_users_later_batch_waits_for_the_earlier_one_and_others_do_not() -> None:
    order = UserOrder()
    stop = threading.Event()
    _, first = order.admit(lambda: [("t", "a"), ("t", "b")], lambda r: r)
    _, second = order.admit(lambda: [("t", "a"), ("t", "c")], lambda r: r)
    assert first.number < second.number
    # c is free at once; a waits for the first batch.
    assert order.wait_turn(second, {("t", "a"), ("t", "c")}, stop) == {("t", "c")}
    order.release(second, {("t", "c")})
    waited: list[frozenset[tuple[str, str]]] = []
    waiter = threading.Thread(
        target=lambda: waited.append(order.wait_turn(second, {("t", "a")}, stop))
    )
    waiter.start()
    time.sleep(0.1)
    assert waited == []  # still held by the first batch
    order.release(first, first.users)
    waiter.join(5)
    assert waited == [frozenset({("t", "a")})]
    order.release(second, second.users)
    assert order.held() == 0


def test_a_stop_ends_a_wait_and_the_user_key_comes_from_the_payload() -> None:
    order = UserOrder()
    stop = threading.Event()
    _, first = order.admit(lambda: [("t", "a")], lambda r: r)
    _, second = order.admit(lambda: [("t", "a")], lambda r: r)
    stop.set()
    assert order.wait_turn(second, {("t", "a")}, stop) == frozenset()
    assert user_key({"payload": '{"tenant": "t", "user": "a", "text": "x"}'}) == ("t", "a")
    assert user_key({"payload": "not json"}) is None
    assert user_key({"payload": '{"tenant": "t"}'}) is None
    order.release(first, first.users)
    order.release(second, second.users)
    assert order.held() == 0
