"""What a client needs from the service: wait for its writes, budget any model, make keys
for a new tenant while the service runs (issue 23, "Operations a client needs")."""

from __future__ import annotations

import json
import uuid

import pytest
from tests.service.support import CallFailed, RunningServer, cli, rest_call


def _session(server: RunningServer, tenant: str) -> tuple[str, str]:
    call = rest_call(server, server.admin_keys[tenant])
    user, session = f"u-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    call("start_session", {"user_id": user, "initial_query": "hello", "session_id": session})
    return user, session


def test_flush_waits_until_a_queued_write_is_searchable(server: RunningServer) -> None:
    call = rest_call(server, server.admin_keys["acme"])
    user = f"u-{uuid.uuid4().hex[:8]}"
    receipt = call("remember", {"user_id": user, "text": "My locker code is 4471."})
    assert receipt["queued"] and not receipt.get("episodes")  # answered before it is stored
    assert call("flush", {"timeout_s": 60}) == {"flushed": True}
    found = call("retrieve", {"query": "what is my locker code", "user_id": user, "k": 3})
    assert any("4471" in item["text"] for item in found["items"] + found["below_threshold"])
    with pytest.raises(CallFailed) as err:
        call("flush", {"timeout_s": 0})
    assert err.value.body["field"] == "timeout_s"


@pytest.mark.parametrize(
    "model", ["claude-sonnet-4-5", "deepseek-chat", "qwen-max", "llama3", "gemini-2.5-flash"]
)
def test_build_context_budgets_the_common_model_families(server: RunningServer, model: str) -> None:
    call = rest_call(server, server.admin_keys["acme"])
    _, session = _session(server, "acme")
    built = call(
        "build_context",
        {
            "session_id": session,
            "step_intent": "respond",
            "system_prompt": "You help.",
            "user_input": "What do you know about me?",
            "model": model,
        },
    )
    assert built["messages"] and built["total_tokens"] > 0


def test_a_model_of_unknown_window_needs_window_tokens_over_the_service(
    server: RunningServer,
) -> None:
    call = rest_call(server, server.admin_keys["acme"])
    _, session = _session(server, "acme")
    request = {
        "session_id": session,
        "step_intent": "respond",
        "system_prompt": "You help.",
        "user_input": "hello",
        "model": "my-local-model",
    }
    with pytest.raises(CallFailed) as err:
        call("build_context", request)
    error = err.value.body
    # The hint names the request's own field, not a Python class.
    assert error["field"] == "window_tokens" and "ContextBudget" not in error["message"]
    built = call("build_context", {**request, "window_tokens": 4_096 + 2_048 + 2_000})
    assert sum(s["budget"] for s in built["sections"]) <= 2_000


def test_keys_create_over_the_service_makes_a_key_of_the_tenant_named(
    server: RunningServer,
) -> None:
    tenant = f"t{uuid.uuid4().hex[:8]}"
    env = {"MEMSTRATA_API_KEY": server.admin_keys["default"]}
    made = cli(
        "keys", "create", "--url", server.url, "--tenant", tenant, "--agent", "bot",
        "--role", "writer", env=env,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    assert created["info"]["tenant"] == tenant and created["info"]["role"] == "writer"
    # The new tenant's key works at once, in its own tenant.
    call = rest_call(server, created["key"])
    user = f"u-{uuid.uuid4().hex[:8]}"
    call("remember", {"user_id": user, "text": "I live in Lisbon.", "wait": True})
    # A tenant's own admin key cannot make keys for another tenant: refused, naming why.
    refused = cli(
        "keys", "create", "--url", server.url, "--tenant", "globex", "--agent", "x",
        "--role", "reader", env={"MEMSTRATA_API_KEY": server.admin_keys["acme"]},
    )  # fmt: skip
    assert refused.returncode != 0
    assert "tenant" in refused.stdout + refused.stderr
