"""Listing through a running ``memstrata serve`` (issue 35, item 2): the CLI's
``list``, ``history`` and ``users`` with ``--url``, under the key's tenant, and a key
of a lower clearance sees less (as ``retrieve`` does)."""

from __future__ import annotations

import json
import uuid

import pytest
from tests.service.support import CallFailed, RunningServer, cli, rest_call


def test_list_history_and_users_through_the_service_under_the_keys_clearance(
    server: RunningServer,
) -> None:
    tag = uuid.uuid4().hex[:8]
    tenant, user = f"list{tag}", f"u-{tag}"
    operator = rest_call(server, server.admin_keys["default"])
    admin_key = str(
        operator("create_key", {"agent": "a", "tenant": tenant, "role": "admin"})["key"]
    )
    admin = rest_call(server, admin_key)
    low_key = str(
        admin("create_key", {"agent": "low", "role": "reader", "clearance": "low"})["key"]
    )
    for text in ("I live in Berlin.", "I moved to Paris."):
        admin("remember", {"user_id": user, "text": text, "wait": True})
    env = {"MEMSTRATA_API_KEY": admin_key, "MEMSTRATA_URL": server.url}

    listed = cli("list", "--user", user, "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    items = json.loads(listed.stdout)["items"]
    assert [i["kind"] for i in items].count("episode") == 2
    paris = next(i for i in items if i["kind"] == "fact" and i["fact"]["value"] == "Paris")
    assert paris["status"] == "current" and paris["episodes"][0]["text"] == "I moved to Paris."
    facts = cli("list", "--user", user, "--kind", "fact", "--page-size", "1", "--json", env=env)
    page = json.loads(facts.stdout)
    assert len(page["items"]) == 1 and page["next_page"]

    history = cli("history", paris["id"], "--json", env=env)
    assert history.returncode == 0, history.stderr
    versions = json.loads(history.stdout)["versions"]
    assert [v["fact"]["value"] for v in versions] == ["Berlin", "Paris"]
    assert [v["status"] for v in versions] == ["superseded", "current"]

    users = cli("users", "--json", env=env)
    assert [u["user"] for u in json.loads(users.stdout)["users"]] == [user]

    # A low-clearance key of the same tenant: the memories are medium-level context.
    low = rest_call(server, low_key)
    assert low("list_memories", {"user_id": user})["items"] == []
    assert low("list_users", {})["users"] == []
    with pytest.raises(CallFailed) as hidden:
        low("history", {"fact_id": paris["id"]})
    assert hidden.value.code == "not_found"
    # Another tenant's key finds nothing of this tenant's user.
    other = rest_call(server, server.admin_keys["acme"])
    assert other("list_memories", {"user_id": user})["items"] == []
