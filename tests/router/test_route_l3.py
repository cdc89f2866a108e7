"""The router's L3 rules, through ``engine.route()`` on the real backends.

Which query each need searches with, whose memories it reads, how confidence decides
what is served, flagged or reported, and what an L3 item says about where it came from.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from tests.router.stage import LOW_CONFIDENCE, SKIP_BELOW, Stage

from memstrata.router import ContextBundle, IntentSpec, L3Need

QUESTION = "how often do I recalibrate the vibration sensor"
CLOSE = "I recalibrate the vibration sensor every month."  # cosine to QUESTION ~0.86
NEAR = "My vibration sensor on D123 needs care."  # cosine ~0.51: served
UNRELATED = (
    "Quarterly revenue of the Lyon bakery rose by four percent.",  # ~0.03
    "I like green tea.",  # ~0.02
)


def _texts(bundle: ContextBundle) -> list[str]:
    return [str(item.content["text"]) for item in bundle.layer("L3")]


def _remember(stage: Stage, *texts: str, user: str | None = None) -> list[str]:
    """Remember ``texts`` (one episode each) and wait for the writes; their episode ids."""
    receipts = [
        stage.engine.remember(user or stage.user, text, tenant=stage.tenant) for text in texts
    ]
    stage.engine.flush()
    return [stage.engine.written(r, tenant=stage.tenant).episodes[0].id for r in receipts]


def test_a_fixed_query_resolves_l1_placeholders_and_a_free_need_uses_routes_query(
    stage: Stage,
) -> None:
    name = stage.intent("manual")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l1=("session_id", "last_entity_id"),
            l3=(
                L3Need(
                    "knowledge",
                    query="maintenance of the $last_entity_id",
                    k=1,
                    per_user=False,
                    label="manual",
                ),
                L3Need("knowledge", k=1, per_user=False, label="asked"),
            ),
        )
    )
    for source, text in (
        ("sop/boiler", "Boiler maintenance: descale the boiler tank every spring."),
        ("sop/turbine", "Turbine maintenance: inspect the turbine blades for cracks yearly."),
        ("hr/leave", "Holiday policy: every employee gets 25 days of paid leave a year."),
    ):
        stage.engine.add_knowledge([text], tenant=stage.tenant, source=source)
    state = stage.session("keep the plant running")
    question = "how many days of paid leave do employees get"

    state = stage.engine.update_session(state.session_id, lambda s: s.with_entity("boiler"))
    bundle = stage.engine.route(state, name, question)
    assert bundle.item("manual_0").provenance.source == "sop/boiler"
    assert bundle.item("asked_0").provenance.source == "hr/leave"

    state = stage.engine.update_session(state.session_id, lambda s: s.with_entity("turbine"))
    bundle = stage.engine.route(state, name, question)
    assert bundle.item("manual_0").provenance.source == "sop/turbine"
    assert bundle.item("asked_0").provenance.source == "hr/leave"


def test_a_need_without_a_query_is_reported_missing(stage: Stage) -> None:
    name = stage.intent("noquery")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l3=(
                L3Need("memories", label="recall"),
                L3Need("knowledge", query="$last_entity_id", per_user=False, label="manual"),
            ),
        )
    )
    _remember(stage, CLOSE)
    state = stage.session()  # no entity: the fixed query resolves to ""

    bundle = stage.engine.route(state, name)  # and no route() query for "recall"

    assert not bundle.layer("L3") and not bundle.l3_skipped
    assert {(m.name, m.layer, m.ref, m.reason) for m in bundle.missing} == {
        ("recall", "L3", "memories", "no query"),
        ("manual", "L3", "knowledge", "no query"),
    }


def test_per_user_needs_read_the_sessions_user_and_shared_ones_the_tenant(stage: Stage) -> None:
    name = stage.intent("whose")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l3=(
                L3Need("memories", k=5, label="mine"),
                L3Need("memories", k=5, per_user=False, label="team"),
            ),
        )
    )
    _remember(stage, "My cat is called Miso and she sleeps all day.")
    _remember(stage, "My cat is called Pepper and he hunts mice.", user=f"{stage.user}-other")
    state = stage.session()

    bundle = stage.engine.route(state, name, "what is the cat called")

    mine = " ".join(str(i.content["text"]) for i in bundle.items if i.name.startswith("mine_"))
    team = " ".join(str(i.content["text"]) for i in bundle.items if i.name.startswith("team_"))
    assert "Miso" in mine and "Pepper" not in mine
    assert "Miso" in team and "Pepper" in team


def test_items_below_the_skip_floor_are_reported_and_never_served(stage: Stage) -> None:
    name = stage.intent("floor")
    stage.engine.register_intent(IntentSpec(name, l3=(L3Need("memories", k=8),)))
    ids = dict(zip((CLOSE, *UNRELATED), _remember(stage, CLOSE, *UNRELATED), strict=True))
    state = stage.session()

    bundle = stage.engine.route(state, name, QUESTION)

    assert _texts(bundle) == [CLOSE] and not bundle.l3_skipped
    below = {m.ref: m for m in bundle.missing if m.layer == "L3"}
    for text in UNRELATED:
        assert ids[text] in below
        assert below[ids[text]].reason.startswith("confidence ")
        assert f"below {SKIP_BELOW}" in below[ids[text]].reason
    assert all(item.provenance.relevance >= SKIP_BELOW for item in bundle.layer("L3"))


def test_l3_is_skipped_when_every_candidate_is_below_the_floor(stage: Stage) -> None:
    name = stage.intent("skip")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l3=(
                L3Need("memories", k=4, label="recall"),
                L3Need("knowledge", k=2, per_user=False, label="manual"),
            ),
        )
    )
    ids = _remember(stage, *UNRELATED)
    stage.engine.add_knowledge(
        ["Holiday policy: every employee gets 25 days of paid leave a year."],
        tenant=stage.tenant,
        source="hr/leave",
    )
    state = stage.session()

    bundle = stage.engine.route(state, name, QUESTION)

    assert bundle.l3_skipped
    assert not bundle.layer("L3")
    reported = [m for m in bundle.missing if m.layer == "L3"]
    assert set(ids) <= {m.ref for m in reported}
    assert {m.name for m in reported} == {"recall", "manual"}
    assert all(m.reason.endswith(": L3 skipped") for m in reported)
    assert bundle.item("session").provenance.layer == "L1"  # L1 and L2 are still served


def test_low_confidence_flags_items_below_the_threshold_only(stage: Stage) -> None:
    name = stage.intent("conf")
    stage.engine.register_intent(IntentSpec(name, l3=(L3Need("memories", k=2, label="m"),)))
    _remember(stage, CLOSE, NEAR)
    state = stage.session()

    bundle = stage.engine.route(state, name, QUESTION)

    flags = {str(i.content["text"]): i.provenance for i in bundle.layer("L3")}
    assert set(flags) == {CLOSE, NEAR}
    assert LOW_CONFIDENCE <= flags[NEAR].relevance < flags[CLOSE].relevance
    assert not flags[CLOSE].low_confidence
    assert [i.name for i in bundle.layer("L3")] == ["m_0", "m_1"]
    assert bundle.item("m_0").content["text"] == CLOSE  # the better one first


def test_l3_provenance_names_the_point_its_source_cosine_and_age(stage: Stage) -> None:
    name = stage.intent("prov")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l3=(
                L3Need("memories", k=1, label="memory"),
                L3Need("knowledge", k=1, per_user=False, label="manual"),
            ),
        )
    )
    manual = "Vibration sensors are recalibrated with the shaker table, monthly."
    (knowledge_id,) = stage.engine.add_knowledge(
        [manual], tenant=stage.tenant, source="sop/vibration", section="calibration"
    )
    receipt = stage.engine.remember(stage.user, CLOSE, tenant=stage.tenant)
    stage.clock.advance(timedelta(hours=2))  # written later than it was said
    stage.engine.flush()
    (episode,) = stage.engine.written(receipt, tenant=stage.tenant).episodes
    stage.clock.advance(timedelta(hours=3))
    state = stage.session()

    bundle = stage.engine.route(state, name, QUESTION)

    question = stage.engine.embed_query(QUESTION)
    memory = bundle.item("memory_0")
    assert memory.provenance.layer == "L3"
    assert memory.provenance.ref == episode.id
    assert memory.provenance.source == "remember"
    assert memory.provenance.level == "medium"
    # A memory's relevance is the reader's calibrated confidence (retrieve()'s own),
    # a knowledge item's (a search need, not graded) its cosine.
    (retrieved,) = [
        i
        for i in stage.engine.retrieve(QUESTION, tenant=stage.tenant, user=stage.user).items
        if i.id == episode.id
    ]
    assert retrieved.confidence is not None
    assert memory.provenance.relevance == pytest.approx(retrieved.confidence, abs=1e-6)
    cosine = float(np.dot(question, stage.engine.embed_query(manual)))
    assert bundle.item("manual_0").provenance.relevance == pytest.approx(cosine, abs=1e-3)
    assert memory.provenance.freshness_hours == pytest.approx(5.0, abs=1e-6)  # since said
    knowledge = bundle.item("manual_0")
    assert knowledge.provenance.ref == knowledge_id
    assert knowledge.provenance.source == "sop/vibration"
    assert knowledge.provenance.level == "low"
    assert knowledge.content["section"] == "calibration"
    assert knowledge.provenance.freshness_hours == pytest.approx(5.0, abs=1e-6)


def test_episodes_say_when_and_by_whom_they_were_said(stage: Stage) -> None:
    name = stage.intent("said")
    stage.engine.register_intent(IntentSpec(name, l3=(L3Need("memories", k=1, label="turn"),)))
    talk = stage.session("catch up")
    said_at = stage.clock.now()
    stage.engine.observe(talk.session_id, "user", CLOSE, speaker="Caroline")
    stage.engine.flush()
    stage.clock.advance(timedelta(days=2))
    state = stage.session()

    turn = stage.engine.route(state, name, QUESTION).item("turn_0")

    assert turn.content["type"] == "episode"
    assert turn.content["text"] == CLOSE
    assert turn.content["said_by"] == "Caroline"
    assert turn.content["said_at"] == said_at.isoformat()
    assert "replaced_by" not in turn.content


def test_an_episode_whose_fact_was_superseded_names_the_current_fact(stage: Stage) -> None:
    name = stage.intent("moved")
    stage.engine.register_intent(IntentSpec(name, l3=(L3Need("memories", k=4, label="m"),)))
    _remember(stage, "I live in Hangzhou.")
    stage.clock.advance(timedelta(days=30))
    _remember(stage, "Actually I moved to Chengdu last month.")
    state = stage.session()

    bundle = stage.engine.route(state, name, "where do I live")

    by_text = {str(i.content["text"]): i for i in bundle.layer("L3")}
    old = by_text["I live in Hangzhou."]
    assert old.content["type"] == "episode"
    assert "Chengdu" in old.content["replaced_by"]
    current = [i for i in bundle.layer("L3") if i.content["type"] == "fact"]
    assert current and all("Hangzhou" not in str(i.content["text"]) for i in current)
    assert all("replaced_by" not in i.content for i in bundle.layer("L3") if i is not old)
