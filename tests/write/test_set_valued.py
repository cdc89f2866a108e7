"""Languages and contact channels as sets that add and remove (issue 25, item 1), through
the engine as a user drives it: "I speak English and French" / 我会说中文和英语 give both
languages, "You can reach me by email or phone" both channels; "I don't speak French
anymore", "not French", 我不会说法语了, 把法语去掉, "don't call me by phone anymore",
"not by phone", 别打电话了, 不要用短信联系我 take one out (kept in history). Someone
else's languages and questions add and remove nothing. English and Chinese."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.write.facts import (
    START,
    USER,
    Factory,
    current_value,
    history_values,
    memory_of,
    remember_each,
)

from memstrata.clock import FakeClock
from memstrata.config import PipelineSettings

LANGUAGES = (
    ("en-dont", ("I speak English and French.", "I don't speak French anymore."), "English"),
    ("en-no-longer", ("I speak English and French.", "I no longer speak French."), "English"),
    ("en-not", ("I speak English and French.", "Not French."), "English"),
    ("zh-dont", ("我会说中文和法语。", "我不会说法语了。"), "中文"),
    ("zh-take-off", ("我会说中文和法语。", "把法语去掉。"), "中文"),
)


@pytest.mark.parametrize("case", LANGUAGES, ids=[c[0] for c in LANGUAGES])
def test_a_language_taken_back_leaves_the_set_and_stays_in_history(
    engine_opener: Factory, case: tuple[str, tuple[str, ...], str]
) -> None:
    name, texts, kept = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"ls-{name}"
    written = remember_each(engine, clock, texts, tenant)

    removed = "French" if name.startswith("en") else "法语"
    assert written[0][-1].value == f"{kept}; {removed}"  # both, one set
    assert [u.value for u in written[1]] == [kept]  # the removing episode's fact
    assert current_value(engine, tenant, "languages_spoken") == kept
    assert any(removed in value for value in history_values(engine, tenant, "languages_spoken"))
    question = "What languages do I speak?" if name.startswith("en") else "我会说什么语言？"
    facts = engine.retrieve(question, tenant=tenant, user=USER).current_facts()
    assert [f.text for f in facts if "languages_spoken" in f.text] == [
        f"user languages_spoken: {kept}"
    ]
    # The reply language is another attribute, untouched.
    assert current_value(engine, tenant, "language") is None


def test_languages_add_up_and_a_correction_replaces_the_wrong_one(
    engine_opener: Factory,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "ls-add"
    remember_each(
        engine,
        clock,
        ("I speak English and French.", "I also speak Spanish.", "I'm fluent in German."),
        tenant,
    )
    assert current_value(engine, tenant, "languages_spoken") == "English; French; Spanish; German"
    remember_each(engine, clock, ("Sorry, I got that wrong: I speak Italian, not French.",), tenant)
    # The correction names the wrong value: that one is swapped, the rest stay.
    assert current_value(engine, tenant, "languages_spoken") == "English; Spanish; German; Italian"
    remember_each(engine, clock, ("我会说中文和英语。", "我还会说一点日语。"), "ls-zh")
    assert current_value(engine, "ls-zh", "languages_spoken") == "中文; 英语; 日语"


@pytest.mark.parametrize(
    "text",
    [
        "My wife speaks French.",
        "Do you speak French?",
        "I don't know if my son speaks French.",
        "我老婆会说法语。",
        "你会说法语吗？",
    ],
)
def test_someone_elses_languages_and_questions_change_nothing(
    engine_opener: Factory, text: str
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "ls-hostile"
    seed = "我会说中文和法语。" if not text.isascii() else "I speak English and French."
    remember_each(engine, clock, (seed,), tenant)
    before = current_value(engine, tenant, "languages_spoken")
    written = remember_each(engine, clock, (text,), tenant)
    assert current_value(engine, tenant, "languages_spoken") == before
    assert not any(u.attribute == "languages_spoken" for u in written[0])


CHANNELS = (
    ("en-dont-call", ("You can reach me by email or phone.", "Don't call me by phone anymore.")),
    ("en-not-by", ("You can reach me by email or phone.", "Email is fine, not by phone.")),
    ("zh-dont-call", ("可以用邮件或者电话联系我。", "别打电话了。")),
)


@pytest.mark.parametrize(
    "text",
    [
        "You never call me.",
        "She said don't call me by phone.",
        "Can you reach me by email or phone?",
        "他不想用电话联系我。",
        "我妈说别打电话了。",
    ],
)
def test_someone_elses_channels_and_questions_change_nothing(
    engine_opener: Factory, text: str
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "cc-hostile"
    seed = (
        "可以用邮件或者电话联系我。"
        if not text.isascii()
        else "You can reach me by email or phone."
    )
    remember_each(engine, clock, (seed,), tenant)
    before = (
        current_value(engine, tenant, "contact_channels"),
        current_value(engine, tenant, "contact_channel"),
    )
    remember_each(engine, clock, (text,), tenant)
    after = (
        current_value(engine, tenant, "contact_channels"),
        current_value(engine, tenant, "contact_channel"),
    )
    assert after == before == ("email; phone", before[1])


@pytest.mark.parametrize("case", CHANNELS, ids=[c[0] for c in CHANNELS])
def test_contact_channels_hold_both_and_lose_the_one_taken_back(
    engine_opener: Factory, case: tuple[str, tuple[str, ...]]
) -> None:
    name, texts = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"cc-{name}"
    remember_each(engine, clock, texts[:1], tenant)
    assert current_value(engine, tenant, "contact_channels") == "email; phone"
    remember_each(engine, clock, texts[1:], tenant)
    assert current_value(engine, tenant, "contact_channels") == "email"
    history = history_values(engine, tenant, "contact_channels")
    assert history[-2:] == ["email; phone", "email"]  # the old set is kept in history
    facts = engine.retrieve("How should you contact me?", tenant=tenant, user=USER)
    texts_now = [f.text for f in facts.current_facts() if "contact_channels" in f.text]
    assert texts_now == ["user contact_channels: email"]


def test_a_removed_channel_also_stops_being_the_preferred_one(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "cc-pref"
    remember_each(engine, clock, ("以后用短信联系我。",), tenant)
    assert current_value(engine, tenant, "contact_channel") == "sms"
    remember_each(engine, clock, ("不要用短信联系我。",), tenant)
    assert current_value(engine, tenant, "contact_channel") is None
    assert history_values(engine, tenant, "contact_channel") == ["sms"]
    # A removal of a channel not held changes nothing.
    remember_each(engine, clock, ("Please contact me by email.", "Don't text me anymore."), tenant)
    assert current_value(engine, tenant, "contact_channel") == "email"


def test_observed_in_a_session_the_channel_removal_applies(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock, pipeline=PipelineSettings(worker_threads=1))
    state = engine.start_session(USER, "chat", tenant="cc-obs", session_id="s1")
    for text in ("You can reach me by email or phone.", "Not by phone, please."):
        assert engine.observe(state.session_id, "user", text).queued
        clock.advance(timedelta(minutes=1))
    engine.flush()
    assert current_value(engine, "cc-obs", "contact_channels") == "email"


@pytest.mark.parametrize(
    ("lang", "text", "question", "reply", "kept"),
    [
        (
            "en",
            "I speak English and French.",
            "What languages do I speak?",
            "You speak French.",
            "English",
        ),
        ("zh", "我会说中文和法语。", "我会说什么语言？", "你会说法语。", "中文"),
    ],
)
def test_feedback_naming_a_language_wrong_removes_only_that_one(
    engine_opener: Factory, lang: str, text: str, question: str, reply: str, kept: str
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"ls-fb-{lang}"
    remember_each(engine, clock, (text,), tenant)
    wrong = memory_of(engine).active_fact(tenant, USER, "user", "languages_spoken")
    assert wrong is not None
    engine.start_session(USER, question, tenant=tenant, session_id="q1")
    decision = engine.decide("q1", engine.route("q1", "respond", question), question=question)
    engine.check_reply(decision.card_id, reply, tenant=tenant)
    engine.feedback(
        decision.card_id,
        "corrected",
        tenant=tenant,
        correction="That's not right." if lang == "en" else "不对。",
        wrong=[wrong.id or ""],
    )
    engine.flush()
    assert current_value(engine, tenant, "languages_spoken") == kept
    assert wrong.value in history_values(engine, tenant, "languages_spoken")
