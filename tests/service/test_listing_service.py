"""Listing, export and import through a running ``memstrata serve`` (issue 35, items
1 and 2): the CLI's ``list``, ``history``, ``users``, ``export`` and ``import`` with
``--url``, under the key's tenant; a key of a lower clearance sees less (as
``retrieve`` does); a file of one tenant imported by another lands in the importer's."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

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


def test_export_of_one_tenant_imported_by_another_lands_in_the_importers_tenant(
    server: RunningServer, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    operator = rest_call(server, server.admin_keys["default"])
    keys = {
        t: str(operator("create_key", {"agent": "a", "tenant": t, "role": "admin"})["key"])
        for t in (f"ta{tag}", f"tb{tag}")
    }
    key_a, key_b = keys[f"ta{tag}"], keys[f"tb{tag}"]
    rest_call(server, key_a)("remember", {"user_id": "u", "text": "I live in Oslo.", "wait": True})
    env_a = {"MEMSTRATA_API_KEY": key_a, "MEMSTRATA_URL": server.url}
    env_b = {"MEMSTRATA_API_KEY": key_b, "MEMSTRATA_URL": server.url}
    file = tmp_path / "u.jsonl"
    done = cli("export", "--user", "u", "--out", str(file), "--json", env=env_a)
    assert done.returncode == 0, done.stderr
    before_a = rest_call(server, key_a)("list_memories", {"user_id": "u"})["items"]

    imported = cli("import", str(file), "--json", env=env_b)
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["remapped"] is True and report["added"] == 2
    after_b = rest_call(server, key_b)("list_memories", {"user_id": "u"})["items"]
    # The same memories (an episode and its fact share an instant: their order is by
    # id, and the ids differ).
    assert sorted(i["text"] for i in after_b) == sorted(i["text"] for i in before_a)
    assert [i["at"] for i in after_b] == [i["at"] for i in before_a]
    assert not {i["id"] for i in after_b} & {i["id"] for i in before_a}
    assert rest_call(server, key_a)("list_memories", {"user_id": "u"})["items"] == before_a

    # A low-clearance key may neither export nor import a user's memory.
    low = str(
        rest_call(server, key_b)("create_key", {"agent": "l", "role": "admin", "clearance": "low"})[
            "key"
        ]
    )
    with pytest.raises(CallFailed) as refused:
        rest_call(server, low)("export_memories", {"user_id": "u"})
    assert refused.value.code == "permission_denied"
    bad = cli("import", str(file), "--format", "openai", "--user", "u", "--json", env=env_b)
    assert bad.returncode != 0 and json.loads(bad.stdout)["error"]["type"] == "ValidationError"
