"""Seed 000 §4.2's bug, shown beside the fix: ``memstrata demo diagnostics`` runs its
devices concurrently under one forced interleaving, once as the seed's naive agent (one
plain dict of state shared by the workers, last writer wins) and once as the
memstrata agent (each worker's own immutable L1 state behind the router), and prints
what each kept per device.

The interleaving: the workers select their device in input order (first, second,
third) and none goes on until all three have (events and a barrier, so every run
shows the same thing). Under it the naive agent's ``last_device_id`` holds the third
device for everyone: the first two devices' results come back with the third's data,
and the results keyed by the current device hold the third alone.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memstrata.agents.diagnostics import DiagnosticsAgent
from memstrata.agents.fleet import Fleet
from memstrata.agents.run import AgentRun

WAIT_S = 60.0
"""How long a worker waits for the others at the interleaving's barrier."""


class Interleaving:
    """The schedule under which a shared ``last_device_id`` holds the last device for
    every worker (module docstring). Pass :meth:`hook` as a run's ``on_step``."""

    def __init__(self, devices: Sequence[str], *, wait_s: float = WAIT_S) -> None:
        self.devices = tuple(devices)
        self._wait_s = wait_s
        self._turns = [threading.Event() for _ in self.devices]
        self._barrier = threading.Barrier(len(self.devices), timeout=wait_s)

    def before_select(self, device: str) -> None:
        i = self.devices.index(device)
        if i and not self._turns[i - 1].wait(self._wait_s):
            raise TimeoutError("the previous worker never selected its device")

    def after_select(self, device: str) -> None:
        self._turns[self.devices.index(device)].set()
        self._barrier.wait()

    def hook(self, device: str, step: str) -> None:
        """A :data:`~memstrata.agents.diagnostics.StepHook` that enforces the schedule."""
        if step == "start":
            self.before_select(device)
        elif step == "selected":
            self.after_select(device)


def naive_batch(
    fleet: Fleet, devices: Sequence[str]
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The seed's agent: one plain dict of state shared by concurrent workers. Returns
    what each worker reported and the results as the shared dict kept them."""
    state: dict[str, Any] = {"last_device_id": None}
    results: dict[str, dict[str, Any]] = {}
    schedule = Interleaving(devices)

    def worker(device: str) -> dict[str, Any]:
        schedule.before_select(device)
        state["last_device_id"] = device  # step 1: the worker's device
        schedule.after_select(device)
        # Later steps read "the current device" from the shared state.
        anomalies = fleet.temperature_anomalies({"device_id": state["last_device_id"]})
        report = {
            "device_id": device,
            "data_of": anomalies["device_id"],
            "peak_c": anomalies["peak_c"],
            "windows": anomalies["windows"],
        }
        results[state["last_device_id"]] = report
        return report

    with ThreadPoolExecutor(max_workers=len(devices)) as pool:
        returned = list(pool.map(worker, devices))
    return returned, results


def side_by_side(
    agent: DiagnosticsAgent, devices: Sequence[str], *, run_id: str | None = None
) -> AgentRun:
    """Run ``devices`` concurrently as the naive agent and as ``agent``, each under the
    interleaving; the agent's run with ``extras["shared_state"]``: per device, what the
    naive shared dict reported and kept, and what memstrata reported. ``run_id`` names
    the agent's sessions for this batch (:meth:`DiagnosticsAgent.run`)."""
    returned, kept = naive_batch(Fleet(), devices)
    run = agent.run(devices, concurrent=True, on_step=Interleaving(devices).hook, run_id=run_id)
    reports = run.extras["reports"]
    rows = []
    for naive in returned:
        device = naive["device_id"]
        figures = reports[device]["figures"]
        rows.append(
            {
                "device_id": device,
                "naive_data_of": naive["data_of"],
                "naive_peak_c": naive["peak_c"],
                "naive_kept": device in kept,
                "memstrata_data_of": figures.get("device_id"),
                "memstrata_peak_c": figures.get("peak_c"),
                "memstrata_kept": reports[device]["device_id"] == device,
            }
        )
    summary = {
        "schedule": "workers select their device in order, none goes on until all have",
        "devices": rows,
        "naive_lost": [r["device_id"] for r in rows if r["naive_data_of"] != r["device_id"]],
        "memstrata_lost": [
            r["device_id"] for r in rows if r["memstrata_data_of"] != r["device_id"]
        ],
    }
    return AgentRun(
        run.agent,
        run.tenant,
        run.writer,
        run.steps,
        run.rates,
        {**run.extras, "shared_state": summary},
    )
