"""The confidence rules of every L3 read (docs/architecture.md, "Confidence").

An item whose cosine to the query is below ``low_confidence_cosine`` is flagged
low-confidence (the prompt says so); when every item a read found is below
``skip_below_cosine``, L3 is skipped for that read: what it found is noise, which
costs tokens and misleads the model.
"""

from __future__ import annotations

from collections.abc import Iterable

from memstrata.config import LongTermSettings


def is_low_confidence(cosine: float, settings: LongTermSettings) -> bool:
    """Whether an item at ``cosine`` to the query is flagged low-confidence."""
    return cosine < settings.low_confidence_cosine


def below_floor(cosine: float, settings: LongTermSettings) -> bool:
    """Whether an item at ``cosine`` is under the floor below which L3 is not served."""
    return cosine < settings.skip_below_cosine


def skips_l3(cosines: Iterable[float], settings: LongTermSettings) -> bool:
    """Whether a read that found items at these cosines skips L3: it found some, and
    every one is below the floor."""
    found = list(cosines)
    return bool(found) and all(below_floor(c, settings) for c in found)
