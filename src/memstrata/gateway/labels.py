"""Metric label values through the gateway.

A label value is exported on every scrape, kept by every Prometheus that scrapes, and
never forgotten; some are chosen by callers (an intent, a tool or collection name).
One that holds a credential or personal data is exported with the finding replaced
by its placeholder, and one with a card or ID number glued into it (an intent named
``pay-4539148803430007``) as the placeholder alone: two series merging is harmless,
a number kept in a time-series database is not.
"""

from __future__ import annotations

from functools import lru_cache

from memstrata.gateway.checks import embedded_numbers
from memstrata.gateway.kinds import placeholder
from memstrata.gateway.scan import find_matches

_LABELS_CACHED = 4096


@lru_cache(maxsize=_LABELS_CACHED)
def safe_label(value: str) -> str:
    """``value`` as a metric label may carry it (module docstring)."""
    glued = embedded_numbers(value)
    if glued:
        return placeholder(glued[0])
    matches = find_matches(value)
    if not matches:
        return value
    parts: list[str] = []
    cursor = 0
    for match in matches:
        parts.append(value[cursor : match.start])
        parts.append(placeholder(match.kind))
        cursor = match.end
    parts.append(value[cursor:])
    return "".join(parts)
