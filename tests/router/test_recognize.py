"""A message without a step intent: which registered intent it is (Chinese, English,
mixed), the fallback to ``respond``, the entities, and a configured model recognizer
(against a scripted endpoint) with the examples as its backup."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.chat import ChatEndpoint
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.engine import ContextEngine
from memstrata.errors import ModelError, ModelUnavailableError, UnknownIntentError, ValidationError
from memstrata.eval.intents import reference_intents, run_intents_eval
from memstrata.router import IntentRegistry, IntentSpec
from memstrata.router.recognize import ExampleRecognizer, MessageUnderstanding, message_entities
from memstrata.router.recognize_llm import ModelRecognizer
from memstrata.testing.chat_server import Reply, ScriptedServer, completion

NOW = datetime(2025, 5, 6, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def examples() -> ExampleRecognizer:
    return ExampleRecognizer(MultilingualEmbedder().embed)


@pytest.fixture
def registry() -> IntentRegistry:
    return IntentRegistry(reference_intents())


@pytest.mark.parametrize(
    ("message", "intent"),
    [
        ("我下的单现在到哪儿了？", "order_status"),
        ("Has my parcel left the warehouse yet?", "order_status"),
        ("这个坏了，钱能退给我吗？", "refund"),
        ("Write me the battery diagnosis report.", "device_report"),
        ("上次给这台设备保养是哪天？", "maintenance_history"),
    ],
)
def test_a_message_alone_is_routed_to_its_intent(
    examples: ExampleRecognizer, registry: IntentRegistry, message: str, intent: str
) -> None:
    got = MessageUnderstanding(examples).understand(message, registry, NOW)
    assert (got.intent, got.fell_back) == (intent, False)
    assert got.candidate == intent and 0.4 <= got.confidence <= 1.0


@pytest.mark.parametrize("message", ["今天股市行情怎么样？", "Who painted the Mona Lisa?"])
def test_an_out_of_scope_message_goes_to_respond(
    examples: ExampleRecognizer, registry: IntentRegistry, message: str
) -> None:
    assert MessageUnderstanding(examples).understand(message, registry, NOW).intent == "respond"


def test_under_the_threshold_it_falls_back(
    examples: ExampleRecognizer, registry: IntentRegistry
) -> None:
    strict = MessageUnderstanding(examples, min_confidence=0.99)
    got = strict.understand("Has my parcel left the warehouse yet?", registry, NOW)
    assert got.intent == "respond" and got.fell_back and got.candidate == "order_status"


def test_a_user_registered_intent_is_recognized_by_its_own_examples(
    examples: ExampleRecognizer, registry: IntentRegistry
) -> None:
    registry.register(
        IntentSpec(
            "book_table",
            examples=("Book a table for two tonight.", "帮我订一张今晚两个人的桌子。"),
        )
    )
    understanding = MessageUnderstanding(examples)
    for message in ("Reserve a table for four people tomorrow", "明天晚上帮我订个四人桌"):
        assert understanding.understand(message, registry, NOW).intent == "book_table"


def test_a_fallback_that_is_not_registered_is_refused(examples: ExampleRecognizer) -> None:
    only = IntentRegistry([IntentSpec("refund", examples=("I want my money back",))])
    with pytest.raises(UnknownIntentError):
        MessageUnderstanding(examples).understand("今天天气怎么样？", only, NOW)


def test_entities_in_both_languages() -> None:
    english = message_entities("Refund order O-1042 to Lena, I paid $299 yesterday", NOW)
    kinds = {(e.text, e.kind) for e in english}
    assert {("O-1042", "id"), ("299", "amount"), ("Lena", "name")} <= kinds
    (date,) = [e for e in english if e.kind == "date"]
    assert date.value == "2025-05-05/2025-05-06"
    chinese = message_entities("上周我在杭州花了三百块买的 X200", NOW)
    assert {"date", "amount", "id"} <= {e.kind for e in chinese}
    assert any("杭州" in e.text for e in chinese if e.kind == "term")


def test_amounts_are_read_in_digits_and_attributes_come_from_the_registry() -> None:
    chinese = message_entities("我的预算是八千块，帮我订下个月的机票", NOW)
    assert ("八千块", "amount", "8000") in {(e.text, e.kind, e.value) for e in chinese}
    attributes = {e.value: e.text for e in chinese if e.kind == "attribute"}
    assert attributes["budget"] == "预算"  # asked by name
    assert attributes["city"] == "机票"  # implied by a trip
    english = message_entities("Where should I eat tonight?", NOW)
    implied = [e.value for e in english if e.kind == "attribute"]
    assert implied[:2] == ["allergies", "diet"] and "city" in implied
    assert not [
        e for e in message_entities("What's the capital of Peru?", NOW) if e.kind == "attribute"
    ]


def test_examples_are_checked() -> None:
    with pytest.raises(ValidationError) as caught:
        IntentSpec("x", examples=("ok", " "))
    assert caught.value.field == "intent.examples[1]"
    with pytest.raises(ValidationError):
        IntentSpec("x", examples="one string")  # type: ignore[arg-type]


def _endpoint(server: ScriptedServer) -> ChatEndpoint:
    return ChatEndpoint(
        server.base_url,
        "m",
        None,
        what="LLM intent endpoint",
        error=ModelError,
        unavailable=ModelUnavailableError,
        timeout_s=5,
        max_retries=0,
    )


def _answer(intent: str | None, confidence: float) -> Reply:
    return completion(json.dumps({"intent": intent, "confidence": confidence}))


def test_a_configured_model_recognizes_and_the_examples_back_it_up(
    examples: ExampleRecognizer, registry: IntentRegistry
) -> None:
    replies = [
        _answer("refund", 0.93),
        _answer("no_such_intent", 0.99),
        completion("not json at all"),
    ]
    with ScriptedServer(replies) as server:
        understanding = MessageUnderstanding(ModelRecognizer(_endpoint(server)), backup=examples)
        got = understanding.understand("钱什么时候退给我？", registry, NOW)
        assert (got.intent, got.by, got.confidence, got.fell_back) == (
            "refund",
            "model",
            0.93,
            False,
        )
        sent = server.received[0].body
        shown = json.loads(sent["messages"][1]["content"])
        assert {i["name"] for i in shown["intents"]} == set(registry.names())
        made_up = understanding.understand("hello there", registry, NOW)
        assert (made_up.intent, made_up.fell_back, made_up.candidate) == ("respond", True, None)
        # An unusable answer: the examples decide.
        backed = understanding.understand("Has my parcel left the warehouse yet?", registry, NOW)
        assert (backed.intent, backed.by) == ("order_status", "examples")


def test_the_packaged_set_is_scored_per_language_and_intent(examples: ExampleRecognizer) -> None:
    report = run_intents_eval(MessageUnderstanding(examples), split="dev")
    assert report["messages"] >= 100
    assert set(report["by_language"]) == {"en", "zh", "mixed"}
    assert "respond" in report["by_intent"] and 0 <= report["fallback_rate"] <= 1
    assert report["accuracy"] >= 0.9


def test_no_example_is_copied_from_the_labeled_set() -> None:
    from memstrata.eval.intents import load_messages
    from memstrata.router import SEED_INTENTS

    def folded(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    labeled = {folded(row["text"]) for row in load_messages()}
    examples = [e for spec in (*reference_intents(), *SEED_INTENTS) for e in spec.examples]
    assert len(examples) > 150
    assert [e for e in examples if folded(e) in labeled] == []


def test_the_intent_settings_are_checked(tmp_path: Path) -> None:
    from memstrata.config import load_settings
    from memstrata.errors import ConfigError

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"intents": {"min_confidence": 0.6, "top_examples": 3}}))
    assert load_settings(path).intents.min_confidence == 0.6
    for bad, name in (
        ({"min_confidence": 1.5}, "intents.min_confidence"),
        ({"top_examples": 0}, "intents.top_examples"),
        ({"llm_base_url": "ftp://x"}, "intents.llm_base_url"),
    ):
        path.write_text(json.dumps({"intents": bad}))
        with pytest.raises(ConfigError, match=name):
            load_settings(path)


def test_the_wiring_uses_the_configured_model_with_the_examples_behind_it(
    examples: ExampleRecognizer, registry: IntentRegistry
) -> None:
    from memstrata.config import IntentSettings, Settings
    from memstrata.wiring import build_understanding

    with ScriptedServer([_answer("order_status", 0.8), Reply(500, b"down")]) as server:
        settings = Settings(intents=IntentSettings(llm_base_url=server.base_url, timeout_s=5))
        understanding = build_understanding(settings)
        by_model = understanding.understand("包裹呢？", registry, NOW)
        assert (by_model.intent, by_model.by) == ("order_status", "model")
        down = understanding.understand("Has my parcel left the warehouse yet?", registry, NOW)
        assert (down.intent, down.by) == ("order_status", "examples")


def test_the_engine_recognizes_with_the_stores_multilingual_model_and_cache(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    # One model copy, one cache: the message's vector that recognized the intent is
    # there for the retrieval reading the same text in the multilingual space.
    engine = engine_opener()
    multilingual = engine.parts.longterm.multilingual
    assert isinstance(multilingual, CachedEmbedder)
    message = "把分析结果写成一份报告，谢谢。"
    before = multilingual.misses
    _, recognized = engine.parts.router.resolve(None, message)
    assert recognized is not None and recognized.by == "examples"
    assert multilingual.misses > before  # embedded by the store's model ...
    hits = multilingual.hits
    multilingual.embed([message])
    assert multilingual.hits == hits + 1  # ... and kept in its cache
    state = engine.start_session("u1", "reports", tenant="t-recognize")
    assert engine.route(state, None, message).step_intent == recognized.intent
