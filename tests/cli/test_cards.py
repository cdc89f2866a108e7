"""`memstrata cards`: the trace cards of a data directory, by session and time, as JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from memstrata import ContextEngine

runner = CliRunner()


def test_cards_export_by_session(
    tmp_path: Path, engine_opener: Callable[..., ContextEngine]
) -> None:
    data = tmp_path / "d"
    engine = engine_opener(data_dir=data)
    for sid in ("s1", "s2"):
        engine.start_session("u1", "hello", session_id=sid)
        engine.decide(
            sid, engine.route(sid, "respond", "hi"), question="token sk_live_abc123def456ghi789jk"
        )
    engine.close()

    from memstrata.cli import app

    every = runner.invoke(app, ["cards", "--data-dir", str(data), "--json"])
    assert every.exit_code == 0, every.output
    cards = json.loads(every.stdout)["cards"]
    assert [c["session_id"] for c in cards] == ["s1", "s2"]
    assert all(c["route"] == "ask" and "sk_live" not in c["question"] for c in cards)
    one = runner.invoke(
        app, ["cards", "--data-dir", str(data), "--session", "s2", "--since", "1h", "--json"]
    )
    assert [c["session_id"] for c in json.loads(one.stdout)["cards"]] == ["s2"]
    table = runner.invoke(app, ["cards", "--data-dir", str(data)])
    assert table.exit_code == 0 and "trace cards (2)" in table.stdout
    bad = runner.invoke(app, ["cards", "--data-dir", str(data), "--since", "soon", "--json"])
    assert bad.exit_code == 2 and "since" in json.loads(bad.stdout)["error"]["message"]
