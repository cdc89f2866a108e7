"""Why a read served less than L3 would have: the reasons and what they mean to a
person. Apart from :mod:`memstrata.retrieval.guard`, which sets them, so that the CLI
can say them without importing the retrieval package (a ``--url`` command needs none
of it)."""

from __future__ import annotations

from collections.abc import Mapping

# Why a read served nothing from L3 (``l3_skip_reason``).
BELOW_THRESHOLD = "below_threshold"
"""Every candidate was below ``skip_below_cosine`` (docs/architecture.md, "Confidence")."""
L3_TIMEOUT = "l3_timeout"
"""L3 did not answer within the read's deadline."""
L3_UNAVAILABLE = "l3_unavailable"
"""L3 failed (unreachable, an engine error), or too many abandoned calls are running."""
CIRCUIT_OPEN = "circuit_open"
"""L3's breaker is open after repeated failures: it was not called."""
OUTAGE_REASONS: frozenset[str] = frozenset({L3_TIMEOUT, L3_UNAVAILABLE, CIRCUIT_OPEN})
"""The reasons under which a read is answered from the cached retrievals in L2."""

# Why a read ranked by BM25 alone (``dense_skip_reason``).
EMBEDDER_FAILED = "embedder_failed"
EMBEDDER_TIMEOUT = "embedder_timeout"
EMBEDDER_CIRCUIT_OPEN = "embedder_circuit_open"

SKIP_REASONS: Mapping[str, str] = {
    BELOW_THRESHOLD: "every candidate was below the confidence floor (skip_below_cosine)",
    L3_TIMEOUT: "L3 did not answer within its read deadline",
    L3_UNAVAILABLE: "L3 is unavailable (unreachable, or an engine error)",
    CIRCUIT_OPEN: "L3's circuit breaker is open after repeated failures: it was not read",
    EMBEDDER_FAILED: "the query could not be embedded (the embedder failed)",
    EMBEDDER_TIMEOUT: "the query embedding did not finish within its deadline",
    EMBEDDER_CIRCUIT_OPEN: "the embedder's circuit breaker is open: the query was not embedded",
}
"""What each skip reason means, as the CLI and the docs say it to a person."""


def skip_note(
    l3_skip_reason: str | None, dense_skip_reason: str | None, *, cached: bool | None = None
) -> str | None:
    """One sentence saying why a read served less than L3 would have (None: it did
    not). An outage's items are the cached reads in L2 (``cached``: whether any
    came back; None: not known); a failed embedding's are ranked by BM25 alone."""
    parts = []
    if l3_skip_reason is not None:
        said = SKIP_REASONS.get(l3_skip_reason, l3_skip_reason)
        if l3_skip_reason in OUTAGE_REASONS:
            said += {
                True: ": served from the cached reads in L2",
                False: ", and no cached read in L2 fits the question",
                None: ": answered from the cached reads in L2",
            }[cached]
        parts.append(f"{said} [{l3_skip_reason}]")
    if dense_skip_reason is not None:
        said = SKIP_REASONS.get(dense_skip_reason, dense_skip_reason)
        parts.append(f"{said}: ranked by BM25 alone [{dense_skip_reason}]")
    return "; ".join(parts) or None
