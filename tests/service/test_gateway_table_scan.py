"""Every string field of every operation passes the gateway (issue 23, "What to build" 7).

The test walks the capability table: for each operation it plants credentials and
personal data in every string field of the request (each identifier gets each secret
on its own; free text and JSON values get all of them at once), calls the operation
through the service, and then scans what the service keeps: the Valkey keys and
values, every file under the data directory (the append-only file, ``audit.jsonl``,
qdrant-edge's shards, the manifests) and the captured log. It finds none of them.

A harmless marker travels with every planted text and must be found by the same
scans, so a scan that sees nothing cannot pass by accident.
"""

from __future__ import annotations

import copy
import logging
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, JsonValue

from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import MemstrataError, ValidationError
from memstrata.service.core import Service
from memstrata.service.operations import OPERATIONS
from memstrata.service.server import open_service
from memstrata.testing.disk import files_holding, valkey_entries
from memstrata.validation import ID_MAX_CHARS

MARKER = "harmless-marker-5d2e"
PRIVATE_KEY_BODY = "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu"
CARRIERS: dict[str, str] = {
    "aws": "AKIAIOSFODNN7EXAMPLQ",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1Xzc4OSJ9.c2lnbmF0dXJlX3Rlc3Rfb25seQ",
    "private key": f"-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\n"
    "-----END RSA PRIVATE KEY-----",
    "password (field, '&' in the value)": "passwd=Tr0ub4dor&Zq9x3",
    "password (English prose)": "my password is Kx7#mQ2vLp",
    "password (English prose, qualified)": "the password for the vpn is Hj4%uR9wEe",
    "password (Chinese prose)": "我的密码是Wq5$hN8rTz",
    "password (Chinese, changed)": "密码改成了Ys3!pB6kDm",
    "cn id": "11010519491231002X",
    "email": "li.wei@example.com",
    "phone": "13812345678",
    "card": "4111111111111111",
}
# What must never be found: each secret, and for the password glued to '&' its tail
# (a redaction that stops at the '&' leaks it).
NEEDLES: dict[str, str] = {
    "aws": "AKIAIOSFODNN7EXAMPLQ",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1Xzc4OSJ9",
    "private key": PRIVATE_KEY_BODY,
    "password (field)": "Tr0ub4dor",
    "password tail after '&'": "Zq9x3",
    "password (English prose)": "Kx7#mQ2vLp",
    "password (English prose, qualified)": "Hj4%uR9wEe",
    "password (Chinese prose)": "Wq5$hN8rTz",
    "password (Chinese, changed)": "Ys3!pB6kDm",
    "cn id": "11010519491231002X",
    "email": "li.wei@example.com",
    "phone": "13812345678",
    "card": "4111111111111111",
}
# Field names whose strings are free text (the gateway redacts inside them); every other
# string field of a request is an identifier (the service refuses one holding a secret).
FREE_TEXT = frozenset(
    {
        "initial_query",
        "text",
        "speaker",
        "query",
        "user_input",
        "system_prompt",
        "content",
        "response",
        "purpose",
        "description",
        "question",
        "error",
        "reply",
        "correction",
    }
)


@dataclass(frozen=True)
class Leaf:
    """One string (or JSON) place of a request: its path and what kind of text it is."""

    path: tuple[str, ...]
    """Field names; ``[]`` steps into a list's first item, ``{key}`` / ``{value}`` into
    a mapping's (only) entry."""
    kind: str  # "identifier", "free", "json"
    max_length: int | None


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The type under Annotated and Optional, with the metadata met on the way."""
    metadata: list[Any] = []
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = typing.get_args(annotation)
            metadata.extend(extra)
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation, metadata


def _max_length(metadata: list[Any]) -> int | None:
    for item in metadata:
        limit = getattr(item, "max_length", None)
        if limit is not None:
            return int(limit)
        for inner in getattr(item, "metadata", ()):
            limit = getattr(inner, "max_length", None)
            if limit is not None:
                return int(limit)
    return None


def leaves(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[Leaf]:
    """Every string and JSON place of ``model``, found from its annotations."""
    found: list[Leaf] = []
    for name, info in model.model_fields.items():
        found.extend(_leaves_of(info.annotation, list(info.metadata), (*prefix, name), name))
    return found


def _leaves_of(
    annotation: Any, metadata: list[Any], path: tuple[str, ...], name: str
) -> list[Leaf]:
    inner, more = _unwrap(annotation)
    metadata = metadata + more
    origin = typing.get_origin(inner)
    if inner is JsonValue:
        return [Leaf(path, "json", None)]
    if inner is str:
        kind = "free" if name in FREE_TEXT else "identifier"
        return [Leaf(path, kind, _max_length(metadata))]
    if origin is list:
        (item,) = typing.get_args(inner)
        return _leaves_of(item, [], (*path, "[]"), name)
    if origin is dict:
        _, value = typing.get_args(inner)
        if _unwrap(value)[0] is JsonValue:
            return [Leaf(path, "json", None)]
        keys = Leaf((*path, "{key}"), "identifier", None)
        return [keys, *_leaves_of(value, [], (*path, "{value}"), name)]
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return leaves(inner, path)
    return []  # numbers, booleans, dates, literals: nothing to plant


def planted(payload: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``payload`` with ``value`` at ``path`` (the base holds every list item
    and mapping a path steps into)."""
    out = copy.deepcopy(payload)
    node: Any = out
    for i, step in enumerate(path[:-1]):
        nxt = path[i + 1]
        if step == "[]":
            node = node[0]
            continue
        if step in ("{key}", "{value}"):
            continue
        if nxt in ("{key}", "{value}"):
            (entry,) = node[step].items()
            node[step] = {value: entry[1]} if nxt == "{key}" else {entry[0]: value}
            return out
        if step not in node and nxt == "[]":
            node[step] = []  # a list the base leaves out (forget takes one of three)
        node = node[step]
    last = path[-1]
    if last == "[]":
        node[:] = [value]
    else:
        node[last] = value
    return out


def free_texts(max_length: int | None, tag: str) -> list[str]:
    """All the carriers with the marker and a tag, split into texts within ``max_length``."""
    limit = max_length or 100_000
    texts: list[str] = []
    current = f"{MARKER} {tag}"
    for carrier in CARRIERS.values():
        piece = f"\n{carrier} ."
        if len(current) + len(piece) > limit:
            texts.append(current)
            current = f"{MARKER} {tag}"
        current += piece
    texts.append(current)
    return texts


def json_value(tag: str) -> dict[str, Any]:
    """A JSON object carrying every secret: in values, in a secret-named key's value,
    nested, and as a key."""
    return {
        "note": "\n".join([f"{MARKER} {tag}", *CARRIERS.values()]),
        "password": "Tr0ub4dor&Zq9x3",
        "nested": [{"contact": "li.wei@example.com", "phone": 13812345678}],
        "li.wei@example.com": "owner",
    }


@dataclass
class Scene:
    service: Service
    key: str
    engine: ContextEngine
    data_dir: Path
    sid: str
    user: str
    namespace: str
    card_id: str
    counter: int = 0

    def call(self, name: str, payload: dict[str, Any]) -> Any:
        return self.service.call(name, self.key, payload)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"


def base_payload(name: str, scene: Scene) -> dict[str, Any]:
    """A well-formed request for each operation, addressing the scene's session,
    user, namespace and decision (fresh names where an operation creates one)."""
    sid, user, ns, card = scene.sid, scene.user, scene.namespace, scene.card_id
    payloads: dict[str, dict[str, Any]] = {
        "start_session": {
            "user_id": user,
            "initial_query": "hello",
            "session_id": scene.fresh("scan-s"),
        },
        "get_session": {"session_id": sid},
        "update_session": {
            "session_id": sid,
            "entity_id": "dev-1",
            "pointers": {"report": "doc-1"},
            "api_result": {"status": "success", "data": {"x": 1}},
            "action": {"action_id": "a1", "payload": {"x": 1}},
        },
        "end_session": {"session_id": scene.fresh("no-such-session")},
        "inspect": {"session_id": sid},
        "observe": {"session_id": sid, "role": "user", "text": "hi", "speaker": "Ana"},
        "remember": {"user_id": user, "text": "hi there"},
        "forget": {},  # exactly one of its three fields: the planted one
        "forget_status": {"job_id": "0" * 32},
        "consolidate": {},
        "restore": {"ids": ["00000000-0000-0000-0000-000000000000"]},
        "retrieve": {"query": "hello", "user_id": user},
        "list_memories": {"user_id": user},
        "history": {"fact_id": "00000000-0000-0000-0000-000000000000"},
        "list_users": {},
        "export_memories": {"user_id": user},
        "import_memories": {
            "content": '[{"role": "user", "content": "hi"}]',
            "format": "openai",
            "user_id": user,
        },
        "route": {"session_id": sid, "step_intent": "respond", "query": "hello"},
        "build_context": {
            "session_id": sid,
            "step_intent": "respond",
            "user_input": "hello",
            "system_prompt": "s",
            "model": "gpt-4o",
            "history": [{"role": "user", "content": "earlier", "id": "h1", "covers": ["h0"]}],
            "tool_results": [{"call_id": "c1", "name": "lookup", "content": "ok"}],
        },
        "put_api_response": {
            "session_id": sid,
            "endpoint": "crm",
            "params": {"q": "x"},
            "value": 1,
        },
        "get_api_response": {"session_id": sid, "endpoint": "crm", "params": {"q": "x"}},
        "put_step_result": {"session_id": sid, "step_id": "step1", "fields": {"x": 1}},
        "get_step_result": {"session_id": sid, "step_id": "step1", "reader_step": "step2"},
        "append_series": {
            "session_id": sid,
            "metric": "m",
            "points": [{"timestamp": 1.0, "value": 1}],
        },
        "read_series": {"session_id": sid, "metric": "m"},
        "add_pending": {"session_id": sid, "task_ids": ["t1"]},
        "complete_pending": {"session_id": sid, "task_ids": ["t-none"]},
        "ingest_documents": {
            "documents": [{"name": f"{scene.fresh('doc')}.md", "text": "# Doc\n\nBody text."}]
        },
        "confirm_knowledge": {"query": "q?", "response": "a", "source": "s"},
        "create_namespace": {"namespace": scene.fresh("scan-ns"), "purpose": "p", "ttl_s": 600},
        "list_namespaces": {},
        "request_access": {"namespace": ns, "purpose": "p"},
        "access_requests": {"namespace": ns},
        "grant_access": {"namespace": ns, "agent": "peer"},
        "revoke_access": {"namespace": ns, "agent": "peer"},
        "put_shared": {"namespace": ns, "item_id": "i", "value": 1},
        "shared_items": {},
        "store_put": {
            "namespace": ["notes", user],
            "key": "k",
            "value": {"text": "hi"},
            "index": ["text"],
        },
        "store_get": {"namespace": ["notes", user], "key": "k"},
        "store_delete": {"namespace": ["notes", user], "key": "k-none"},
        "store_search": {"namespace_prefix": ["notes"], "query": "hi", "filter": {"text": "hi"}},
        "store_list_namespaces": {"prefix": ["notes"], "suffix": ["*"]},
        "create_key": {"agent": scene.fresh("scan-agent"), "role": "reader"},
        "revoke_key": {"key_id": "0123456789abcdef"},
        "list_keys": {},
        "register_tool": {
            "name": "scan_tool",
            "description": "d",
            "parameters": {"type": "object"},
            "alternatives": ["other_tool"],
            "bound": {"device": "l1.last_entity_id"},
        },
        "list_tools": {},
        "register_policy": {
            "intent": "respond",
            "evidence": ["*"],
            "slots": [{"name": "s", "sources": ["l1.user_id"], "question": "which?"}],
            "tool": "scan_tool",
            "tool_params": {"device": "l1.last_entity_id"},
        },
        "decide": {
            "session_id": sid,
            "step_intent": "respond",
            "query": "hello",
            "question": "hello?",
            "given": {"x": 1},
        },
        "call_tool": {"card_id": card, "tool": "scan_tool", "params": {"x": 1}},
        "confirm_tool": {"pending_id": card},
        "report_tool_result": {"card_id": card, "tool": "scan_tool", "ok": False, "error": "e"},
        "check_reply": {"card_id": card, "reply": "fine"},
        "trace_cards": {"session_id": sid},
        "feedback": {
            "card_id": card,
            "kind": "corrected",
            "correction": "no",
            "used": ["m1"],
            "wrong": ["m2"],
        },
        "feedback_report": {},
        "health_report": {"since": "1h"},
        "list_dead_letters": {"after": "1-0", "limit": 10},
        "replay_dead_letter": {"dead_id": "1-0"},
    }
    return payloads[name]


def _leak_report(blob: str, needle: str) -> str:
    at = blob.find(needle)
    return blob[max(0, at - 160) : at + len(needle) + 40].replace("\n", "\\n")


@pytest.fixture
def scene(engine_opener: Callable[..., ContextEngine], tmp_path: Path) -> Iterator[Scene]:
    data_dir = tmp_path / "data"
    engine = engine_opener(data_dir)
    running = open_service(Settings(data_dir=data_dir), engine=engine)
    assert running.admin_key_file is not None
    key = running.admin_key_file.read_text().strip()
    service = running.service
    service.call(
        "start_session", key, {"user_id": "scan-u", "initial_query": "hi", "session_id": "scan-s"}
    )
    service.call("create_namespace", key, {"namespace": "scan-ns", "purpose": "p", "ttl_s": 600})
    service.call("register_tool", key, {"name": "scan_tool", "description": "d", "parameters": {}})
    card = service.call("decide", key, {"session_id": "scan-s", "step_intent": "respond"})
    yield Scene(service, key, engine, data_dir, "scan-s", "scan-u", "scan-ns", card.card_id)
    running.close()


def test_the_walk_covers_every_string_field_of_every_operation() -> None:
    """The walker sees every field that can carry text; a new request field is planted
    without touching this test."""
    counted = {op.name: leaves(op.request) for op in OPERATIONS}
    assert sum(len(found) for found in counted.values()) >= 100
    assert {leaf.kind for found in counted.values() for leaf in found} == {
        "identifier",
        "free",
        "json",
    }
    # Spot checks of the places the issue found raw in the AOF and the audit log.
    assert Leaf(("purpose",), "free", 500) in counted["create_namespace"]
    assert Leaf(("purpose",), "free", 500) in counted["request_access"]
    assert Leaf(("entity_id",), "identifier", ID_MAX_CHARS) in counted["update_session"]


def test_no_planted_secret_reaches_any_store_or_log(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    accepted_identifiers: list[str] = []
    planted_calls = 0
    for op in OPERATIONS:
        for leaf in leaves(op.request):
            where = f"{op.name}.{'.'.join(leaf.path)}"
            if leaf.kind == "identifier":
                values: list[Any] = list(CARRIERS.values())
            elif leaf.kind == "free":
                values = free_texts(leaf.max_length, f"[{where}]")
            else:
                values = [json_value(f"[{where}]")]
            for value in values:
                planted_calls += 1
                payload = planted(base_payload(op.name, scene), leaf.path, value)
                try:
                    scene.call(op.name, payload)
                except ValidationError:
                    continue  # refused: nothing was kept
                except MemstrataError:
                    pass  # not found, conflict...: it may still have written something
                if leaf.kind == "identifier":
                    accepted_identifiers.append(where)
    # A log line carrying everything, as an error handler might write one.
    logging.getLogger("memstrata.test").warning("call failed: %s", free_texts(None, "[log]")[0])
    scene.engine.flush()

    entries = valkey_entries(scene.engine.parts.working_backend.client)
    valkey_text = "\n".join(f"{k} {v}" for k, v in entries.items())
    scene.engine.close()  # the AOF and the shards on disk are complete once closed
    files = {
        str(p.relative_to(scene.data_dir)): p
        for p in scene.data_dir.rglob("*")
        if p.is_file() and not p.is_socket()
    }
    disk = {
        name: path.read_bytes().decode("utf-8", errors="replace") for name, path in files.items()
    }
    logs = caplog.text

    # The scans are not blind: stored free text and the log line are seen by them.
    assert MARKER in valkey_text and MARKER in logs
    assert any(MARKER in text for name, text in disk.items() if "appendonly" in name)
    assert any(MARKER in text for name, text in disk.items() if name.startswith("qdrant"))
    assert (scene.data_dir / "audit.jsonl").is_file()

    leaks: list[str] = []
    for label, needle in NEEDLES.items():
        if needle in valkey_text:
            leaks.append(f"{label} in Valkey: ...{_leak_report(valkey_text, needle)}")
        for name in files_holding(scene.data_dir, needle):
            leaks.append(f"{label} in {name}: ...{_leak_report(disk.get(name, ''), needle)}")
        if needle in logs:
            leaks.append(f"{label} in the log: ...{_leak_report(logs, needle)}")
    assert not leaks, f"{len(leaks)} leaks after {planted_calls} planted calls:\n" + "\n".join(
        leaks
    )
    # Identifiers are never stored with a secret: each one was refused.
    assert not accepted_identifiers, sorted(set(accepted_identifiers))
