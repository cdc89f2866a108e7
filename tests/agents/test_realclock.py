"""``memstrata demo diagnostics --real-clock``: batches on the real clock with short L2
TTLs, so entries really expire, and the run's data directory yields a full
``memstrata report`` (several samples at real dates, an L2 expiry figure, the
decisions and CER of the run), where the fake-clock demo left one sample and "n/a"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.agents.diagnostics import PLAN
from memstrata.agents.realclock import run_real_clock, scaled_plan, short_ttls
from memstrata.cli import app
from memstrata.config import Settings
from memstrata.errors import ValidationError

runner = CliRunner()
OFFLINE = {"MEMSTRATA_AGENT_LLM_URL": "", "MEMSTRATA_REDIS_URL": "", "MEMSTRATA_QDRANT_URL": ""}


def test_a_short_real_clock_run_yields_a_full_report(tmp_path: Path) -> None:
    args = ["demo", "diagnostics", "--real-clock", "--minutes", "0.02", "--ttl-seconds", "1"]
    result = runner.invoke(app, [*args, "--json", "--data-dir", str(tmp_path)], env=OFFLINE)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["real_clock"]["batches"] >= 1 and doc["real_clock"]["health_samples"] >= 3
    assert doc["shared_state"]["naive_lost"] == ["D123", "D456"]
    assert doc["shared_state"]["memstrata_lost"] == []
    where = doc["data_dir"]
    assert where == str(tmp_path / "agents" / "diagnostics-real-clock")

    out = tmp_path / "report"
    report = ["report", "--data-dir", where, "--since", "1h", "--out", str(out), "--json"]
    done = runner.invoke(app, report, env=OFFLINE)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["samples"] >= 4  # the run's and the report's own
    markdown = (out / "context_health_report.md").read_text(encoding="utf-8")
    expired = re.search(r"\| expired keys per minute \(mean\) \| ([^|]+) \|", markdown)
    rate = re.search(r"\| expiry rate \(expired per minute / keys\) \| ([^|]+) \|", markdown)
    assert expired is not None and rate is not None
    assert expired.group(1).strip() != "n/a" and float(expired.group(1).replace(",", "")) > 0
    assert rate.group(1).strip() != "n/a"
    # The run's decisions and CER, counted in the demo's process, are in the report.
    assert re.search(r"\| tool success \| 100\.0% \| 15 / 15 \|", markdown)
    # CER over the 21 checked steps (an L2 entry may expire mid-batch with a 1 s TTL).
    assert re.search(r"\| this week \| [0-9.]+% \| [0-9]+ / 21 \|", markdown)


def test_the_real_clock_refuses_bad_options(tmp_path: Path) -> None:
    base = ["--json", "--data-dir", str(tmp_path)]
    for args, field in (
        (["demo", "support", "--real-clock"], "real_clock"),
        (["demo", "diagnostics", "--real-clock", "--ttl-seconds", "0"], "ttl_seconds"),
        (["demo", "diagnostics", "--real-clock", "--minutes", "-1"], "minutes"),
        (["demo", "diagnostics", "--real-clock", "--minutes", "600"], "minutes"),
    ):
        result = runner.invoke(app, [*args, *base], env=OFFLINE)
        assert result.exit_code == 2, (args, result.output)
        assert json.loads(result.stdout)["error"]["message"].startswith(f"{field}:")


def test_short_ttls_and_the_scaled_plan() -> None:
    settings = short_ttls(Settings(), 20)
    assert settings.working.api_ttl_s == 20 and settings.working.default_result_ttl_s == 20
    assert settings.working.min_result_ttl_s == 5
    plan = scaled_plan(20)
    assert [s.step_id for s in plan.steps] == [s.step_id for s in PLAN.steps]
    assert plan.spec("step7").duration_s == pytest.approx(180 * 20 / 900)
    with pytest.raises(ValidationError, match="ttl_seconds"):
        short_ttls(Settings(), -1)
    with pytest.raises(ValidationError, match="minutes"):
        run_real_clock(None, minutes=0, ttl_s=1)  # type: ignore[arg-type]
