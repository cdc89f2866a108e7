"""Query routes (entities, build_routes) and the pure scoring steps."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.retrieval.routes import (
    MAX_INTENT_CHARS,
    Route,
    build_routes,
    entities,
    entity_spans,
)
from memstrata.retrieval.scoring import (
    Candidate,
    decay_factor,
    fuse_route,
    importance_factor,
    merge_routes,
    type_factor,
)

# --- entities ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Anna say about order ORD-7781?", {"Anna", "ORD-7781"}),
        ("where is ord-7781 now", {"ord-7781"}),
        ("Is the v2.0 API ready for device D123?", {"v2.0", "API", "D123"}),
        ("How many items did I buy for 45 dollars?", {"45"}),
        ("Who is Bob Smith and what does he like?", {"Bob Smith"}),
        ('Did Lena read "Ender\'s Game" in 2022?', {"Lena", "Ender's Game", "2022"}),
        ("What does the song ‘Blue Moon’ mean?", {"Blue Moon"}),
        ("He said “hello there” twice", {"hello there"}),
        ("What are Anna's and Bob's plans?", {"Anna", "Bob"}),
        ("Tell me about Paris, France.", {"Paris", "France"}),
        ("When did Margaret visit the NASA space museum?", {"Margaret", "NASA"}),
        ("张伟的电话号码", {"张伟", "电话号码"}),
        ("「三体」的作者", {"三体", "作者"}),
        ("订单ORD-7781的状态", {"ORD-7781", "订单", "状态"}),
        ("INV-EU-2024 and case_12 on 2023-06-16", {"INV-EU-2024", "case_12", "2023-06-16"}),
    ],
)
def test_entities_finds_names_ids_numbers_and_quoted_phrases(
    query: str, expected: set[str]
) -> None:
    assert set(entities(query)) == expected


@pytest.mark.parametrize(
    "query",
    [
        "What is the plan?",
        "What did I tell you?",
        "Where Are They?",  # capitalized, but only function words
        "How Did You Do It?",
        "Can You Tell Me Which?",
        "什么是什么",
    ],
)
def test_question_and_function_words_are_not_entities(query: str) -> None:
    assert entities(query) == ()


def test_entities_have_no_repeats_case_insensitively_and_keep_first_spelling() -> None:
    found = entities('Does "Blue Bottle" sell blue bottle mugs? Blue Bottle, ORD-1 and ord-1')
    folded = [e.lower() for e in found]
    assert len(folded) == len(set(folded))
    assert "Blue Bottle" in found and "ORD-1" in found
    assert entities("Anna met Anna") == ("Anna",)


def test_entities_strip_edge_punctuation_and_skip_blank_pieces() -> None:
    assert entities("Anna?") == ("Anna",)
    assert entities("?!") == ()
    assert entities("") == ()


@pytest.mark.parametrize("text", ["a-" * 16_000, "word-" * 6_000, "Ab " * 10_000, "'x' " * 8_000])
def test_entities_of_long_inputs_take_linear_time(text: str) -> None:
    started = time.perf_counter()
    entities(text)
    assert time.perf_counter() - started < 3.0


def test_entities_is_deterministic() -> None:
    query = 'Did Bob send ORD-7781 to "the Lyon office" on 2023-06-16?'
    assert entities(query) == entities(query)


# --- build_routes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("When did Margaret visit the NASA space museum?", ["Margaret", "NASA"]),
        ("What is Lena's favorite book?", ["Lena"]),
        (
            'Did Anna And Bob meet at ORD-7781 "Blue Bottle"?',
            ["Blue Bottle", "ORD-7781", "Anna", "Bob"],
        ),
        ("我上周在杭州买了什么", ["上周在杭州买"]),
        ("what about margaret", []),
    ],
)
def test_entity_spans_locate_every_entity_in_the_query(query: str, words: list[str]) -> None:
    spans = entity_spans(query, entities(query))
    assert [query[start:end] for start, end in spans or ()] == words
    assert (spans is None) == (not words)


def test_entity_spans_match_case_and_give_up_on_a_missing_word() -> None:
    assert entity_spans("ask MARGARET now", ["Margaret"]) == ((4, 12),)
    assert entity_spans("ask Margaret now", ["Lena"]) is None
    assert entity_spans("a.b? (c)", ["a.b?", "(c)"]) == ((0, 4), (5, 8))  # regex-safe


def test_routes_query_then_entities_then_intent() -> None:
    routes = build_routes(
        "What did Anna say about ORD-7781?",
        ["hello", "we talked about the trip", "and the hotel", "booking it now"],
        entity_weight=0.5,
        intent_weight=0.4,
    )
    assert [r.name for r in routes] == ["query", "entities", "intent"]
    assert routes[0] == Route("query", "What did Anna say about ORD-7781?", 1.0)
    assert routes[1].weight == 0.5 and set(routes[1].text.split()) == {"Anna", "ORD-7781"}
    # the last three recent turns, oldest first
    assert routes[2] == Route(
        "intent", "we talked about the trip and the hotel booking it now", 0.4
    )


@pytest.mark.parametrize("query", ["Anna", "  Anna ", "Anna?", "anna.", "ORD-7781"])
def test_entity_route_dropped_when_it_repeats_the_query(query: str) -> None:
    routes = build_routes(query, [], entity_weight=0.5, intent_weight=0.4)
    assert [r.name for r in routes] == ["query"]


def test_zero_weights_drop_their_routes() -> None:
    routes = build_routes("What did Anna say?", ["the trip"], entity_weight=0.0, intent_weight=0.0)
    assert [r.name for r in routes] == ["query"]


def test_no_entities_and_blank_recent_turns_give_only_the_query_route() -> None:
    routes = build_routes("what is the plan?", ["  ", ""], entity_weight=0.5, intent_weight=0.4)
    assert routes == (Route("query", "what is the plan?", 1.0),)


def test_intent_turns_is_configurable() -> None:
    routes = build_routes(
        "what now", ["a1", "b2", "c3"], entity_weight=0.5, intent_weight=0.4, intent_turns=1
    )
    assert routes[-1] == Route("intent", "c3", 0.4)


def test_intent_route_of_long_turns_keeps_the_newest_text() -> None:
    old, new = "old " * 5_000, "the newest words"
    routes = build_routes("what now", [old, new], entity_weight=0.5, intent_weight=0.4)
    intent = routes[-1]
    assert intent.name == "intent" and len(intent.text) <= MAX_INTENT_CHARS
    assert intent.text.endswith(new) and not intent.text.startswith(" ")


def test_build_routes_does_not_mutate_recent() -> None:
    recent = ["one", "two"]
    build_routes("what now", recent, entity_weight=0.5, intent_weight=0.4)
    assert recent == ["one", "two"]


# --- fuse_route ------------------------------------------------------------------------


def test_fuse_route_clips_cosine_and_normalizes_bm25_by_the_best() -> None:
    fused = fuse_route(
        [("a", 0.8), ("b", -0.3), ("c", 1.2)],
        [("a", 10.0), ("d", 5.0)],
        dense_weight=1.0,
        sparse_weight=0.5,
    )
    assert fused == pytest.approx({"a": 0.8 + 0.5, "b": 0.0, "c": 1.0, "d": 0.25})


def test_fuse_route_keeps_cosine_absolute() -> None:
    # a weak best dense match stays weak: no per-route rescaling of cosine
    fused = fuse_route([("a", 0.2), ("b", 0.1)], [], dense_weight=1.0, sparse_weight=0.5)
    assert fused == pytest.approx({"a": 0.2, "b": 0.1})


def test_fuse_route_with_no_positive_bm25_ignores_the_sparse_list() -> None:
    assert fuse_route([], [("a", 0.0)], dense_weight=1.0, sparse_weight=0.5) == {}
    assert fuse_route([], [], dense_weight=1.0, sparse_weight=0.5) == {}


def test_fuse_route_weights() -> None:
    fused = fuse_route([("a", 0.5)], [("a", 3.0)], dense_weight=2.0, sparse_weight=0.0)
    assert fused == pytest.approx({"a": 1.0})


def test_fuse_route_does_not_mutate_inputs() -> None:
    dense, sparse = [("a", 0.5)], [("b", 2.0)]
    fuse_route(dense, sparse, dense_weight=1.0, sparse_weight=1.0)
    assert dense == [("a", 0.5)] and sparse == [("b", 2.0)]


# --- merge_routes -------------------------------------------------------------------------


def test_merge_keeps_the_best_weighted_score_and_every_route() -> None:
    merged = merge_routes(
        [
            ("query", 1.0, {"a": 0.5, "b": 0.9}),
            ("entities", 0.5, {"a": 1.6, "c": 0.2}),
            ("intent", 0.4, {"b": 0.1}),
        ]
    )
    assert merged == [
        Candidate("b", pytest.approx(0.9), ("query", "intent")),  # type: ignore[arg-type]
        Candidate("a", pytest.approx(0.8), ("query", "entities")),  # type: ignore[arg-type]
        Candidate("c", pytest.approx(0.1), ("entities",)),  # type: ignore[arg-type]
    ]


def test_merge_orders_ties_by_id() -> None:
    merged = merge_routes([("query", 1.0, {"z": 0.5, "a": 0.5, "m": 0.5})])
    assert [c.id for c in merged] == ["a", "m", "z"]


def test_merge_of_nothing_is_empty() -> None:
    assert merge_routes([]) == []
    assert merge_routes([("query", 1.0, {})]) == []


def test_merge_records_a_route_once_even_if_repeated() -> None:
    merged = merge_routes([("query", 1.0, {"a": 0.1}), ("query", 1.0, {"a": 0.3})])
    assert merged == [Candidate("a", pytest.approx(0.3), ("query",))]  # type: ignore[arg-type]


ROUTE_NAMES = st.sampled_from(["query", "entities", "intent", "extra"])
IDS = st.text(alphabet="abcdef", min_size=1, max_size=3)
SCORES = st.floats(min_value=0.0, max_value=3.0, allow_nan=False)
PER_ROUTE = st.lists(
    st.tuples(
        ROUTE_NAMES,
        st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
        st.dictionaries(IDS, SCORES, max_size=8),
    ),
    max_size=5,
)


@given(PER_ROUTE)
def test_merge_property_sorted_unique_and_max_over_routes(
    per_route: list[tuple[str, float, dict[str, float]]],
) -> None:
    merged = merge_routes(per_route)
    ids = [c.id for c in merged]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids, key=lambda i: (-next(c.score for c in merged if c.id == i), i))
    expected_ids = {i for _, _, scores in per_route for i in scores}
    assert set(ids) == expected_ids
    for cand in merged:
        contributions = [
            (name, weight * scores[cand.id])
            for name, weight, scores in per_route
            if cand.id in scores
        ]
        assert cand.score == max(score for _, score in contributions)
        assert cand.routes == tuple(dict.fromkeys(name for name, _ in contributions))
    assert merge_routes(per_route) == merged  # deterministic
    for limit in (0, 1, 3):
        assert merge_routes(per_route, limit) == merged[:limit]


# --- adjustments --------------------------------------------------------------------------


def test_decay_factor() -> None:
    assert decay_factor(0.0, 0.96, 1.0) == pytest.approx(1.0)
    assert decay_factor(10.0, 0.96, 1.0) == pytest.approx(0.96**10)
    assert decay_factor(10.0, 0.96, 0.5) == pytest.approx(0.5 + 0.5 * 0.96**10)
    assert decay_factor(10.0, 0.96, 0.0) == 1.0  # weight 0: off
    assert decay_factor(-5.0, 0.96, 1.0) == 1.0  # from the future: not boosted
    assert decay_factor(1e6, 0.96, 1.0) == pytest.approx(0.0)
    assert decay_factor(1e6, 0.96, 0.05) == pytest.approx(0.95)  # floor is 1 - weight
    assert decay_factor(3.0, 1.0, 1.0) == 1.0  # no decay per day


@given(
    st.floats(min_value=-1e4, max_value=1e4),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_decay_factor_stays_within_one_minus_weight_and_one(
    age: float, per_day: float, weight: float
) -> None:
    value = decay_factor(age, per_day, weight)
    assert 1.0 - weight - 1e-12 <= value <= 1.0 + 1e-12


def test_importance_factor() -> None:
    assert importance_factor(None, 0.2) == 1.0  # unknown counts as 0.5
    assert importance_factor(0.5, 0.2) == 1.0
    assert importance_factor(1.0, 0.2) == pytest.approx(1.1)
    assert importance_factor(0.0, 0.2) == pytest.approx(0.9)
    assert importance_factor(7.0, 0.2) == pytest.approx(1.1)  # clipped to [0, 1]
    assert importance_factor(-3.0, 0.2) == pytest.approx(0.9)
    assert importance_factor(0.9, 0.0) == 1.0  # weight 0: off
    assert importance_factor(0.9, 1.0) == pytest.approx(1.4)


def test_type_factor() -> None:
    weights = {"preference": 1.1, "summary": 0.9, "muted": 0.0}
    assert type_factor("preference", weights) == pytest.approx(1.1)
    assert type_factor("summary", weights) == pytest.approx(0.9)
    assert type_factor("muted", weights) == 0.0
    assert type_factor("fact", weights) == 1.0  # not configured
    assert type_factor(None, weights) == 1.0
    assert type_factor("fact", {}) == 1.0
    assert isinstance(type_factor("preference", weights), float)


def test_factors_are_finite() -> None:
    assert math.isfinite(decay_factor(365 * 100, 0.96, 1.0))
    assert math.isfinite(importance_factor(0.3, 10.0))
