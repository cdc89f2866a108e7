"""Nothing a user says is lost (issue 16's cases, through the public API): every turn
is an episode, facts are extracted onto it, one retrieval ranks both, a newer fact
marks what it replaced as the past."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.retrieval.results import RetrievalResult

Factory = Callable[..., ContextEngine]
TURNS = (
    "I live in Hangzhou.",
    "I'm allergic to peanuts and shellfish.",
    "My budget for the trip is 5000 yuan.",
    "Actually I moved to Chengdu last month.",
)
START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def top3(result: RetrievalResult) -> str:
    """What the first three items say, the facts they carry included."""
    return "\n".join(
        text for item in result.items[:3] for text in (item.text, *(f.text for f in item.facts))
    )


@pytest.fixture
def four_turns(engine_factory: Factory) -> ContextEngine:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    state = engine.start_session("u1", "plan a trip", tenant="acme", session_id="trip")
    for text in TURNS:
        assert engine.observe(state.session_id, "user", text).queued
        clock.advance(timedelta(minutes=1))
    engine.flush()
    return engine


QUESTIONS = (
    ("where do I live", ("Chengdu",)),
    ("what am I allergic to", ("peanuts",)),
    ("what is my budget", ("5000",)),
    ("Recommend a restaurant near my home that is safe for my allergies", ("Chengdu", "peanut")),
)


def test_the_four_turn_session_answers_from_the_top_three(four_turns: ContextEngine) -> None:
    for question, expected in QUESTIONS:
        result = four_turns.retrieve(question, tenant="acme", user="u1")
        assert not result.l3_skipped and result.items, question
        said = top3(result)
        for text in expected:
            assert text in said, f"{text!r} not in the top 3 for {question!r}:\n{said}"
        # Hangzhou may come back as something said, never as the current city.
        for item in result.items:
            for fact in (item, *item.facts):
                if fact.kind == "fact" and fact.payload.get("attribute") == "city":
                    assert fact.payload["value"] == "Chengdu"
            if item.kind == "episode" and "Hangzhou" in item.text:
                assert item.superseded_by is not None
                assert any(f.id == item.superseded_by and "Chengdu" in f.text for f in item.facts)


def test_only_a_later_episode_makes_an_earlier_one_the_past(four_turns: ContextEngine) -> None:
    """The move supersedes "I live in Hangzhou."; the allergy sentence, whose two items
    became one current fact in two versions, stays current."""
    result = four_turns.retrieve("my allergies and my home", tenant="acme", user="u1", k=10)
    marks = {item.text: item.superseded_by for item in result.items if item.kind == "episode"}
    assert marks["I'm allergic to peanuts and shellfish."] is None
    assert marks["I live in Hangzhou."] is not None


def test_every_turn_is_kept_and_each_fact_names_its_episode(four_turns: ContextEngine) -> None:
    memory = four_turns.parts.memory
    city = memory.active_fact("acme", "u1", "user", "city")
    assert city is not None and city.value == "Chengdu"
    history = memory.history("acme", "u1", "user", "city")
    assert [(u.value, u.active, u.superseded_by) for u in history] == [
        ("Hangzhou", False, city.id),
        ("Chengdu", True, None),
    ]
    # Versions count commits; two worker threads may commit the turns in either order,
    # and validity (not the commit order) decides which one is current.
    assert sorted(u.version for u in history) == [1, 2]
    allergies = memory.active_fact("acme", "u1", "user", "allergies")
    assert allergies is not None and "peanuts" in allergies.value
    assert "shellfish" in allergies.value
    budget = memory.active_fact("acme", "u1", "user", "budget")
    assert budget is not None and "5000" in budget.value
    found = four_turns.search("u1", "trip", tenant="acme", k=20)
    episodes = {h.payload["text"]: h for h in found if h.payload["type"] == "episode"}
    assert sorted(episodes) == sorted(TURNS)
    for fact in (city, allergies, budget):
        (episode_id,) = fact.episodes
        assert (
            fact.id
            in episodes[next(t for t in TURNS if episodes[t].id == episode_id)].payload["facts"]
        )


def test_a_plain_chat_agent_builds_its_context_without_an_intent(
    four_turns: ContextEngine,
) -> None:
    state = four_turns.session("trip")
    built = four_turns.build_context(
        state, "respond", "Where do I live now?", system_prompt="You are a travel agent."
    )
    (block,) = [m["content"] for m in built.messages() if "## Retrieved context" in m["content"]]
    # The current fact comes first, what was said after it with its date, the old
    # city as the past that the new one replaced.
    current = block.index("current fact")
    assert "user city: Chengdu" in block[current:]
    past = block.index("PAST, now replaced by: user city: Chengdu")
    assert current < past and "I live in Hangzhou." in block[past:]
    assert "said by user on 2025-03-01" in block
    bundle = four_turns.route(state, "respond", "what am I allergic to")
    assert any("peanuts" in str(item.content["text"]) for item in bundle.layer("L3"))


def test_a_chinese_move_phrased_its_own_way_supersedes(engine_factory: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    state = engine.start_session("u2", "hi", tenant="acme")
    engine.observe(state.session_id, "user", "我住在杭州。")
    clock.advance(timedelta(days=30))
    engine.observe(state.session_id, "user", "我已经不在杭州了，现在住成都。")
    engine.flush()
    city = engine.parts.memory.active_fact("acme", "u2", "user", "city")
    assert city is not None and city.value == "成都"


def test_remember_on_the_command_line_reports_the_episode_and_every_fact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMSTRATA_SETTINGS", raising=False)
    runner = CliRunner()
    data = str(tmp_path / "cli")
    text = "I live in Hangzhou and I'm allergic to peanuts."
    result = runner.invoke(
        app, ["remember", "--user", "alice", "--text", text, "--data-dir", data, "--json"]
    )
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)
    assert [e["text"] for e in stored["episodes"]] == [text]
    facts = {(f["attribute"], f["value"]) for f in stored["facts"]}
    assert ("city", "Hangzhou") in facts and ("allergies", "peanuts") in facts
    found = runner.invoke(
        app,
        ["search", "--user", "alice", "--query", "what is she allergic to?", "--data-dir", data],
    )
    assert found.exit_code == 0, found.output
    assert "peanuts" in found.stdout
    plain = runner.invoke(app, ["remember", "--user", "alice", "--text", text, "--data-dir", data])
    assert "allergies = peanuts" in plain.stdout and "episode" in plain.stdout
