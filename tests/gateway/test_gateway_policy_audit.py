"""Field policy, JSON values, the audit log and input validation."""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from gateway_samples import CN_ID_1, JWT, OPENAI, VISA, spaced

from memstrata.clock import FakeClock
from memstrata.errors import ConfigError, ValidationError
from memstrata.gateway import (
    Action,
    AuditEvent,
    FieldPolicy,
    InMemoryAuditLog,
    JsonlAuditLog,
    Kind,
    Sanitizer,
    TeeAuditLog,
)

T0 = datetime(2025, 4, 1, 8, 0, tzinfo=UTC)

# --- JSON-like values --------------------------------------------------------------


def test_secret_named_keys_redact_whole_values_and_input_is_not_mutated() -> None:
    payload: dict[str, Any] = {
        "user": {"name": "Ann", "password": 123456, "email": "ann@example.com"},
        "api_key": {"nested": ["whatever", 1]},
        "headers": {"Authorization": "Bearer abc", "Content-Type": "application/json"},
        "tokens": [OPENAI, "plain"],
        "max_tokens": 512,
        "card": int(VISA),
        "ok": True,
        "ratio": 0.5,
        "missing_secret": None,
        "tuple": ("a", CN_ID_1),
    }
    before = copy.deepcopy(payload)
    result = Sanitizer().sanitize_value(payload, location="l2:wm:{s1}:api:x")
    assert payload == before
    out = result.value
    assert out["user"] == {
        "name": "Ann",
        "password": "[REDACTED:password]",
        "email": "[REDACTED:email]",
    }
    assert out["api_key"] == "[REDACTED:secret]"
    assert out["headers"] == {
        "Authorization": "[REDACTED:secret]",
        "Content-Type": "application/json",
    }
    assert out["tokens"] == ["[REDACTED:api_key]", "plain"]
    assert out["max_tokens"] == 512  # names like max_tokens are not secrets
    assert out["card"] == "[REDACTED:bank_card]"  # numbers are checked too
    assert out["ok"] is True and out["ratio"] == 0.5
    assert out["missing_secret"] is None
    assert out["tuple"] == ("a", "[REDACTED:cn_id]")
    paths = {r.field_path for r in result.redactions}
    assert {"$.user.password", "$.api_key", "$.headers.Authorization", "$.tokens[0]"} <= paths


def test_keys_carrying_pii_are_sanitized_without_collisions() -> None:
    out = Sanitizer().value({"a@example.com": 1, "b@example.com": 2}, location="t")
    assert out == {"[REDACTED:email]": 1, "[REDACTED:email]#2": 2}


def test_mapping_proxy_stays_read_only() -> None:
    out = Sanitizer().value(MappingProxyType({"token": "x", "n": 1}), location="t")
    assert isinstance(out, MappingProxyType)
    assert dict(out) == {"token": "[REDACTED:secret]", "n": 1}


def test_value_type_errors_name_the_field() -> None:
    sanitizer = Sanitizer()
    with pytest.raises(ValidationError) as err:
        sanitizer.sanitize_value({"a": {"b": {1, 2}}}, location="t")
    assert err.value.field == "$.a.b"
    with pytest.raises(ValidationError) as err:
        sanitizer.sanitize_value({"a": [b"bytes"]}, location="t")
    assert err.value.field == "$.a[0]"
    with pytest.raises(ValidationError) as err:
        sanitizer.sanitize_value({(1, 2): "x"}, location="t")
    assert err.value.field == "$"
    deep: Any = "leaf"
    for _ in range(10):
        deep = [deep]
    with pytest.raises(ValidationError, match="deeper"):
        Sanitizer(max_depth=5).sanitize_value(deep, location="t")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"text": 123, "location": "t"}, "text"),
        ({"text": None, "location": "t"}, "text"),
        ({"text": "x", "location": ""}, "location"),
        ({"text": "x", "location": 5}, "location"),
        ({"text": "x", "location": "t", "field": 3}, "field"),
    ],
)
def test_text_type_errors_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        Sanitizer().sanitize_text(**kwargs)
    assert err.value.field == field


def test_constructor_rejects_bad_arguments() -> None:
    with pytest.raises(ValidationError) as err:
        Sanitizer(policy={"email": "allow"})  # type: ignore[arg-type]
    assert err.value.field == "policy"
    with pytest.raises(ValidationError):
        Sanitizer(max_depth=0)


def test_empty_text_is_fine() -> None:
    assert Sanitizer().sanitize_text("", location="t").text == ""


# --- policy --------------------------------------------------------------------------


def test_default_policy_redacts_everything() -> None:
    policy = FieldPolicy()
    for kind in Kind:
        if kind is not Kind.FIELD:
            assert policy.action_for(kind) is Action.REDACT


def test_mask_keeps_a_hint_and_is_idempotent() -> None:
    sanitizer = Sanitizer(
        FieldPolicy.from_config(
            {"email": "mask", "phone": "mask", "cn_id": "mask", "bank_card": "mask"}
        )
    )
    text = f"alice@example.com 13812345678 {CN_ID_1} {spaced(VISA)} +1 (555) 123-4567"
    out = sanitizer.text(text, location="t")
    assert out == (
        "a***@example.com 138****5678 1101**********002X 4111 **** **** 1111 +1 (55*) ***-4567"
    )
    assert sanitizer.text(out, location="t") == out
    assert Sanitizer().text(out, location="t") == out  # masked hints are not re-detected


def test_credentials_are_redacted_even_where_pii_is_masked() -> None:
    sanitizer = Sanitizer(FieldPolicy.from_config({"email": "mask"}))
    assert sanitizer.text(f"a@b.io {OPENAI}", location="t") == "a***@b.io [REDACTED:api_key]"


def test_allow_email_only_in_named_field() -> None:
    policy = FieldPolicy.from_config(
        fields={"Support_Contact": {"email": "allow", "phone": "mask"}}
    )
    sanitizer = Sanitizer(policy)
    doc = {
        "support_contact": {"primary": "help@example.com", "tel": "13812345678"},
        "author": "bob@example.com",
    }
    out = sanitizer.value(doc, location="l3:memories")
    assert out == {
        "support_contact": {"primary": "help@example.com", "tel": "138****5678"},
        "author": "[REDACTED:email]",
    }
    assert sanitizer.text("help@example.com", location="t", field="support_contact") == (
        "help@example.com"
    )
    assert sanitizer.text("help@example.com", location="t") == "[REDACTED:email]"


def test_redact_fields_replace_whole_values() -> None:
    sanitizer = Sanitizer(FieldPolicy(redact_fields=frozenset({"notes"})))
    out = sanitizer.value({"notes": {"free": "text"}, "title": "ok"}, location="t")
    assert out == {"notes": "[REDACTED:field]", "title": "ok"}
    assert sanitizer.text("anything at all", location="t", field="Notes") == "[REDACTED:field]"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kinds": {"api_key": "allow"}},
        {"kinds": {"password": "mask"}},
        {"kinds": {Kind.JWT: Action.ALLOW}},
        {"fields": {"debug": {"secret": "allow"}}},
        {"kinds": {"nonsense": "redact"}},
        {"kinds": {"email": "shout"}},
        {"kinds": {"field": "redact"}},
        {"kinds": {1: "redact"}},
        {"kinds": ["email"]},
        {"fields": ["email"]},
        {"fields": {"": {"email": "allow"}}},
        {"redact_fields": "notes"},
        {"redact_fields": frozenset({""})},
    ],
)
def test_invalid_policy_is_a_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        FieldPolicy(**kwargs)


def test_from_config_builds_the_same_policy_from_strings() -> None:
    policy = FieldPolicy.from_config(
        {"email": "mask"}, {"Support_Contact": {"email": "allow"}}, ["notes"]
    )
    assert policy == FieldPolicy(
        kinds={Kind.EMAIL: Action.MASK},
        fields={"support_contact": {Kind.EMAIL: Action.ALLOW}},
        redact_fields=frozenset({"notes"}),
    )
    with pytest.raises(ConfigError, match="credentials are always redacted"):
        FieldPolicy.from_config({"jwt": "allow"})
    with pytest.raises(ConfigError):
        FieldPolicy.from_config(fields=["x"])  # type: ignore[arg-type]


def test_policy_is_frozen_and_normalised() -> None:
    # The constructor itself also accepts (and normalises) plain strings at runtime.
    raw: dict[str, Any] = {"kinds": {"email": "mask"}, "fields": {"A": {"phone": "allow"}}}
    policy = FieldPolicy(**raw)
    assert policy.kinds == {Kind.EMAIL: Action.MASK}
    assert policy.fields["a"] == {Kind.PHONE: Action.ALLOW}
    with pytest.raises(AttributeError):
        policy.kinds = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        policy.kinds[Kind.PHONE] = Action.ALLOW  # type: ignore[index]


# --- audit -----------------------------------------------------------------------------


def _audited(sanitizer_input: str, location: str = "l2:wm:{s1}:api:x") -> InMemoryAuditLog:
    audit = InMemoryAuditLog()
    Sanitizer(audit=audit, clock=FakeClock(T0)).text(sanitizer_input, location=location)
    return audit


def test_audit_events_carry_kind_location_and_span_but_never_the_value() -> None:
    text = f"key {OPENAI} mail alice@example.com"
    audit = _audited(text)
    events = audit.events()
    assert [(e.kind, e.action, e.offset, e.length) for e in events] == [
        (Kind.API_KEY, Action.REDACT, 4, len(OPENAI)),
        (Kind.EMAIL, Action.REDACT, text.index("alice"), len("alice@example.com")),
    ]
    assert all(e.location == "l2:wm:{s1}:api:x" and e.timestamp == T0 for e in events)
    dumped = json.dumps([e.to_dict() for e in events]) + repr(events)
    for fragment in (OPENAI, OPENAI[:12], OPENAI[-8:], "alice", "example.com"):
        assert fragment not in dumped


def test_audit_location_is_itself_sanitized() -> None:
    audit = _audited(f"x {JWT}", location="l2:wm:{bob@example.com}:api")
    assert audit.events()[0].location == "l2:wm:{[REDACTED:email]}:api"


def test_nothing_redacted_nothing_audited() -> None:
    assert len(_audited("ORD-2024-000123 shipped")) == 0


def test_in_memory_audit_log_is_bounded() -> None:
    audit = InMemoryAuditLog(max_events=3)
    sanitizer = Sanitizer(audit=audit)
    for _ in range(5):
        sanitizer.text("a@b.io", location="t")
    assert len(audit) == 3 and audit.dropped == 2
    with pytest.raises(ConfigError):
        InMemoryAuditLog(max_events=0)


def test_in_memory_audit_log_is_thread_safe() -> None:
    audit = InMemoryAuditLog(max_events=100_000)
    sanitizer = Sanitizer(audit=audit)

    def work() -> None:
        for _ in range(200):
            sanitizer.text("a@b.io c@d.io", location="t")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(audit) == 8 * 200 * 2


def test_jsonl_audit_log_appends_without_values(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"pre": "existing"}\n', encoding="utf-8")
    sanitizer = Sanitizer(audit=JsonlAuditLog(path), clock=FakeClock(T0))
    sanitizer.value({"password": "hunter2-secret", "mail": "alice@example.com"}, location="log")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"pre": "existing"}'
    records = [json.loads(line) for line in lines[1:]]
    assert [(r["kind"], r["field_path"]) for r in records] == [
        ("password", "$.password"),
        ("email", "$.mail"),
    ]
    assert records[0]["timestamp"] == T0.isoformat()
    assert "hunter2" not in path.read_text(encoding="utf-8")
    assert "alice" not in path.read_text(encoding="utf-8")
    with pytest.raises(ConfigError):
        JsonlAuditLog(tmp_path)


class _Broken:
    def record(self, event: AuditEvent) -> None:
        raise OSError("disk full")


def test_tee_audit_log_feeds_every_sink_even_when_one_fails() -> None:
    memory = InMemoryAuditLog()
    tee = TeeAuditLog((_Broken(), memory))
    with pytest.raises(OSError):
        Sanitizer(audit=tee).text("a@b.io", location="t")
    assert len(memory) == 1
    with pytest.raises(ConfigError):
        TeeAuditLog(())
