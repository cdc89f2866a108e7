"""FAULT INJECTION a settings file can turn on in a running process
(:class:`memstrata.config.FaultSettings`, read by :func:`memstrata.wiring.open_index`):
``memstrata bench load`` starts ``memstrata serve`` with it to slow L3 during a burst.
Tests build the doubles of :mod:`memstrata.testing.faults` directly instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from memstrata.longterm.protocol import VectorIndex
from memstrata.testing.faults import FaultyIndex

T = TypeVar("T")


class SlowReadsIndex(FaultyIndex):
    """FAULT INJECTION: every read of ``inner`` waits ``delay_s`` first, while the
    file ``switch`` exists (always when None); writes pass. While the delay is off it
    is ``inner`` (its answer cache included), so a run can compare the two."""

    def __init__(self, inner: VectorIndex, delay_s: float, *, switch: Path | None = None) -> None:
        super().__init__(inner)
        self.slow(delay_s)
        self.switch = switch

    @property
    def active(self) -> bool:
        """Whether reads are delayed now (one ``stat`` of the switch file)."""
        return self.delay_s > 0 and (self.switch is None or self.switch.exists())

    def run(self, call: Callable[[], T], error: Callable[[], BaseException]) -> T:
        if not self.active:
            return call()
        return super().run(call, error)

    def answer_generation(self, collection: str) -> int | None:
        # Delayed, no answer may be reused: each read must wait, as on a slow server.
        return None if self.active else self.inner.answer_generation(collection)

    def __getattr__(self, name: str) -> Any:
        # What the protocol leaves optional (``check_room_to_purge``, ...) is the inner
        # adapter's: the fault slows reads and changes nothing else.
        if name == "inner":  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)
