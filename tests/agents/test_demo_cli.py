"""``memstrata demo support|diagnostics``: each step's decision, trace card and CER, then
the decision rates; ``memstrata demo`` alone keeps running the scripted session."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.testing.chat_server import ScriptedServer, completion

runner = CliRunner()
OFFLINE = {"MEMSTRATA_AGENT_LLM_URL": "", "MEMSTRATA_REDIS_URL": "", "MEMSTRATA_QDRANT_URL": ""}


def test_demo_support_as_json(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["demo", "support", "--json", "--data-dir", str(tmp_path)], env=OFFLINE
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["agent"] == "support" and doc["writer"] == "rules"
    assert doc["data_dir"] == str(tmp_path / "agents" / "support")
    routes = [s["route"] for s in doc["steps"]]
    assert routes.count("ask") == 2 and routes.count("feedback") == 1
    first = doc["steps"][0]
    assert first["moves"][0]["route"] == "answer"
    assert first["moves"][0]["confidence"] >= first["moves"][0]["threshold"]
    card = first["cards"][0]
    assert {"id", "gate", "fallbacks", "timing_ms", "consistency"} <= set(card)
    assert card["consistency"] == "consistent" and card["timing_ms"]["decide"] >= 0
    assert first["check"]["effective"] is True
    # The phone number the customer never gave: loaded, nothing answers it.
    phone = doc["steps"][-1]
    assert phone["route"] == "answer" and phone["check"]["context_loaded"] is True
    assert phone["check"]["effective"] is False
    assert doc["cer"] == {"cer": 0.875, "loaded_rate": 1.0, "used_rate": 0.875, "steps": 8}
    assert set(doc["rates"]) >= {
        "cer",
        "tool_success_rate",
        "fallback_rate",
        "correction_rate",
        "ask_rate",
    }
    assert doc["refunds"] == ["O-1042"]


def test_demo_diagnostics_prints_decisions_cards_cer_and_rates(tmp_path: Path) -> None:
    args = ["demo", "diagnostics", "--data-dir", str(tmp_path)]
    result = runner.invoke(app, args, env=OFFLINE)
    assert result.exit_code == 0, result.output
    text = result.stdout
    for expected in (
        "decision: tool",
        "tool vibration_spectrum(",
        "-> done by vibration_spectrum_replica after 3 attempt(s)",
        "fallbacks [vibration_spectrum_replica]",
        "gate [device_info: schema ok facts ok risk ok]",
        "consistency consistent",
        "running CER 1.000 over 21 checked step(s)",
        "# Battery health report: D123",
        "## Recommended action",
        "step results' TTL once the report read them",
        "decision quality",
        "tool success",
        "fallback",
        "correction",
        "naive shared state (last writer wins) vs memstrata",
        "naive lost D123, D456, memstrata lost none",
    ):
        assert expected in text, expected
    assert "sk_live_" not in text
    # A second run starts from an empty store of its own.
    again = runner.invoke(app, [*args, "--json"], env=OFFLINE)
    assert again.exit_code == 0, again.output
    doc = json.loads(again.stdout)
    assert doc["cer"]["cer"] == 1.0 and doc["rates"]["decisions"] == 36
    # The devices ran concurrently: the naive shared dict handed the third device's
    # data to the first two and kept only the third; memstrata kept each its own.
    shared = doc["shared_state"]
    rows = {row["device_id"]: row for row in shared["devices"]}
    assert [rows[d]["naive_data_of"] for d in ("D123", "D456", "D789")] == ["D789"] * 3
    assert [rows[d]["naive_kept"] for d in ("D123", "D456", "D789")] == [False, False, True]
    assert all(row["memstrata_data_of"] == device for device, row in rows.items())
    assert rows["D123"]["memstrata_peak_c"] != rows["D789"]["memstrata_peak_c"]
    assert shared["naive_lost"] == ["D123", "D456"] and shared["memstrata_lost"] == []
    assert {r["session_id"] for r in doc["reports"].values()} == {
        s["session_id"] for s in doc["steps"]
    }


def test_demo_refuses_an_unknown_agent_and_a_foreign_directory(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "sales", "--json", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["message"].startswith("agent:")
    mine = tmp_path / "agents" / "support"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("not the demo's")
    result = runner.invoke(
        app, ["demo", "support", "--json", "--data-dir", str(tmp_path)], env=OFFLINE
    )
    assert result.exit_code == 2
    assert "was not made by the demo" in json.loads(result.stdout)["error"]["message"]
    assert (mine / "notes.txt").exists()


def test_demo_support_with_a_model_endpoint(tmp_path: Path) -> None:
    """The first answer comes from the model; once the script is over the endpoint
    fails and the rule writer takes over."""
    said = "The Volta X200 charges a phone about four times on a full charge."
    with ScriptedServer([completion(said)]) as server:
        env = {**OFFLINE, "MEMSTRATA_AGENT_LLM_URL": server.base_url}
        env["MEMSTRATA_AGENT_LLM_MODEL"] = "m1"
        result = runner.invoke(
            app, ["demo", "support", "--json", "--data-dir", str(tmp_path)], env=env
        )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["writer"] == "model:m1"
    answers = [s for s in doc["steps"] if s["written_by"]]
    assert answers[0]["reply"] == said and answers[0]["written_by"] == "model:m1"
    assert answers[0]["check"]["effective"] is True
    # Past the script the endpoint answers 599: retried once, then the rule writer.
    assert {s["written_by"] for s in answers[1:]} == {"rules (ModelError)"}
