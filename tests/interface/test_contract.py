"""One contract, three places: every operation of :class:`memstrata.interface.Memory`
through the engine in process, the service in process and a real service over HTTP,
with the same calls and the same assertions (issue 34: the engine and the client had
different names and result types, so code written for one failed on the other)."""

from __future__ import annotations

import uuid

import anyio
import pytest
from tests.interface.conftest import Backend

from memstrata.client import AsyncClient
from memstrata.errors import NotFoundError, ValidationError
from memstrata.interface import AsyncMemory, Memory
from memstrata.service.inprocess import AsyncServiceTransport


def fresh(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def test_a_session_opens_reads_and_ends(backend: Backend) -> None:
    memory: Memory = backend.memory
    user, sid = fresh("u"), fresh("s")
    opened = memory.start_session(user, "plan a trip", session_id=sid)
    assert (opened.session_id, opened.user_id, opened.current_step) == (sid, user, 0)
    assert opened.initial_query == "plan a trip"
    now = memory.session(sid)
    assert (now.session_id, now.user_id, now.started_at) == (sid, user, opened.started_at)
    ended = memory.end_session(sid)
    assert ended.session_id == sid
    with pytest.raises(NotFoundError):
        memory.session(sid)
    with pytest.raises(NotFoundError):
        memory.session(fresh("never"))


def test_an_observed_turn_is_retrieved_once_flushed(backend: Backend) -> None:
    memory = backend.memory
    user, sid = fresh("u"), fresh("s")
    memory.start_session(user, "hello", session_id=sid)
    receipt = memory.observe(sid, "user", "My dog is called Biscuit and he loves the beach.")
    assert receipt.queued and receipt.error is None and len(receipt.episode_ids) == 1
    memory.flush(timeout_s=60)
    found = memory.retrieve("what is my dog called", user_id=user, k=5)
    assert not found.l3_skipped and found.l3_skip_reason is None
    assert receipt.episode_ids[0] in {item.id for item in found.items}
    assert any("Biscuit" in item.text for item in found.items)
    # Another user's retrieval holds none of it.
    other = memory.retrieve("what is my dog called", user_id=fresh("u"), k=5)
    assert all("Biscuit" not in item.text for item in other.items)


def test_a_remembered_text_is_retrieved_with_its_facts(backend: Backend) -> None:
    memory = backend.memory
    user = fresh("u")
    receipt = memory.remember(user, "I live in Hangzhou.")
    assert receipt.queued and len(receipt.episode_ids) == 1
    memory.flush()
    found = memory.retrieve("where do I live", user_id=user)
    texts = [item.text for item in found.items]
    assert any("Hangzhou" in text for text in texts), texts
    episode = next(item for item in found.items if item.id == receipt.episode_ids[0])
    assert episode.kind == "episode" and not episode.low_confidence


def test_route_and_build_context_carry_the_users_memory(backend: Backend) -> None:
    memory = backend.memory
    user, sid = fresh("u"), fresh("s")
    memory.remember(user, "I am allergic to peanuts.")
    memory.flush()
    memory.start_session(user, "dinner ideas", session_id=sid)
    bundle = memory.route(sid, "respond")
    assert (bundle.session_id, bundle.step_intent, bundle.step) == (sid, "respond", 0)
    assert not bundle.l3_skipped and bundle.items
    recognized = memory.route(sid, None, query="what should I cook tonight?")
    assert recognized.session_id == sid and recognized.step_intent
    built = memory.build_context(
        sid, "respond", "what should I avoid eating?", system_prompt="You are a cook."
    )
    assert 0 < built.total_tokens <= built.available_tokens and built.exact
    sections = {item.section for item in built.admitted}
    assert "memory" in sections, sections


def test_a_confirmed_answer_is_learned_once(backend: Backend) -> None:
    memory = backend.memory
    question = f"what are the opening hours of branch {fresh('b')}?"
    first = memory.confirm_knowledge(question, "Nine to five.", source="support")
    again = memory.confirm_knowledge(question, "Nine to five.", source="support")
    assert isinstance(first, str) and first and again == first


def test_the_item_store_puts_gets_searches_lists_and_deletes(backend: Backend) -> None:
    memory = backend.memory
    ns, other = ["notes", fresh("a")], ["notes", fresh("b")]
    assert memory.store_get(ns, "diet") is None
    put = memory.store_put(ns, "diet", {"text": "allergic to peanuts", "n": 3})
    assert (list(put.namespace), put.key) == (ns, "diet")
    assert put.value == {"text": "allergic to peanuts", "n": 3}
    memory.store_put(ns, "city", {"text": "lives in Hangzhou", "n": 7}, index=["text"])
    memory.store_put(other, "hidden", {"text": "peanut butter"}, searchable=False)
    got = memory.store_get(ns, "diet")
    assert got is not None and got.value["n"] == 3 and got.created_at == put.created_at
    assert {i.key for i in memory.store_search(namespace_prefix=ns)} == {"diet", "city"}
    assert [i.key for i in memory.store_search(namespace_prefix=ns, filter={"n": 7})] == ["city"]
    hits = memory.store_search(namespace_prefix=["notes"], query="food allergy", limit=5)
    assert hits[0].key == "diet" and hits[0].score is not None
    assert "hidden" not in {h.key for h in hits}
    assert tuple(ns) in memory.store_list_namespaces(prefix=["notes"])
    assert memory.store_list_namespaces(suffix=[ns[1]]) == [tuple(ns)]
    assert memory.store_delete(ns, "diet") is True
    assert memory.store_delete(ns, "diet") is False
    assert memory.store_get(ns, "diet") is None


def test_a_decision_writes_a_card_that_the_reply_check_and_feedback_follow(
    backend: Backend,
) -> None:
    memory = backend.memory
    tool = fresh("lookup_")
    backend.register_tool(
        tool, "Look up an order", {"type": "object", "properties": {"order_id": {"type": "string"}}}
    )
    assert tool in {t.name for t in memory.tools()}
    user, sid = fresh("u"), fresh("s")
    memory.remember(user, "My favourite colour is teal.")
    memory.flush()
    memory.start_session(user, "hi", session_id=sid)
    decision = memory.decide(sid, question="what is my favourite colour?")
    assert decision.card_id and decision.route in ("answer", "tool", "ask")
    (card,) = memory.trace_cards(session_id=sid)
    assert (card.id, card.session_id, card.route) == (decision.card_id, sid, decision.route)
    checked = memory.check_reply(decision.card_id, "Your favourite colour is teal.")
    assert checked.consistent and not checked.conflicts
    receipt = memory.feedback(decision.card_id, "confirmed")
    assert (receipt.card_id, receipt.kind, receipt.queued) == (decision.card_id, "confirmed", True)
    memory.flush()
    (after,) = memory.trace_cards(session_id=sid)
    assert after.reply == "Your favourite colour is teal." and after.consistency == "consistent"


def test_a_forget_job_deletes_the_user(backend: Backend) -> None:
    memory = backend.memory
    user = fresh("u")
    memory.remember(user, "My locker code is in the blue notebook.")
    memory.flush()
    assert memory.retrieve("locker code", user_id=user).items
    job = memory.start_forget(user_id=user)
    assert job.kind == "user" and job.state in ("queued", "running", "done")
    done = memory.forget_status(job.job_id, timeout_s=120)
    assert (done.job_id, done.state, done.error) == (job.job_id, "done", None)
    assert not memory.retrieve("locker code", user_id=user).items
    with pytest.raises(NotFoundError):
        memory.forget_status(fresh("job"))


def test_a_shared_namespace_and_the_upkeep_reads(backend: Backend) -> None:
    memory = backend.memory
    name = fresh("ns")
    created = memory.create_namespace(name, owner="contract", purpose="the trip", ttl_s=600)
    assert (created.owner, created.purpose, created.ttl_s) == ("contract", "the trip", 600)
    assert list(memory.restore([str(uuid.uuid4())])) == []
    assert list(memory.dead_letters(limit=10)) == []


def test_bad_input_is_the_same_typed_error_everywhere(backend: Backend) -> None:
    memory = backend.memory
    sid = fresh("s")
    memory.start_session(fresh("u"), "hi", session_id=sid)
    with pytest.raises(ValidationError) as bad_role:
        memory.observe(sid, "robot", "hello")  # type: ignore[arg-type]
    assert bad_role.value.field == "role"
    with pytest.raises(ValidationError):
        memory.store_put([], "k", {"text": "no namespace"})


def test_the_async_client_is_the_same_interface_awaited(backend: Backend) -> None:
    """AsyncMemory: the same calls, awaited, give the same answers (the engine has no
    async twin; its place runs the async client over the service in process)."""
    if backend.name == "http":
        client = AsyncClient(backend.url, backend.key)
    else:
        client = AsyncClient(transport=AsyncServiceTransport(backend.service))

    async def run(memory: AsyncMemory) -> None:
        user, sid = fresh("u"), fresh("s")
        opened = await memory.start_session(user, "hello", session_id=sid)
        assert (opened.session_id, opened.user_id) == (sid, user)
        receipt = await memory.remember(user, "My sister lives in Lisbon.")
        await memory.flush()
        found = await memory.retrieve("where does my sister live", user_id=user)
        assert receipt.episode_ids[0] in {item.id for item in found.items}
        ns = ["async", fresh("n")]
        await memory.store_put(ns, "k", {"text": "kept"})
        got = await memory.store_get(ns, "k")
        assert got is not None and got.value == {"text": "kept"}
        assert await memory.store_delete(ns, "k") is True
        with pytest.raises(NotFoundError):
            await memory.session(fresh("never"))
        await memory.aclose()

    anyio.run(run, client)
