"""The Extractor role: one conversation turn in, memory candidates out."""

from __future__ import annotations

from typing import Protocol

from memstrata.extract.candidates import Candidate, Turn


class Extractor(Protocol):
    """Turns one turn into zero or more :class:`Candidate` values.

    Implementations are deterministic where they can be (the rule-based default) and
    raise :class:`~memstrata.errors.ExtractionError` only when their own
    infrastructure fails; a turn with nothing to remember gives ``()``.
    """

    def extract(self, turn: Turn) -> tuple[Candidate, ...]:
        """Candidates found in ``turn``, in the order they appear in its text."""
        ...
