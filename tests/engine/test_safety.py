"""Adversarial: secrets and PII pushed through every write path never reach
Redis (keys, values, the AOF on disk), Qdrant (payloads, files on disk), a log
line or the audit log. Each scan is validated by a harmless marker that must be
found by the same scan, so a scan that sees nothing cannot pass by accident."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.engine import ContextEngine
from memstrata.longterm.points import Filter
from memstrata.testing.disk import valkey_entries

Factory = Callable[..., ContextEngine]

SECRETS = {
    "openai": "sk-proj-Zx81KqLmN0pQrStUvWxYz1234567890abcd",
    "aws": "AKIAIOSFODNN7EXAMPLQ",
    "github": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1Xzc4OSJ9.c2lnbmF0dXJlX3Rlc3Rfb25seQ",
    "password": "hunter2-Corr3ct-Horse",
    "email": "li.wei@example.com",
    "cn_mobile": "13812345678",
    "cn_id": "11010519491231002X",
    "card": "4111111111111111",
}
MARKER = "harmless-marker-7f3a"


def _raw_redis_dump(engine: ContextEngine) -> str:
    client = engine.parts.working_memory.backend.client  # type: ignore[attr-defined]
    return "\n".join(f"{k} {v}" for k, v in valkey_entries(client).items())


def _files_text(root: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", errors="replace") for p in root.rglob("*") if p.is_file()
    )


def _carrier(name: str, secret: str) -> str:
    # A bare password is indistinguishable from any word; it is caught by its label.
    return f"password={secret}" if name == "password" else secret


def _write_everywhere(engine: ContextEngine, secret: str, sid: str) -> None:
    text = f"{MARKER} please use {secret} for the call"
    engine.start_session("u1", text, session_id=sid)
    wm = engine.working(sid)
    wm.put_api_response("crm", {"q": "lookup"}, {"note": text, "nested": [{"password": secret}]})
    wm.put_step_result("step1", {"summary": text, "token": secret})
    wm.append_series("log", [(1.0, text), (2.0, {"v": secret})])
    engine.set_preference("u1", "contact", text, 0.9)
    engine.remember("u1", text)
    engine.flush()
    engine.add_knowledge([text], source="kb", section="s")
    logging.getLogger("memstrata.test").warning("call failed with %s", text)
    try:
        raise RuntimeError(f"upstream said {secret}")
    except RuntimeError:
        logging.getLogger("memstrata.test").exception("tool error")


def test_no_secret_reaches_any_store_or_log(
    engine_factory: Factory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "data"
    engine = engine_factory(data_dir)
    caplog.set_level(logging.INFO)
    for i, (name, secret) in enumerate(SECRETS.items()):
        _write_everywhere(engine, _carrier(name, secret), f"s{i}")
    redis_text = _raw_redis_dump(engine)
    payloads = "\n".join(
        str(dict(r.payload))
        for coll in ("memories", "knowledge")
        for r in engine.parts.longterm.iter_records(coll, Filter(tenant="default"))
    )
    audit_events = engine.audit_events()
    engine.close()
    disk_redis = _files_text(data_dir / "valkey")
    disk_qdrant = _files_text(data_dir / "qdrant")
    logs = caplog.text
    audit_file = (data_dir / "audit.jsonl").read_text()

    for where, blob in {
        "redis": redis_text,
        "redis AOF": disk_redis,
        "qdrant payloads": payloads,
        "qdrant files": disk_qdrant,
        "logs": logs,
    }.items():
        assert MARKER in blob, f"scan of {where} is blind"
        for name, secret in SECRETS.items():
            assert secret not in blob, f"{name} leaked into {where}"
    for secret in SECRETS.values():
        assert secret not in audit_file
    kinds = {event.kind.value for event in audit_events}
    assert {
        "api_key",
        "aws_access_key",
        "github_token",
        "jwt",
        "email",
        "phone",
        "cn_id",
        "bank_card",
    } <= kinds


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        min_size=32,
        max_size=48,
    ),
    prefix=st.sampled_from(["sk-", "sk-proj-", "ghp_"]),
)
def test_generated_keys_never_reach_redis_or_qdrant(
    engine: ContextEngine, body: str, prefix: str
) -> None:
    secret = prefix + body
    sid = f"h{abs(hash(secret)) % 10**9}"
    engine.start_session("u1", f"key {secret}", session_id=sid)
    engine.working(sid).put_api_response("x", {}, {"k": f"key={secret}"})
    engine.remember("u1", f"my key is {secret}")
    engine.flush()
    assert secret not in _raw_redis_dump(engine)
    payloads = [
        dict(r.payload)
        for r in engine.parts.longterm.iter_records("memories", Filter(tenant="default"))
    ]
    assert payloads and secret not in str(payloads)
    assert secret not in engine.session(sid).initial_query
