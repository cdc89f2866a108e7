"""The CLI talks to a running service with --url, and says how when the store is busy."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.service.support import Caller, CallFailed, RunningServer, cli, rest_call
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.config import settings_from_env
from memstrata.engine import ContextEngine
from memstrata.service.local import local_caller, local_service


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


# -- one code path: the same command, in process and with --url, prints the same document --

runner = CliRunner()


@dataclass(frozen=True)
class TwoSides:
    """One tenant's same data on a data directory and in the running service."""

    tenant: str
    session: str
    data_dir: Path
    url: str
    key: str

    def local(self, *args: str) -> Any:
        return _run(*args, "--data-dir", str(self.data_dir), env={})

    def remote(self, *args: str) -> Any:
        return _run(*args, "--url", self.url, env={"MEMSTRATA_API_KEY": self.key})


def _run(*args: str, env: dict[str, str]) -> Any:
    result = runner.invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # the whole stdout is one document


def _populate(call: Caller, session: str) -> None:
    """A closed session with L2 keys and pending tasks, a decision with feedback."""
    call("start_session", {"user_id": "u", "initial_query": "hi", "session_id": session})
    call("add_pending", {"session_id": session, "task_ids": ["t2", "t1"]})
    call("put_step_result", {"session_id": session, "step_id": "a", "fields": {"x": 1}})
    card = call(
        "decide", {"session_id": session, "step_intent": "respond", "question": "order status?"}
    )["card_id"]
    call("feedback", {"card_id": card, "kind": "corrected", "correction": "it shipped"})
    call("end_session", {"session_id": session})  # L1 never outlives its process
    call("flush", {"timeout_s": 60})


@pytest.fixture(scope="module")
def two_sides(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> TwoSides:
    tag = uuid.uuid4().hex[:8]
    tenant, session = f"cli{tag}", f"s-{tag}"
    made = rest_call(server, server.admin_keys["default"])(
        "create_key", {"agent": "cli", "tenant": tenant, "role": "admin"}
    )
    data_dir = tmp_path_factory.mktemp("local") / "d"
    _populate(rest_call(server, str(made["key"])), session)
    with ContextEngine.open(settings_from_env(data_dir=data_dir)) as engine:
        service = local_service(engine, local_caller(tenant))
        _populate(
            lambda name, body: service.call(name, None, body).model_dump(mode="json"), session
        )
    return TwoSides(tenant, session, data_dir, server.url, str(made["key"]))


def _without(document: Any, *volatile: str) -> Any:
    """``document`` without the fields that differ by when or where it ran."""
    if isinstance(document, dict):
        return {k: _without(v, *volatile) for k, v in document.items() if k not in volatile}
    if isinstance(document, list):
        return [_without(v, *volatile) for v in document]
    return document


def test_inspect_is_the_same_in_process_and_over_the_wire(two_sides: TwoSides) -> None:
    args = ("inspect", "--session", two_sides.session)
    local = two_sides.local(*args, "--tenant", two_sides.tenant)
    remote = two_sides.remote(*args)
    # The L2 keys of the session the application closed, named by its id: the same.
    assert local["pending_tasks"] == ["t1", "t2"] and len(local["l2"]) >= 2
    assert any(two_sides.session in k["key"] for k in local["l2"])
    assert _without(local, "ttl_remaining_s") == _without(remote, "ttl_remaining_s")


def test_cards_are_the_same_in_process_and_over_the_wire(two_sides: TwoSides) -> None:
    args = ("cards", "--session", two_sides.session, "--since", "1h")
    local = two_sides.local(*args, "--tenant", two_sides.tenant)
    remote = two_sides.remote(*args)
    assert [c["session_id"] for c in local["cards"]] == [two_sides.session]
    volatile = ("id", "at", "timing_ms")
    assert _without(local, *volatile) == _without(remote, *volatile)


def test_the_feedback_report_is_the_same_in_process_and_over_the_wire(
    two_sides: TwoSides,
) -> None:
    args = ("feedback", "report", "--since", "1h")
    local = two_sides.local(*args, "--tenant", two_sides.tenant)
    remote = two_sides.remote(*args)
    assert local["events"] == 1 and local["by_kind"] == {"corrected": 1}
    assert local == remote


def test_consolidate_is_the_same_in_process_and_over_the_wire(two_sides: TwoSides) -> None:
    args = ("consolidate", "--tenant", two_sides.tenant)
    local = two_sides.local(*args)
    remote = two_sides.remote(*args)
    assert set(local["hot_knowledge"]) == {two_sides.tenant}
    assert local == remote


def test_ingest_is_the_same_in_process_and_over_the_wire(
    two_sides: TwoSides, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sop.md").write_text("# Vibration\n\nCompare RMS velocity.\n\n## Alarm\n\nAbove 3.5.\n")
    (docs / "sub" / "pump.txt").write_text("Prime the pump before starting it.\n")
    (docs / "bad.md").write_bytes(b"\xff\xfe\x00")  # not text: reported, never stored
    local_args = ("ingest", str(docs), "--tenant", two_sides.tenant)
    first = two_sides.local(*local_args)
    assert (first["files_seen"], first["files_added"], first["chunks_added"]) == (3, 2, 3)
    assert [e["path"] for e in first["errors"]] == ["bad.md"]
    assert two_sides.remote("ingest", str(docs)) == first
    # A file deleted from the folder: its chunks go, in process and over the wire alike.
    (docs / "sub" / "pump.txt").unlink()
    again = two_sides.local(*local_args)
    assert (again["files_removed"], again["chunks_deleted"], again["files_skipped"]) == (1, 1, 1)
    assert two_sides.remote("ingest", str(docs)) == again


def test_consolidate_names_only_the_tenants_its_key_may(server: RunningServer) -> None:
    foreign = rest_call(server, server.admin_keys["acme"])
    with pytest.raises(CallFailed) as refused:
        foreign("consolidate", {"tenants": ["globex"]})
    assert (refused.value.code, refused.value.body["field"]) == ("permission_denied", "tenants[0]")
    own = foreign("consolidate", {"tenants": ["acme"]})
    assert [h["tenant"] for h in own["hot_knowledge"]] == ["acme"]
    # The operator's key names none: every known tenant (one that wrote a memory).
    rest_call(server, server.admin_keys["globex"])(
        "remember", {"user_id": "u", "text": "I like tea.", "wait": True}
    )
    operator = rest_call(server, server.admin_keys["default"])("consolidate", {})
    assert {"globex", "default"} <= {h["tenant"] for h in operator["hot_knowledge"]}
