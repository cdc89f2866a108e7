"""The text the model sees for the memory and tool-result blocks (pure string building)."""

from __future__ import annotations

from memstrata.context.values import LIVE_LAYERS, MemoryItem, ToolResult

MEMORY_HEADER = (
    "## Retrieved context\n"
    "These items were retrieved automatically and may be irrelevant: use only those that "
    "bear on the current request and ignore the rest. Live data (L1 session state, L2 "
    "working memory, tool results) outranks stored knowledge (L3). Current facts are "
    "what is true now; what was said is listed with its date, and an item marked PAST "
    "was true then but has been replaced by the fact it names. Items marked LOW "
    "CONFIDENCE are weak matches: never prefer them over live data, and say so if you "
    "rely on one. Cite items by their [id]."
)
TOOL_HEADER = (
    "## Tool results for this step\n"
    "Live data, fetched just now: it outranks retrieved memories and knowledge."
)
ITEM_SEPARATOR = "\n\n"


def _hours(value: float) -> str:
    return f"{value:.1f} h old" if value < 48 else f"{value / 24:.1f} days old"


def _label(item: MemoryItem) -> list[str]:
    if item.layer in LIVE_LAYERS:
        return [f"[{item.id}] {item.layer} live"]
    if item.kind == "fact":
        return [f"[{item.id}] {item.layer} current fact"]
    if item.kind == "history":
        return [f"[{item.id}] {item.layer} PAST fact (no longer true)"]
    if item.kind == "episode":
        said = "said"
        if item.said_by:
            said += f" by {item.said_by}"
        if item.said_at is not None:
            said += f" on {item.said_at.date().isoformat()}"
        parts = [f"[{item.id}] {item.layer} {said}"]
        if item.replaced_by:
            parts.append(f"PAST, now replaced by: {' '.join(item.replaced_by.split())}")
        return parts
    return [f"[{item.id}] {item.layer} knowledge"]


def memory_line(item: MemoryItem) -> str:
    """One memory item as the model sees it: a label line, then the text verbatim.

    Episodes say who said them and when; one a newer fact replaced is marked as the
    past and quotes that fact.
    """
    parts = _label(item)
    if item.low_confidence:
        parts.append("LOW CONFIDENCE")
    parts.append(f"source {item.source}")
    parts.append(f"relevance {item.relevance:.2f}")
    if item.freshness_hours is not None:
        parts.append(_hours(item.freshness_hours))
    return " | ".join(parts) + "\n" + item.text


def tool_line(result: ToolResult) -> str:
    """One tool result as the model sees it."""
    return f"[{result.call_id}] tool {result.name}\n{result.content}"


def block(header: str, pieces: list[str]) -> str:
    """A header and whole pieces, separated by blank lines."""
    return ITEM_SEPARATOR.join([header, *pieces])
