"""The plan of a multi-step task, used to derive how long step results must live.

A :class:`StepGraph` is a pure, frozen value: steps with an estimated duration and
the steps they depend on. Estimated end times follow the critical path
(``end = max(end of deps) + duration``, measured from when the plan started), and a
result must survive until the last step that consumes it has finished, doubled as a
safety margin (docs/architecture.md, "The layers").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memstrata.errors import ValidationError
from memstrata.validation import check_id

# Results must outlive their consumers: the estimate is doubled (docs/architecture.md,
# "The layers").
TTL_SAFETY_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class StepSpec:
    """One planned step: its id, estimated duration and the steps it reads from."""

    step_id: str
    duration_s: float
    depends_on: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_id("step_id", self.step_id)
        d = self.duration_s
        if isinstance(d, bool) or not isinstance(d, int | float) or not math.isfinite(d) or d <= 0:
            raise ValidationError(
                f"steps[{self.step_id}].duration_s", "must be a finite number > 0"
            )
        if isinstance(self.depends_on, str) or not isinstance(self.depends_on, tuple | list):
            raise ValidationError(f"steps[{self.step_id}].depends_on", "must be a tuple of ids")
        object.__setattr__(self, "depends_on", tuple(self.depends_on))
        for dep in self.depends_on:
            check_id(f"steps[{self.step_id}].depends_on", dep)
        if self.step_id in self.depends_on:
            raise ValidationError(f"steps[{self.step_id}]", "a step cannot depend on itself")


@dataclass(frozen=True, slots=True)
class StepGraph:
    """A validated dependency graph of steps (unknown deps and cycles are rejected)."""

    steps: tuple[StepSpec, ...]
    _ends: Mapping[str, float] = field(init=False, repr=False, compare=False)
    _dependents: Mapping[str, frozenset[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.steps, tuple | list) or not self.steps:
            raise ValidationError("steps", "must be a non-empty sequence of StepSpec")
        object.__setattr__(self, "steps", tuple(self.steps))
        by_id: dict[str, StepSpec] = {}
        for spec in self.steps:
            if not isinstance(spec, StepSpec):
                raise ValidationError("steps", f"must contain StepSpec, got {type(spec).__name__}")
            if spec.step_id in by_id:
                raise ValidationError(f"steps[{spec.step_id}]", "duplicate step id")
            by_id[spec.step_id] = spec
        dependents: dict[str, set[str]] = {sid: set() for sid in by_id}
        for spec in self.steps:
            for dep in spec.depends_on:
                if dep not in by_id:
                    raise ValidationError(
                        f"steps[{spec.step_id}].depends_on", f"unknown step {dep!r}"
                    )
                dependents[dep].add(spec.step_id)
        object.__setattr__(self, "_ends", _critical_path_ends(by_id))
        object.__setattr__(
            self, "_dependents", {sid: frozenset(ds) for sid, ds in dependents.items()}
        )

    @classmethod
    def of(cls, steps: Iterable[tuple[str, float, Iterable[str]]]) -> StepGraph:
        """Build from ``(step_id, duration_s, depends_on)`` triples."""
        return cls(tuple(StepSpec(sid, dur, tuple(deps)) for sid, dur, deps in steps))

    @property
    def step_ids(self) -> frozenset[str]:
        """Every step id in the graph."""
        return frozenset(self._ends)

    def spec(self, step_id: str) -> StepSpec:
        """The spec of ``step_id`` (ValidationError if unknown)."""
        for spec in self.steps:
            if spec.step_id == step_id:
                return spec
        raise ValidationError("step_id", f"unknown step {step_id!r}")

    def estimated_end_s(self, step_id: str) -> float:
        """Seconds from plan start until ``step_id`` is estimated to finish."""
        self._require(step_id)
        return self._ends[step_id]

    def estimated_start_s(self, step_id: str) -> float:
        """Seconds from plan start until ``step_id`` is estimated to begin."""
        return self.estimated_end_s(step_id) - self.spec(step_id).duration_s

    def dependents(self, step_id: str) -> frozenset[str]:
        """Steps that read ``step_id``'s result directly."""
        self._require(step_id)
        return self._dependents[step_id]

    def makespan_s(self) -> float:
        """Estimated duration of the whole plan."""
        return max(self._ends.values())

    def result_deadline_s(self, step_id: str) -> float | None:
        """Seconds from plan start the result must survive; None without dependents.

        The last dependent's estimated end, times :data:`TTL_SAFETY_FACTOR`.
        """
        deps = self.dependents(step_id)
        if not deps:
            return None
        return TTL_SAFETY_FACTOR * max(self._ends[d] for d in deps)

    def extension_on_read_s(self, step_id: str, reader_step: str) -> float | None:
        """TTL to grant ``step_id``'s result when dependent ``reader_step`` reads it now.

        The reader has started now, so the result must survive for the estimated time
        from the reader's start to the end of the last dependent, doubled. None when
        ``reader_step`` is not a dependent of ``step_id``.
        """
        deps = self.dependents(step_id)
        self._require(reader_step)
        if reader_step not in deps:
            return None
        remaining = max(self._ends[d] for d in deps) - self.estimated_start_s(reader_step)
        return TTL_SAFETY_FACTOR * remaining

    def to_json(self) -> str:
        """Serialize to JSON (the stored form)."""
        return json.dumps(
            [
                {"id": s.step_id, "duration_s": s.duration_s, "deps": list(s.depends_on)}
                for s in self.steps
            ],
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> StepGraph:
        """Parse the form written by :meth:`to_json`."""
        try:
            raw: Any = json.loads(text)
            return cls(tuple(StepSpec(r["id"], r["duration_s"], tuple(r["deps"])) for r in raw))
        except (TypeError, KeyError, ValueError) as exc:
            if isinstance(exc, ValidationError):
                raise
            raise ValidationError("plan", f"malformed stored plan: {exc}") from exc

    def _require(self, step_id: str) -> None:
        if step_id not in self._ends:
            raise ValidationError("step_id", f"unknown step {step_id!r}")


def _critical_path_ends(by_id: Mapping[str, StepSpec]) -> dict[str, float]:
    """Estimated end of each step; raises ValidationError naming a step on a cycle."""
    ends: dict[str, float] = {}
    # Iterative DFS with colours: recursion would overflow on long chains.
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    for root in by_id:
        if state.get(root) == 2:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            sid, idx = stack[-1]
            deps = by_id[sid].depends_on
            if idx < len(deps):
                stack[-1] = (sid, idx + 1)
                dep = deps[idx]
                if state.get(dep) == 1:
                    raise ValidationError(f"steps[{dep}]", f"dependency cycle through {sid!r}")
                if state.get(dep) is None:
                    state[dep] = 1
                    stack.append((dep, 0))
                continue
            start = max((ends[d] for d in deps), default=0.0)
            ends[sid] = start + float(by_id[sid].duration_s)
            state[sid] = 2
            stack.pop()
    return ends
