"""The LangGraph store adapter: langgraph's own store API and a small graph, in
process (an engine) and against a running ``memstrata serve`` (a client)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from tests.service.support import SESSION_TIMEOUT_S, RunningServer

from memstrata.client import Client
from memstrata.engine import ContextEngine
from memstrata.errors import ValidationError
from memstrata.integrations.langgraph import MemstrataStore
from memstrata.service.inprocess import ServiceTransport
from memstrata.service.local import local_caller, local_service


@pytest.fixture(params=["engine", "inprocess", "service"])
def store(
    request: pytest.FixtureRequest, engine_opener: Callable[..., ContextEngine]
) -> Iterator[MemstrataStore]:
    if request.param == "engine":
        yield MemstrataStore(engine_opener(), tenant="acme")
        return
    if request.param == "inprocess":
        engine = engine_opener()
        service = local_service(engine, local_caller("acme"))
        with Client(transport=ServiceTransport(service)) as local:
            yield MemstrataStore(local)
        return
    server: RunningServer = request.getfixturevalue("server")
    with Client(server.url, server.admin_keys["acme"], timeout_s=SESSION_TIMEOUT_S) as client:
        yield MemstrataStore(client)


def _exercise(store: BaseStore) -> None:
    tag = uuid.uuid4().hex[:8]
    ns = ("memories", f"alice-{tag}")
    other = ("memories", f"bob-{tag}")
    assert store.get(ns, "diet") is None

    store.put(ns, "diet", {"text": "Alice is allergic to peanuts", "kind": "health", "n": 3})
    store.put(ns, "city", {"text": "Alice lives in Hangzhou", "kind": "place", "n": 7})
    store.put(other, "diet", {"text": "Bob is vegetarian", "kind": "health", "n": 1})
    first = store.get(ns, "diet")
    assert first is not None and first.value["n"] == 3 and first.namespace == ns

    # A put of an existing key replaces it; created_at stays, updated_at moves.
    store.put(ns, "diet", {"text": "Alice is allergic to peanuts and shellfish", "kind": "health"})
    latest = store.get(ns, "diet")
    assert latest is not None and "shellfish" in latest.value["text"] and "n" not in latest.value
    assert latest.created_at == first.created_at and latest.updated_at >= first.updated_at

    # Search: by prefix, by filter, by query (hybrid), with limit and offset.
    assert {i.key for i in store.search(ns)} == {"diet", "city"}
    assert {i.namespace for i in store.search(("memories",)) if tag in i.namespace[1]} == {
        ns,
        other,
    }
    assert [i.key for i in store.search(ns, filter={"kind": "place"})] == ["city"]
    assert [i.key for i in store.search(ns, filter={"n": {"$gt": 5}})] == ["city"]
    hits = store.search(ns, query="what food allergies does she have", limit=1)
    assert [h.key for h in hits] == ["diet"] and hits[0].score is not None
    assert len(store.search(ns, limit=1, offset=1)) == 1
    bob = store.search(("memories",), query="vegetarian", filter={"kind": "health"})
    assert bob and bob[0].namespace == other

    # list_namespaces: prefix, suffix (wildcards), max_depth.
    listed = store.list_namespaces(prefix=("memories",))
    assert ns in listed and other in listed
    assert store.list_namespaces(suffix=(f"alice-{tag}",)) == [ns]
    assert store.list_namespaces(prefix=("*", f"bob-{tag}")) == [other]
    assert ("memories",) in store.list_namespaces(max_depth=1)

    # Delete: gone from get and from every search.
    store.delete(ns, "diet")
    assert store.get(ns, "diet") is None
    assert all(i.key != "diet" for i in store.search(ns))
    assert all(i.key != "diet" for i in store.search(ns, query="peanuts allergy"))

    # Unindexed items: found by namespace, never by query.
    store.put(ns, "raw", {"text": "zucchini gratin recipe"}, index=False)
    assert "raw" in {i.key for i in store.search(ns)}
    assert "raw" not in {i.key for i in store.search(ns, query="zucchini gratin recipe")}


def test_the_store_api(store: MemstrataStore) -> None:
    _exercise(store)


def test_the_async_store_api(store: MemstrataStore) -> None:
    async def run() -> None:
        ns = ("notes", uuid.uuid4().hex[:8])
        await store.aput(ns, "k", {"text": "the launch moved to Friday"})
        got = await store.aget(ns, "k")
        assert got is not None and got.value == {"text": "the launch moved to Friday"}
        found = await store.asearch(ns, query="when is the launch")
        assert [i.key for i in found] == ["k"]
        assert ns in await store.alist_namespaces(prefix=("notes",))
        await store.adelete(ns, "k")
        assert await store.aget(ns, "k") is None

    asyncio.run(run())


def test_values_pass_the_gateway(store: MemstrataStore) -> None:
    ns = ("profile", uuid.uuid4().hex[:8])
    store.put(ns, "contact", {"email": "alice@example.com", "password": "hunter2-secret"})
    got = store.get(ns, "contact")
    assert got is not None
    assert "alice@example.com" not in str(got.value) and "hunter2" not in str(got.value)
    # Identifiers are kept as given, so one holding a secret or PII is refused, not stored.
    for bad_ns, bad_key in (
        (("users", "13800138000"), "k"),
        (ns, "sk-live-abcdef0123456789abcd"),
    ):
        with pytest.raises(Exception) as refused:
            store.put(bad_ns, bad_key, {"x": 1})
        assert isinstance(refused.value, ValidationError), refused.value
        assert refused.value.field in ("namespace[1]", "key")


class State(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def _remember(state: State, runtime: Runtime[None]) -> dict[str, object]:
    assert runtime.store is not None
    runtime.store.put(("memories", state["user"]), uuid.uuid4().hex, {"text": state["fact"]})
    return {}


def _recall(state: State, runtime: Runtime[None]) -> dict[str, object]:
    assert runtime.store is not None
    hits = runtime.store.search(("memories", state["user"]), query="what is the user allergic to")
    return {"recalled": [h.value["text"] for h in hits]}


def test_a_langgraph_graph_remembers_and_recalls(store: MemstrataStore) -> None:
    graph = StateGraph(State)
    graph.add_node("remember", _remember)
    graph.add_node("recall", _recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=store)
    user = f"carol-{uuid.uuid4().hex[:8]}"
    out = app.invoke({"user": user, "fact": "Carol is allergic to penicillin", "recalled": []})
    assert out["recalled"] == ["Carol is allergic to penicillin"]
    # Persisted: another store on the same backend reads it.
    assert [i.value["text"] for i in store.search(("memories", user))] == out["recalled"]


def test_another_tenant_cannot_read_an_item(server: RunningServer) -> None:
    ns = ("secrets", uuid.uuid4().hex[:8])
    with (
        Client(server.url, server.admin_keys["acme"], timeout_s=SESSION_TIMEOUT_S) as acme_client,
        Client(
            server.url, server.admin_keys["globex"], timeout_s=SESSION_TIMEOUT_S
        ) as globex_client,
    ):
        acme, globex = MemstrataStore(acme_client), MemstrataStore(globex_client)
        acme.put(ns, "plan", {"text": "acquire globex in Q3"})
        assert acme.get(ns, "plan") is not None
        assert globex.get(ns, "plan") is None
        assert globex.search(ns) == [] and globex.search(ns, query="acquire globex") == []
        assert ns not in globex.list_namespaces(prefix=("secrets",))
        globex.delete(ns, "plan")  # a no-op in globex's own store
        assert acme.get(ns, "plan") is not None


def test_the_engine_store_is_persistent(engine_opener: Callable[..., ContextEngine]) -> None:
    from pathlib import Path

    engine = engine_opener()
    data_dir = Path(engine.settings.data_dir)
    MemstrataStore(engine).put(("a",), "k", {"text": "kept across restarts"})
    engine.close()
    again = MemstrataStore(engine_opener(data_dir))
    got = again.get(("a",), "k")
    assert got is not None and got.value == {"text": "kept across restarts"}


def test_the_store_is_written_once_against_the_interface() -> None:
    """No fork on the backend's type (issue 34: five ``isinstance(backend, Client)``);
    a client given a tenant is refused, since it acts for its key's."""
    import inspect

    import memstrata.integrations.langgraph as module

    source = inspect.getsource(module)
    assert "isinstance(backend, Client" not in source and "import Client" not in source
    with Client("http://127.0.0.1:9") as client, pytest.raises(ValidationError) as refused:
        MemstrataStore(client, tenant="acme")
    assert refused.value.field == "tenant"
    with pytest.raises(TypeError):
        MemstrataStore(object())  # type: ignore[arg-type]
