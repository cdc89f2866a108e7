"""The CLI talks to a running service with --url, and says how when the store is busy."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.service.support import RunningServer, cli, rest_call


def test_remember_search_and_forget_through_the_service(server: RunningServer) -> None:
    env = {"MEMSTRATA_API_KEY": server.admin_keys["acme"], "MEMSTRATA_URL": server.url}
    user = f"cli-{uuid.uuid4().hex[:8]}"
    stored = cli("remember", "--user", user, "--text", "I'm allergic to kiwi.", "--json", env=env)
    assert stored.returncode == 0, stored.stderr
    document = json.loads(stored.stdout)
    assert document["written"] and [f["attribute"] for f in document["facts"]] == ["allergies"]

    found = cli("search", "--user", user, "--query", "allergies", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert "kiwi" in json.loads(found.stdout)["results"][0]["text"]

    forgotten = cli("forget", "--user", user, "--json", env=env)
    assert forgotten.returncode == 0, forgotten.stderr
    assert json.loads(forgotten.stdout)["points_deleted"] >= 2
    again = cli("search", "--user", user, "--query", "allergies", "--json", env=env)
    assert json.loads(again.stdout)["results"] == []


def test_inspect_consolidate_and_restore_through_the_service(server: RunningServer) -> None:
    env = {"MEMSTRATA_API_KEY": server.admin_keys["globex"], "MEMSTRATA_URL": server.url}
    sid = f"cli-{uuid.uuid4().hex[:8]}"
    rest = rest_call(server, server.admin_keys["globex"])
    rest("start_session", {"user_id": "u", "initial_query": "hi", "session_id": sid})
    rest("add_pending", {"session_id": sid, "task_ids": ["t1"]})
    inspected = cli("inspect", "--session", sid, "--json", env=env)
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert report["l1"]["session_id"] == sid and report["pending_tasks"] == ["t1"]

    consolidated = cli("consolidate", "--json", env=env)
    assert consolidated.returncode == 0, consolidated.stderr
    document = json.loads(consolidated.stdout)
    assert "merged_duplicates" in document["memories"] and "globex" in document["hot_knowledge"]

    restored = cli("restore", "00000000-0000-0000-0000-000000000000", "--json", env=env)
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["restored"] == []


def test_a_busy_data_directory_says_how_to_reach_the_service(server: RunningServer) -> None:
    busy = cli("remember", "--user", "u", "--text", "hello", "--data-dir", str(server.data_dir))
    assert busy.returncode == 2
    assert "--url" in busy.stderr and "MEMSTRATA_API_KEY" in busy.stderr
    stranger = cli(
        "search",
        "--user",
        "u",
        "--query",
        "x",
        "--url",
        server.url,
        "--json",
        env={"MEMSTRATA_API_KEY": "msk_0123456789abcdef_" + "x" * 43},
    )
    assert stranger.returncode == 2
    assert json.loads(stranger.stdout)["error"]["type"] == "AuthenticationError"


def test_the_readme_main_job_runs_a_step_over_rest_and_mcp(tmp_path: Path) -> None:
    """`make demo`: the service starts, one agent step goes over REST and through MCP."""
    ran = cli("serve-demo", "--data-dir", str(tmp_path / "demo"))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "REST build_context" in ran.stdout and "MCP build_context" in ran.stdout
    assert "same messages as REST: True" in ran.stdout
    assert "user allergies: peanuts; shellfish" in ran.stdout
    # "near my home" asks for the current city: it is packed, confident, and the old
    # city never poses as current (shown only as the past, if at all).
    block = ran.stdout.split("memory block:", 1)[1].split("MCP:", 1)[0]
    items = block.split("\n[")
    (city,) = [item for item in items if "current fact" in item and "user city: Chengdu" in item]
    assert "LOW CONFIDENCE" not in city
    assert "user city: Hangzhou" not in block
    assert all("PAST" in item for item in items if "I live in Hangzhou." in item)
