"""The feedback loop (seed 003 §4.3) through the engine, against the real Valkey and
Qdrant engine: confirmed memories climb, corrected ones stop being current and the
correction becomes the current fact, sourced from its feedback event."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata import ContextEngine
from memstrata.bench.feedback import CONFIRMATIONS, CORRECTIONS, USER, run_script
from memstrata.bench.feedback import TENANT as BENCH_TENANT
from memstrata.clock import FakeClock
from memstrata.errors import NotFoundError, ValidationError
from memstrata.feedback.events import (
    FEEDBACK_SESSION,
    KIND_FEEDBACK,
    FeedbackEvent,
    FeedbackRecord,
    FeedbackSteps,
    done_key,
    feedback_plan,
    stream_key,
)
from memstrata.feedback.report import build_feedback_report
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.memory.store import stepped_importance
from memstrata.testing.disk import valkey_entries
from memstrata.write.entries import QueueEntry, content_hash

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
SECRETS = {
    "api_key": "sk_live_51Habc123def456ghi789",
    "email": "li.wei@example.com",
    "cn_mobile": "13812345678",
}
MARKER = "harmless-marker-7f3a"


def _say(engine: ContextEngine, clock: FakeClock, texts: list[str], *, tenant: str) -> None:
    """Each text in a session of its own, an hour apart."""
    for n, text in enumerate(texts):
        sid = f"m-{tenant}-{n}"
        engine.start_session("u1", "chat", tenant=tenant, session_id=sid)
        engine.observe(sid, "user", text)
        clock.advance(timedelta(hours=1))
    engine.flush()


def _step(engine: ContextEngine, sid: str, question: str, *, tenant: str, reply: str) -> str:
    engine.start_session("u1", question, tenant=tenant, session_id=sid)
    decision = engine.decide(sid, engine.route(sid, "respond", question), question=question)
    engine.check_reply(decision.card_id, reply, tenant=tenant)
    return decision.card_id


def _importance(engine: ContextEngine, tenant: str, ids: list[str]) -> dict[str, float | None]:
    return {
        r.id: r.payload.get("importance")
        for r in engine.parts.longterm.get(MEMORIES, ids, tenant=tenant)
    }


# --- acceptance: the scripted users -----------------------------------------------------


def test_confirmed_memories_climb_and_corrected_ones_stop_being_current(
    engine_opener: Factory,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    result = run_script(engine, clock, rounds=2)

    # Confirmed memories: mean rank strictly better, none worse.
    assert result.after.mean_rank < result.before.mean_rank
    assert all(a <= b for a, b in zip(result.after.ranks, result.before.ranks, strict=True))
    assert result.after.top1_rate > result.before.top1_rate
    assert result.events == 2 * len(CONFIRMATIONS) + len(CORRECTIONS)

    # Corrected facts: current before, not after; each correction's fact took over.
    assert result.before.still_current == len(CORRECTIONS)
    assert result.after.still_current == 0
    assert all(result.corrections_active)
    store = engine.parts.memory
    assert store is not None
    hangzhou = store.find(BENCH_TENANT, USER, types=("history",), value="Hangzhou")
    assert len(hangzhou) == 1 and not hangzhou[0].active
    city = store.active_fact(BENCH_TENANT, USER, "user", "city")
    assert city is not None and city.value == "Chengdu"
    assert city.source.session_id == FEEDBACK_SESSION and city.source.turn_id in result.event_ids
    assert city.source.label == f"turn:feedback/{city.source.turn_id}"
    assert hangzhou[0].superseded_by == city.id
    # The allergy correction names no new fact: the wrong one was closed by id.
    peanuts = store.find(BENCH_TENANT, USER, value="peanuts")
    assert peanuts and not any(u.active for u in peanuts)
    raw = engine.parts.longterm.get(MEMORIES, [peanuts[0].id or ""], tenant=BENCH_TENANT)
    assert raw[0].payload["invalidated"] is True

    # Neither retrieve nor route serves the corrected facts as current any more.
    wrong_ids = {hangzhou[0].id, peanuts[0].id}
    for n, question in enumerate(("where do I live", "what am I allergic to")):
        current = engine.retrieve(question, tenant=BENCH_TENANT, user=USER).current_facts()
        assert not wrong_ids & {f.id for f in current}
        engine.start_session(USER, question, tenant=BENCH_TENANT, session_id=f"after{n}")
        bundle = engine.route(f"after{n}", "respond", question)
        facts = [i for i in bundle.layer("L3") if i.content.get("type") == "fact"]
        assert not wrong_ids & {i.provenance.ref for i in facts}
    live = engine.retrieve("where do I live", tenant=BENCH_TENANT, user=USER).current_facts()
    assert city.id in {f.id for f in live}
    counted = {
        sample["labels"]["kind"]: sample["value"]
        for sample in engine.metrics()["memstrata_feedback_total"]
    }
    assert counted == {"confirmed": 2 * len(CONFIRMATIONS), "corrected": len(CORRECTIONS)}


def test_importance_moves_by_the_outcome(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    _say(
        engine,
        clock,
        [
            "In the afternoon I drink a black coffee.",
            "I usually drink green tea in the morning.",
            "I listen to jazz while I work.",
        ],
        tenant="acme",
    )
    reply = "In the afternoon you drink a black coffee."
    card_id = _step(engine, "q1", "what do I drink after lunch", tenant="acme", reply=reply)
    card = engine.trace_card(card_id, tenant="acme")
    retrieved = [*card.memory_ids, *card.episode_ids]
    before = _importance(engine, "acme", retrieved)

    receipt = engine.feedback(card_id, "confirmed", tenant="acme")
    # Used: what the checked reply reflects, per item (the coffee fact and episode).
    assert receipt.used_by == "reply" and receipt.queued
    texts = {
        r.id: str(r.payload["text"])
        for r in engine.parts.longterm.get(MEMORIES, retrieved, tenant="acme")
    }
    assert receipt.used and all("coffee" in texts[i] for i in receipt.used)
    assert receipt.ignored and all("coffee" not in texts[i] for i in receipt.ignored)
    engine.flush()
    after = _importance(engine, "acme", retrieved)
    steps = FeedbackSteps()
    for point_id in receipt.used:
        assert after[point_id] == pytest.approx(
            stepped_importance(before[point_id] or 0.5, steps.confirm)
        )
    for point_id in receipt.ignored:
        assert after[point_id] == pytest.approx(
            stepped_importance(before[point_id] or 0.5, -steps.ignored)
        )

    # Abandoned, then rated 2: the used memories go down; a 3 changes nothing.
    used = list(receipt.used)
    for kind, rating, step in (
        ("abandoned", None, -steps.abandon),
        ("rating", 2, -steps.correct),
        ("rating", 3, 0.0),
        ("rating", 5, steps.confirm),
    ):
        current = _importance(engine, "acme", used)
        clock.advance(timedelta(minutes=1))
        engine.feedback(card_id, kind, tenant="acme", rating=rating, used=used)
        engine.flush()
        moved = _importance(engine, "acme", used)
        for point_id in used:
            assert moved[point_id] == pytest.approx(
                stepped_importance(current[point_id] or 0.5, step)
            ), (kind, rating)

    # No reply checked: every fact and event of the card counts as used, none ignored.
    bare = engine.decide("q1", engine.route("q1", "respond", "what do I drink after lunch"))
    blind = engine.feedback(bare.card_id, "confirmed", tenant="acme")
    assert blind.used_by == "card" and blind.ignored == ()
    assert set(blind.used) == set(engine.trace_card(bare.card_id, tenant="acme").memory_ids)


def test_a_replayed_event_is_applied_once(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    _say(engine, clock, ["I live in Hangzhou."], tenant="acme")
    card_id = _step(engine, "q1", "where do I live", tenant="acme", reply="You live in Hangzhou.")
    receipt = engine.feedback(card_id, "confirmed", tenant="acme")
    engine.flush()
    once = _importance(engine, "acme", list(receipt.used))
    # The queue's own dedupe aside, the handler refuses an event it already applied.
    card = engine.trace_card(card_id, tenant="acme")
    event = FeedbackEvent(
        id=receipt.event_id,
        tenant="acme",
        card_id=card_id,
        session_id=card.session_id,
        kind="confirmed",
        at=clock.now().timestamp(),
        intent=card.intent,
        route=card.route,
        user="u1",
        memory_ids=card.memory_ids,
        episode_ids=card.episode_ids,
        used=receipt.used,
        used_by="reply",
    )
    payload = event.as_payload()
    entry = QueueEntry("1-0", KIND_FEEDBACK, payload, content_hash(KIND_FEEDBACK, payload), 1)
    engine.parts.pipeline.handler([entry])  # type: ignore[union-attr]
    assert _importance(engine, "acme", list(receipt.used)) == once
    client = engine.parts.memory.redis  # type: ignore[union-attr]
    assert client.xlen(stream_key("acme")) == 1

    # A worker that died after the importance writes, before it recorded the event:
    # no marker, no stream record. The redelivered event moves no memory again.
    moved = [*receipt.used, *receipt.ignored]
    assert any(i in card.episode_ids for i in moved) and any(i in card.memory_ids for i in moved)
    applied = _importance(engine, "acme", moved)
    client.delete(done_key("acme", receipt.event_id))
    client.delete(stream_key("acme"))
    engine.parts.pipeline.handler([entry])  # type: ignore[union-attr]
    assert _importance(engine, "acme", moved) == applied
    assert client.xlen(stream_key("acme")) == 1
    # A new event still moves them.
    engine.feedback(card_id, "confirmed", tenant="acme")
    engine.flush()
    again = _importance(engine, "acme", list(receipt.used))
    assert all(again[i] > once[i] for i in receipt.used)  # type: ignore[operator]


# --- input ---------------------------------------------------------------------------------


def test_bad_feedback_is_refused_by_name(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    _say(engine, clock, ["I live in Hangzhou."], tenant="acme")
    card_id = _step(engine, "q1", "where do I live", tenant="acme", reply="You live in Hangzhou.")
    card = engine.trace_card(card_id, tenant="acme")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("kind", {"kind": "liked"}),
        ("kind", {"kind": None}),
        ("rating", {"kind": "rating"}),
        ("rating", {"kind": "rating", "rating": 6}),
        ("rating", {"kind": "rating", "rating": 0}),
        ("rating", {"kind": "rating", "rating": True}),
        ("rating", {"kind": "rating", "rating": 4.5}),
        ("rating", {"kind": "confirmed", "rating": 5}),
        ("correction", {"kind": "corrected"}),
        ("correction", {"kind": "corrected", "correction": "   "}),
        ("correction", {"kind": "corrected", "correction": "x" * 5000}),
        ("correction", {"kind": "confirmed", "correction": "I live in Chengdu."}),
        ("used", {"kind": "confirmed", "used": ["not-on-the-card"]}),
        ("used", {"kind": "confirmed", "used": "abc"}),
        ("used[0]", {"kind": "confirmed", "used": ["bad id!"]}),
        ("wrong", {"kind": "confirmed", "wrong": list(card.memory_ids)}),
        ("wrong", {"kind": "corrected", "correction": "Chengdu.", "wrong": card.episode_ids}),
        ("tenant", {"kind": "confirmed", "tenant": "no tenant"}),
    ]
    for field, arguments in cases:
        arguments = {"tenant": "acme", **arguments}
        kind = arguments.pop("kind")
        with pytest.raises(ValidationError) as raised:
            engine.feedback(card_id, kind, **arguments)
        assert raised.value.field == field, (field, arguments)
    with pytest.raises(NotFoundError):
        engine.feedback(card_id, "confirmed", tenant="globex")  # another tenant's card
    with pytest.raises(NotFoundError):
        engine.feedback("f" * 32, "confirmed", tenant="acme")
    with pytest.raises(ValidationError) as raised:
        engine.feedback_report(tenant="acme", since=datetime(2025, 1, 1))  # naive
    assert raised.value.field == "since"
    assert engine.write_stats().handler.feedback_events == 0
    assert "memstrata_feedback_total" not in engine.metrics()  # nothing counted


def test_a_secret_in_a_correction_never_reaches_valkey_or_qdrant(
    engine_opener: Factory, tmp_path: Path
) -> None:
    clock = FakeClock(START)
    data = tmp_path / "data"
    engine = engine_opener(data_dir=data, clock=clock)
    _say(engine, clock, ["I live in Hangzhou."], tenant="acme")
    card_id = _step(engine, "q1", "where do I live", tenant="acme", reply="You live in Hangzhou.")
    secrets = " ".join(SECRETS.values())
    correction = f"No, I live in Chengdu. {MARKER} call me on {secrets}"
    engine.feedback(card_id, "corrected", tenant="acme", correction=correction)
    engine.flush()

    client = engine.parts.memory.redis  # type: ignore[union-attr]
    valkey = "\n".join(f"{k} {v}" for k, v in valkey_entries(client).items())
    payloads = "\n".join(
        json.dumps(dict(r.payload), default=str)
        for r in engine.parts.longterm.iter_records(MEMORIES, Filter(tenant="acme"))
    )
    store = engine.parts.memory
    assert store is not None
    city = store.active_fact("acme", "u1", "user", "city")
    engine.close()
    on_disk = "\n".join(
        p.read_bytes().decode("utf-8", errors="replace") for p in data.rglob("*") if p.is_file()
    )
    for where, blob in {"valkey": valkey, "qdrant": payloads, "disk": on_disk}.items():
        assert MARKER in blob, f"the scan of {where} is blind"
        for name, secret in SECRETS.items():
            assert secret not in blob, f"{name} reached {where}"
    assert city is not None and city.value == "Chengdu"


# --- the report --------------------------------------------------------------------------


def test_the_report_names_the_missing_intents_and_the_ignored_memories(
    engine_opener: Factory, tmp_path: Path
) -> None:
    clock = FakeClock(datetime.now(UTC) - timedelta(days=3))
    data = tmp_path / "data"
    engine = engine_opener(data_dir=data, clock=clock)
    _say(
        engine,
        clock,
        [
            "I listen to jazz while I work.",
            "I read science fiction before bed.",
            "I live in Hangzhou.",
        ],
        tenant="acme",
    )
    music = ("what music do I like", "You listen to jazz while you work.")
    home = ("Where do I live?", "You live in Hangzhou.")
    for n, (question, reply) in enumerate((music, music, home)):
        card_id = _step(engine, f"q{n}", question, tenant="acme", reply=reply)
        kind = "corrected" if question == home[0] else "confirmed"
        correction = "No, I live in Chengdu now." if kind == "corrected" else ""
        engine.feedback(card_id, kind, tenant="acme", correction=correction)
        clock.advance(timedelta(days=1))
    card_id = _step(engine, "q9", "where do I live", tenant="acme", reply="No idea.")
    engine.feedback(card_id, "rating", tenant="acme", rating=1)
    engine.flush()

    report = engine.feedback_report(tenant="acme")
    assert report.events == 4
    assert report.by_kind == {"confirmed": 2, "corrected": 1, "rating": 1}
    [respond] = report.intents
    assert (respond.misses, respond.low_ratings, respond.mean_rating) == (2, 1, 1.0)
    worst = respond.questions[0]
    assert worst.question == "Where do I live?" and (worst.events, worst.misses) == (2, 2)
    assert respond.questions[1].miss_rate == 0.0
    # What the replies did not use, with its text; jazz was used every time.
    assert report.ignored and all(m.text and m.ignored >= 1 for m in report.ignored)
    assert "jazz" not in " ".join(m.text or "" for m in report.ignored)
    recent = engine.feedback_report(tenant="acme", since=timedelta(hours=36))
    assert recent.events == 2
    assert engine.feedback_report(tenant="globex").events == 0
    engine.close()

    from memstrata.cli import app

    runner = CliRunner()
    shown = runner.invoke(
        app, ["feedback", "report", "--tenant", "acme", "--data-dir", str(data), "--json"]
    )
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert document["events"] == 4 and document["intents"][0]["intent"] == "respond"
    table = runner.invoke(app, ["feedback", "report", "--tenant", "acme", "--data-dir", str(data)])
    assert table.exit_code == 0 and "respond" in table.stdout
    bad = runner.invoke(
        app, ["feedback", "report", "--data-dir", str(data), "--since", "soon", "--json"]
    )
    assert bad.exit_code == 2 and "since" in json.loads(bad.stdout)["error"]["message"]


def test_the_plan_and_the_report_are_pure() -> None:
    base = {
        "tenant": "t",
        "card_id": "c1",
        "session_id": "s1",
        "at": 1.0,
        "intent": "respond",
        "route": "answer",
        "memory_ids": ("f1", "f2"),
        "episode_ids": ("e1",),
    }
    confirmed = FeedbackEvent(id="x1", kind="confirmed", used=("f1",), used_by="reply", **base)
    assert feedback_plan(confirmed).steps == (("f1", 0.3), ("f2", -0.1), ("e1", -0.1))
    corrected = FeedbackEvent(
        id="x2",
        kind="corrected",
        correction="No.",
        used=("f1", "e1"),
        used_by="reply",
        wrong=("f1",),
        **base,
    )
    plan = feedback_plan(corrected)
    assert plan.steps == (("e1", -0.3),) and plan.invalidate == ("f1",)
    assert plan.remember == "No."
    neutral = FeedbackEvent(id="x3", kind="rating", rating=3, used=("f1",), **base)
    assert feedback_plan(neutral).steps == ()
    assert FeedbackEvent.from_payload(corrected.as_payload()) == corrected
    with pytest.raises(ValidationError) as raised:
        FeedbackEvent.from_payload({**corrected.as_payload(), "used": "f1"})
    assert raised.value.field == "used"

    records = [
        confirmed.record(),
        corrected.record(["n1"]),
        FeedbackRecord.from_fields(neutral.record().fields()),
    ]
    assert records[2] is not None and FeedbackRecord.from_fields({"event": "{"}) is None
    report = build_feedback_report("t", [r for r in records if r is not None], texts={"f2": "x"})
    assert report.events == 3 and report.corrected_share == pytest.approx(1 / 3)
    assert [(m.id, m.ignored, m.text) for m in report.ignored] == [
        ("f2", 2, "x"),
        ("e1", 1, None),
    ]
    assert stepped_importance(0.5, 0.3) == pytest.approx(0.65)
    assert stepped_importance(0.5, -0.1) == pytest.approx(0.45)
