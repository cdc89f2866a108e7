"""Update turns read in their thread, through the engine as a user drives it (issue 32,
round 2): a held value said to be over leaves its slot ("my German is gone", "Quit
paleo", 法语早就忘光了), a bare correction right after a one-item set swaps that item
("Cashews, I mean."), and a new value lexically unlike the held one supersedes it even
when a short value's embedding sits above the near-duplicate cosine (邯郸 / 涪陵:
both out of MiniLM's vocabulary, cosine 1.0).
The old value stays in history every time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.write.facts import START, USER, Factory, current_value, history_values

from memstrata.clock import FakeClock
from memstrata.config import PipelineSettings

CASES = (
    (
        "en-gone",
        ("I speak German and Spanish.", "Sadly my German is gone."),
        "languages_spoken",
        "Spanish",
        "German",
    ),
    ("zh-forgot", ("我会说日语和法语。", "法语早就忘光了。"), "languages_spoken", "日语", "法语"),
    ("en-quit", ("I follow a paleo diet.", "Quit paleo, too much meat."), "diet", None, "paleo"),
    (
        "en-swap",
        ("I'm allergic to walnuts.", "Cashews, I mean."),
        "allergies",
        "Cashews",
        "walnuts",
    ),
    ("zh-moved", ("我住在邯郸。", "我已经搬到涪陵了。"), "city", "涪陵", "邯郸"),
)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_an_update_turn_changes_the_slot_and_keeps_the_old_value(
    engine_opener: Factory, case: tuple[str, tuple[str, ...], str, str | None, str]
) -> None:
    name, texts, attribute, now, old = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock, pipeline=PipelineSettings(worker_threads=1))
    tenant = f"up-{name}"
    state = engine.start_session(USER, "chat", tenant=tenant, session_id=f"s-{name}")
    for text in texts:
        assert engine.observe(state.session_id, "user", text).queued
        clock.advance(timedelta(minutes=1))
    engine.flush()
    assert current_value(engine, tenant, attribute) == now
    assert any(old in value for value in history_values(engine, tenant, attribute))
