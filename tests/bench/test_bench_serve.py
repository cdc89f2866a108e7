"""``memstrata bench serve`` on a tiny budget: the report's shape, and no failed call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memstrata.bench.serve import OPERATIONS, TRANSPORTS, run_serve_bench


def _check(operations: dict[str, Any], *, open_loop: bool) -> None:
    assert set(operations) == set(OPERATIONS)
    for name, per_transport in operations.items():
        assert set(per_transport) == set(TRANSPORTS), name
        for transport, result in per_transport.items():
            assert result["errors"] == 0, (name, transport, result.get("first_error"))
            assert result["requests"] > 0 and result["req_per_s"] > 0
            assert 0 < result["p50_ms"] <= result["p99_ms"]
            if transport == "in_process":
                assert "p50_overhead_ms" not in result
            else:
                assert isinstance(result["p50_overhead_ms"], float)
            if open_loop:
                assert result["offered_req_per_s"] > 0
                assert result["missed"] >= 0
            else:
                assert "offered_req_per_s" not in result and "missed" not in result


def test_bench_serve_closed_and_open_loop(tmp_path: Path) -> None:
    report = run_serve_bench(
        clients=2, seconds=0.5, data_dir=tmp_path / "serve", rate="auto", client_processes=2
    )
    assert report["clients"] == 2 and report["client_processes"] == 2
    _check(report["closed_loop"], open_loop=False)
    assert report["open_loop"]["rate"] == "auto"
    _check(report["open_loop"]["operations"], open_loop=True)


def test_bench_serve_open_loop_only(tmp_path: Path) -> None:
    report = run_serve_bench(
        clients=2, seconds=0.5, data_dir=tmp_path / "serve", rate=20.0, closed_loop=False
    )
    assert "closed_loop" not in report
    operations = report["open_loop"]["operations"]
    _check(operations, open_loop=True)
    for per_transport in operations.values():
        assert all(r["offered_req_per_s"] == 20.0 for r in per_transport.values())
