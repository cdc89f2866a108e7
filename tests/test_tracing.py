"""OpenTelemetry spans per pipeline stage: names and parent links, off by default,
one provider per engine, and never a text (secrets, PII) in a span."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from memstrata.config import Settings, TracingSettings, load_settings, settings_from_env
from memstrata.context import Turn
from memstrata.engine import ContextEngine
from memstrata.errors import ConfigError
from memstrata.tracing import (
    NOOP_SPAN,
    Tracing,
    active,
    finished_span,
    safe_attribute,
    span,
)

SYSTEM = "You are a helpful assistant."
EMAIL = "alice.w@example.com"
KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
SECRET_TURN = f"My email is {EMAIL} and our Stripe key is {KEY}. I drink jasmine tea."
QUESTION = "What tea do I drink?"


def _names(spans: Iterable[ReadableSpan]) -> list[str]:
    return [s.name for s in spans]


def _one(spans: Iterable[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, _names(spans))
    return found[0]


def _parent_name(spans: list[ReadableSpan], child: ReadableSpan) -> str | None:
    if child.parent is None:
        return None
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    parent = by_id.get(child.parent.span_id)
    assert parent is not None, f"{child.name}: parent span not exported"
    assert parent.context is not None and child.context is not None
    assert parent.context.trace_id == child.context.trace_id
    return parent.name


def _ancestors(spans: list[ReadableSpan], child: ReadableSpan) -> list[str]:
    names: list[str] = []
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    current = child
    while current.parent is not None:
        current = by_id[current.parent.span_id]
        names.append(current.name)
    return names


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def traced_engine(
    engine_opener: Callable[..., ContextEngine], exporter: InMemorySpanExporter
) -> ContextEngine:
    return engine_opener(span_processor=SimpleSpanProcessor(exporter))


def _run_pipeline(engine: ContextEngine, session_id: str) -> None:
    state = engine.start_session("u1", "tea talk", tenant="acme", session_id=session_id)
    assert engine.observe(state.session_id, "user", SECRET_TURN).queued
    engine.remember("u1", f"Write to {EMAIL} with {KEY} when the tea is out.", tenant="acme")
    engine.flush()
    assert engine.retrieve(QUESTION, tenant="acme", user="u1").items
    engine.route(state, "respond", QUESTION)
    engine.build_context(
        state,
        "respond",
        f"{QUESTION} (mail {EMAIL}, key {KEY})",
        system_prompt=SYSTEM,
        history=(Turn("user", f"I am {EMAIL}"),),
    )


def test_pipeline_stages_are_spans_with_parent_links(
    traced_engine: ContextEngine, exporter: InMemorySpanExporter
) -> None:
    _run_pipeline(traced_engine, "trace-1")
    spans = list(exporter.get_finished_spans())
    names = set(_names(spans))
    assert {
        "engine.observe",
        "engine.remember",
        "engine.retrieve",
        "engine.route",
        "engine.build_context",
        "write.batch",
        "write.extract",
        "write.embed",
        "write.upsert",
        "retrieval.embed",
        "retrieval.search",
        "retrieval.route",
        "l3.search",
        "l3.dense",
        "l3.bm25",
        "retrieval.fusion",
        "retrieval.pool",
        "retrieval.score",
        "retrieval.diversify",
        "retrieval.link",
    } <= names

    # The calls an agent makes are roots; the engine's own nested calls are children.
    assert _parent_name(spans, _one(spans, "engine.observe")) is None
    assert _parent_name(spans, _one(spans, "engine.remember")) is None
    build = _one(spans, "engine.build_context")
    assert _parent_name(spans, build) is None
    routes = [s for s in spans if s.name == "engine.route"]
    assert sorted(str(_parent_name(spans, s)) for s in routes) == ["None", "engine.build_context"]
    retrieves = [s for s in spans if s.name == "engine.retrieve"]
    assert sorted(str(_parent_name(spans, s)) for s in retrieves) == [
        "None",
        "engine.build_context",
    ]

    # Retrieval stages hang under engine.retrieve, or under engine.route when a step's
    # user-memories need is read (route reads them through the reader's retrieve);
    # the store's searches under a route.
    for stage in ("retrieval.embed", "retrieval.search", "retrieval.pool", "retrieval.score"):
        parents = {_parent_name(spans, found) for found in spans if found.name == stage}
        assert "engine.retrieve" in parents
        assert parents <= {"engine.retrieve", "engine.route"}
    for found in (s for s in spans if s.name == "retrieval.route"):
        assert _parent_name(spans, found) == "retrieval.search"
    for found in (s for s in spans if s.name in ("l3.dense", "l3.bm25")):
        assert _parent_name(spans, found) == "l3.search"
        assert "retrieval.route" in _ancestors(spans, found)

    # Ingest runs in the worker threads: a batch is a root, its stages its children.
    for found in (s for s in spans if s.name.startswith("write.") and s.name != "write.batch"):
        assert _parent_name(spans, found) == "write.batch"
        assert found.start_time is not None and found.end_time is not None
        assert found.start_time <= found.end_time
    assert all(_parent_name(spans, s) is None for s in spans if s.name == "write.batch")

    # Ids, counts and names as attributes.
    root_retrieve = next(s for s in retrieves if s.parent is None)
    attributes = dict(root_retrieve.attributes or {})
    assert attributes["tenant"] == "acme"
    assert attributes["collection"] == "memories"
    assert isinstance(attributes["result.items"], int) and attributes["result.items"] >= 1
    assert attributes["result.l3_skipped"] is False
    observe = _one(spans, "engine.observe")
    assert dict(observe.attributes or {})["result.queued"] is True
    assert dict(observe.attributes or {})["role"] == "user"
    assert dict(build.attributes or {})["step_intent"] == "respond"
    tokens = dict(build.attributes or {})["result.total_tokens"]
    assert isinstance(tokens, int) and tokens > 0


def _span_text(found: ReadableSpan) -> str:
    """Everything a span carries, as one string (name, attributes, events, links,
    status, resource)."""
    parts: list[object] = [found.name, dict(found.attributes or {})]
    parts += [(e.name, dict(e.attributes or {})) for e in found.events]
    parts += [dict(link.attributes or {}) for link in found.links]
    parts += [found.status.description, dict(found.resource.attributes)]
    return json.dumps(parts, default=str) + str(found.to_json())


def test_no_secret_or_pii_reaches_a_span(
    engine_opener: Callable[..., ContextEngine], exporter: InMemorySpanExporter
) -> None:
    engine = engine_opener(span_processor=SimpleSpanProcessor(exporter))
    # An e-mail address is a valid session id: an attribute gets a hash of it instead.
    _run_pipeline(engine, f"s-{EMAIL}")
    with pytest.raises(Exception):  # noqa: B017 - any error; its message quotes the text
        engine.observe("no-such-session", "user", SECRET_TURN)
    spans = list(exporter.get_finished_spans())
    assert len(spans) > 20
    fragments = (EMAIL, "example.com", KEY, "sk_live", "4eC39HqLyjWD", "jasmine", "Stripe")
    for found in spans:
        text = _span_text(found)
        for fragment in fragments:
            assert fragment not in text, (found.name, fragment)
    failed = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    assert [s.name for s in failed] == ["engine.observe"]
    assert failed[0].status.description == "NotFoundError"
    assert not failed[0].events
    session_ids = {
        str(dict(s.attributes or {}).get("session_id"))
        for s in spans
        if s.name == "engine.observe" and s.status.status_code is not StatusCode.ERROR
    }
    assert len(session_ids) == 1 and next(iter(session_ids)).startswith("sha256:")


def test_off_by_default_span_is_one_shared_noop(
    engine_opener: Callable[..., ContextEngine], exporter: InMemorySpanExporter
) -> None:
    assert Settings().tracing.exporter == "none"
    assert active() is None
    first, second = span("a", n=1), span("b")
    assert first is second is NOOP_SPAN
    with span("c") as scope:
        scope.set(n=2)  # nothing to do, nothing raised
    finished_span("d", 1, 2)  # nothing recorded, nothing raised

    # A tracing that exists but that no engine was given sees nothing of one that
    # runs untraced (no global provider is involved).
    Tracing.to(exporter)
    engine = engine_opener()
    _run_pipeline(engine, "off-1")
    assert exporter.get_finished_spans() == ()
    assert active() is None


def test_engines_in_one_process_keep_their_spans_apart(
    engine_opener: Callable[..., ContextEngine], tmp_path: Path
) -> None:
    first, second = InMemorySpanExporter(), InMemorySpanExporter()
    one = engine_opener(tmp_path / "one", span_processor=SimpleSpanProcessor(first))
    two = engine_opener(tmp_path / "two", span_processor=SimpleSpanProcessor(second))
    untraced = engine_opener(tmp_path / "three")
    one.retrieve(QUESTION, tenant="acme")
    untraced.retrieve(QUESTION, tenant="acme")
    assert {s.name for s in first.get_finished_spans()} >= {"engine.retrieve", "l3.search"}
    assert second.get_finished_spans() == ()
    two.add_knowledge(["Alarms above 8 mm/s need a technician."], source="manual")
    two.retrieve("alarm", tenant="default", collection="knowledge")
    retrieve = _one(second.get_finished_spans(), "engine.retrieve")
    assert dict(retrieve.attributes or {})["collection"] == "knowledge"
    assert len([s for s in first.get_finished_spans() if s.name == "engine.retrieve"]) == 1


def test_a_failing_span_records_the_error_type_only(exporter: InMemorySpanExporter) -> None:
    tracing = Tracing.to(exporter)
    with pytest.raises(ValueError), tracing.activate(), span("outer", count=3):
        with span("inner") as inner:
            inner.set(phase="two", text=f"mail {EMAIL}")
        raise ValueError(f"bad value {EMAIL}")
    assert active() is None
    spans = list(exporter.get_finished_spans())
    outer, inner_span = _one(spans, "outer"), _one(spans, "inner")
    assert _parent_name(spans, inner_span) == "outer"
    assert outer.status.status_code is StatusCode.ERROR
    assert outer.status.description == "ValueError"
    assert dict(outer.attributes or {}) == {"count": 3, "error.type": "ValueError"}
    assert not outer.events
    assert dict(inner_span.attributes or {})["phase"] == "two"
    assert str(dict(inner_span.attributes or {})["text"]).startswith("sha256:")
    assert EMAIL not in _span_text(outer) + _span_text(inner_span)


def test_safe_attribute_keeps_ids_and_numbers_and_hashes_texts() -> None:
    assert safe_attribute("acme") == "acme"
    assert safe_attribute("order_status.v2") == "order_status.v2"
    assert safe_attribute(3) == 3 and safe_attribute(0.5) == 0.5 and safe_attribute(True) is True
    for text in (EMAIL, "two words", "", "x" * 200, "ünïcode"):
        hashed = safe_attribute(text)
        assert isinstance(hashed, str) and hashed.startswith("sha256:") and len(hashed) == 23
    assert safe_attribute(("a", "b")) is None
    assert safe_attribute(None) is None


def test_tracing_settings(tmp_path: Path) -> None:
    assert Tracing.from_settings(TracingSettings()) is None
    console = Tracing.from_settings(TracingSettings(exporter="console"))
    assert isinstance(console, Tracing)
    console.shutdown()
    assert settings_from_env({"MEMSTRATA_OTEL": "console"}).tracing.exporter == "console"
    assert settings_from_env({}).tracing.exporter == "none"
    with pytest.raises(ConfigError, match=r"tracing\.exporter"):
        settings_from_env({"MEMSTRATA_OTEL": "jaeger"})
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"tracing": {"exporter": "console", "service_name": "svc"}}))
    assert load_settings(path).tracing == TracingSettings("console", "svc")
    with pytest.raises(ConfigError, match="service_name"):
        TracingSettings(service_name=" ")


def test_otlp_needs_its_exporter_package() -> None:
    try:
        importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    except ImportError:
        with pytest.raises(ConfigError, match="otlp"):
            TracingSettings(exporter="otlp")
    else:  # pragma: no cover - the package is not a dependency
        assert TracingSettings(exporter="otlp").exporter == "otlp"


def test_an_engine_shuts_down_its_tracing_on_close(
    engine_opener: Callable[..., ContextEngine], tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    engine = ContextEngine.open(
        Settings(data_dir=tmp_path / "console", tracing=TracingSettings(exporter="console")),
        embedder=engine_opener().parts.embedder,
    )
    with engine:
        assert engine.parts.settings.tracing.exporter == "console"
    traced = engine_opener(tmp_path / "given", span_processor=SimpleSpanProcessor(exporter))
    traced.retrieve(QUESTION)
    traced.close()
    exported = len(exporter.get_finished_spans())
    assert exported > 0
    # close() shut the provider down, and its exporter with it.
    assert exporter.export(exporter.get_finished_spans()[:1]) is SpanExportResult.FAILURE
    assert len(exporter.get_finished_spans()) == exported
