"""The token-budgeted context builder: a pure function from a request to chat messages.

Order of the messages: system prompt, memory block, history (oldest first), tool
results, current input. Every section stays within its budget and items are admitted
whole, by score; whatever is left out is reported with a reason. Token accounting
follows OpenAI's chat format, so ``total_tokens`` is what ``count_messages`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memstrata.context.budget import ContextBudget, Section
from memstrata.context.compress import (
    DETAILS,
    TurnDigest,
    digest_turn,
    summarize_digests,
    turn_ids,
)
from memstrata.context.render import (
    ITEM_SEPARATOR,
    LOW_CONFIDENCE_HEADER,
    MEMORY_HEADER,
    TOOL_HEADER,
    block,
    memory_line,
    tool_line,
)
from memstrata.context.tokens import REPLY_PRIMING_TOKENS, TokenCounter, message_tokens
from memstrata.context.values import (
    LIVE_LAYERS,
    AdmittedItem,
    BuiltContext,
    ChatMessage,
    ChatRole,
    ContextRequest,
    DroppedItem,
    DropReason,
    MemoryItem,
    Origin,
    SectionUsage,
    ToolResult,
    Turn,
)
from memstrata.errors import BudgetError, ValidationError
from memstrata.extract.text import normal_form

BLOCK_ROLE: ChatRole = "system"


@dataclass(frozen=True, slots=True)
class _Piece:
    """A whole item ready to be admitted into a block."""

    id: str
    text: str
    tokens: int
    origin: Origin
    render_rank: tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Pack:
    message: ChatMessage | None
    used: int
    admitted: tuple[AdmittedItem, ...]
    dropped: tuple[DroppedItem, ...]


@dataclass(frozen=True, slots=True)
class _HistoryPack:
    messages: tuple[ChatMessage, ...]
    used: int
    admitted: tuple[AdmittedItem, ...]
    dropped: tuple[DroppedItem, ...]
    summary: Turn | None

    @property
    def lost_fields(self) -> bool:
        """Whether a turn or a summary was left out without a summary keeping its
        never-compress fields."""
        return any(item.reason == "over_budget" for item in self.dropped)


def _drop(piece: _Piece, section: Section, reason: DropReason, detail: str) -> DroppedItem:
    return DroppedItem(piece.id, section, reason, detail, piece.tokens, piece.origin)


def _dedupe(
    pieces: Sequence[_Piece], texts: Sequence[str], section: Section
) -> tuple[list[_Piece], list[DroppedItem]]:
    """Keep the first of each id and of each normalized text (pieces are in score order)."""
    kept: list[_Piece] = []
    dropped: list[DroppedItem] = []
    by_id: set[str] = set()
    by_text: dict[str, str] = {}
    for piece, text in zip(pieces, texts, strict=True):
        key = normal_form(text) or text
        if piece.id in by_id:
            dropped.append(_drop(piece, section, "duplicate", f"id {piece.id!r} repeated"))
        elif key in by_text:
            dropped.append(_drop(piece, section, "duplicate", f"same text as {by_text[key]!r}"))
        else:
            by_id.add(piece.id)
            by_text[key] = piece.id
            kept.append(piece)
    return kept, dropped


def _pack_block(
    section: Section,
    header: str,
    pieces: Sequence[_Piece],
    budget: int,
    counter: TokenCounter,
    group_header: tuple[int, str] | None = None,
) -> _Pack:
    """Admit whole pieces in order while the block message fits ``budget``.

    Each piece is costed alone (separator included); BPE can merge across a boundary,
    so the assembled message is recounted and, in the rare case it is over, the last
    admitted pieces are evicted until it fits. ``group_header`` ``(group, text)``: a
    sub-header rendered before the first admitted piece of that render group (its
    tokens charged with that piece).
    """
    base = message_tokens(counter, BLOCK_ROLE, header)
    grouped, sub_header = group_header if group_header is not None else (-1, "")
    sub_tokens = counter.count(ITEM_SEPARATOR + sub_header) if group_header else 0
    admitted: list[_Piece] = []
    dropped: list[DroppedItem] = []
    used = base
    charged = False
    for piece in pieces:
        extra = sub_tokens if piece.render_rank[0] == grouped and not charged else 0
        if used + piece.tokens + extra <= budget:
            admitted.append(piece)
            used += piece.tokens + extra
            charged = charged or extra > 0
        else:
            left = max(0, budget - used)
            dropped.append(
                _drop(
                    piece,
                    section,
                    "over_budget",
                    f"needs {piece.tokens + extra} tokens, {left} left of the {section} "
                    f"budget ({budget})",
                )
            )
    while admitted:
        ordered = sorted(admitted, key=lambda p: p.render_rank)
        texts: list[str] = []
        for piece in ordered:
            if piece.render_rank[0] == grouped and sub_header not in texts:
                texts.append(sub_header)
            texts.append(piece.text)
        content = block(header, texts)
        exact = message_tokens(counter, BLOCK_ROLE, content)
        if exact <= budget:
            items = tuple(AdmittedItem(p.id, section, p.tokens, p.origin) for p in ordered)
            return _Pack(ChatMessage(BLOCK_ROLE, content), exact, items, tuple(dropped))
        evicted = admitted.pop()
        dropped.append(
            _drop(
                evicted,
                section,
                "over_budget",
                f"the assembled {section} block came to {exact} tokens, over its budget ({budget})",
            )
        )
    return _Pack(None, 0, (), tuple(dropped))


def _score_order(values: Sequence[Any], score: Callable[[Any], float]) -> list[int]:
    return sorted(range(len(values)), key=lambda i: (-score(values[i]), i))


LOW_CONFIDENCE_GROUP = 3
"""The render group of low-confidence items: last, under their own header."""


def _confident(item: MemoryItem) -> bool:
    """A stored memory or document that passed the low-confidence floor. Live session
    state (L1) and working memory (L2) are not judged against the floor, so they do
    not say whether the request found an answer."""
    return item.layer == "L3" and not item.low_confidence


def _withheld(item: MemoryItem) -> bool:
    """Flagged low-confidence for being unrelated, not for being in doubt: a disputed
    fact is related (a newer turn says it changed) and is shown, labelled DISPUTED."""
    return item.low_confidence and not item.disputed


def _render_group(item: MemoryItem) -> int:
    if _withheld(item):
        return LOW_CONFIDENCE_GROUP
    return 0 if item.layer in LIVE_LAYERS else 1 if item.kind == "fact" else 2


def _memory_pack(items: Sequence[MemoryItem], budget: int, counter: TokenCounter) -> _Pack:
    # Under the floor, an item is noise next to a confident answer (a city, a budget
    # and an order under an allergy question): it is left out. When nothing confident
    # exists the weak matches are all there is, and they go last, as one marked group.
    withheld: list[DroppedItem] = []
    confident = [item for item in items if _confident(item)]
    if confident:
        # A confident memory marked PAST names the fact that replaced it: that fact is
        # what it says now, as confident as the memory that points to it.
        vouched = {item.replaced_by for item in confident if item.replaced_by}
        items = [
            replace(item, low_confidence=False)
            if item.low_confidence and item.kind == "fact" and item.text in vouched
            else item
            for item in items
        ]
        for item in items:
            if _withheld(item):
                line = memory_line(item)
                withheld.append(
                    DroppedItem(
                        item.id,
                        "memory",
                        "low_confidence",
                        "under the low-confidence floor, and confident memories answer "
                        "this request",
                        counter.count(ITEM_SEPARATOR + line),
                        item.origin,
                    )
                )
        items = [item for item in items if not _withheld(item)]
    entries = [
        # Live data first in the block, then current facts, then the rest (what was
        # said, knowledge), each group best first; low-confidence items last.
        (
            item.id,
            memory_line(item),
            item.text,
            item.origin,
            item.relevance,
            _render_group(item),
        )
        for item in items
    ]
    pack = _ranked_pack(
        "memory",
        MEMORY_HEADER,
        entries,
        budget,
        counter,
        group_header=(LOW_CONFIDENCE_GROUP, LOW_CONFIDENCE_HEADER),
    )
    return _Pack(pack.message, pack.used, pack.admitted, (*withheld, *pack.dropped))


def _tool_pack(results: Sequence[ToolResult], budget: int, counter: TokenCounter) -> _Pack:
    entries = [
        (r.call_id, tool_line(r), f"{r.name}\n{r.content}", r.origin, r.relevance, 0)
        for r in results
    ]
    return _ranked_pack("current", TOOL_HEADER, entries, budget, counter)


def _ranked_pack(
    section: Section,
    header: str,
    entries: Sequence[tuple[str, str, str, Origin, float, int]],
    budget: int,
    counter: TokenCounter,
    group_header: tuple[int, str] | None = None,
) -> _Pack:
    """``(id, line, dedupe text, origin, relevance, group)`` entries, deduplicated and
    packed best first within their group, never cut."""
    order = _score_order(entries, lambda entry: entry[4])
    pieces: list[_Piece] = []
    texts: list[str] = []
    for priority, index in enumerate(order):
        item_id, line, text, origin, _, group = entries[index]
        pieces.append(
            _Piece(item_id, line, counter.count(ITEM_SEPARATOR + line), origin, (group, priority))
        )
        texts.append(text)
    kept, duplicates = _dedupe(pieces, texts, section)
    pack = _pack_block(section, header, kept, budget, counter, group_header)
    return _Pack(pack.message, pack.used, pack.admitted, (*duplicates, *pack.dropped))


def _turn_origin(turn_id: str, turn: Turn) -> Origin:
    source = "summary" if turn.summary else f"turn:{turn.role}"
    return Origin("history", turn_id, source, None, None)


def _fit_summary(
    evicted: list[int],
    kept: list[int],
    digest: Callable[[int], TurnDigest],
    costs: dict[int, int],
    room: int,
    counter: TokenCounter,
) -> tuple[Turn, int, list[int], list[int]] | None:
    """The smallest change that fits a summary of the evicted turns into ``room``.

    Tries the summary of the evicted turns (full, then fields only); if it does not
    fit, folds the oldest kept turn into it too and tries again.
    """
    for extra in range(len(kept) + 1):
        covered = evicted + kept[:extra]
        rest = kept[extra:]
        left = room - sum(costs[i] for i in rest)
        for detail in DETAILS:
            summary = summarize_digests([digest(i) for i in covered], detail)
            cost = message_tokens(counter, summary.role, summary.content)
            if cost <= left:
                return summary, cost, covered, rest
    return None


def _history_floor(history: Sequence[Turn], counter: TokenCounter) -> int:
    """The smallest history budget that keeps every never-compress field: each
    existing summary whole, and one compact summary of all the other turns."""
    ids = turn_ids(history)
    summaries = sum(message_tokens(counter, t.role, t.content) for t in history if t.summary)
    digests = [digest_turn(ids[i], t) for i, t in enumerate(history) if not t.summary]
    if not digests:
        return summaries
    compact = summarize_digests(digests, "compact")
    return summaries + message_tokens(counter, compact.role, compact.content)


def _history_pack(
    history: Sequence[Turn], budget: int, counter: TokenCounter, compress: bool
) -> _HistoryPack:
    ids = turn_ids(history)
    costs = {i: message_tokens(counter, t.role, t.content) for i, t in enumerate(history)}
    origins = {i: _turn_origin(ids[i], t) for i, t in enumerate(history)}
    dropped: list[DroppedItem] = []

    def drop(i: int, reason: DropReason, detail: str) -> None:
        dropped.append(DroppedItem(ids[i], "history", reason, detail, costs[i], origins[i]))

    # Existing summaries first (newest first): they are compact and hold the
    # never-compress fields of everything before them. Never summarized again.
    used = 0
    kept_summaries: list[int] = []
    for i in reversed(range(len(history))):
        if not history[i].summary:
            continue
        if used + costs[i] <= budget:
            kept_summaries.append(i)
            used += costs[i]
        else:
            drop(i, "over_budget", f"summary needs {costs[i]} tokens, {budget - used} left")
    room = budget - used
    # Raw turns: the newest that fit, trimmed from the oldest.
    raw = [i for i in range(len(history)) if not history[i].summary]
    kept_newest_first: list[int] = []
    left = room
    for i in reversed(raw):
        if costs[i] > left:
            break
        kept_newest_first.append(i)
        left -= costs[i]
    kept = sorted(kept_newest_first)
    kept_set = set(kept)
    evicted = [i for i in raw if i not in kept_set]
    summary: Turn | None = None
    summary_cost = 0
    summary_at = -1
    if evicted and compress:
        digests: dict[int, TurnDigest] = {}

        def digest(i: int) -> TurnDigest:
            if i not in digests:
                digests[i] = digest_turn(ids[i], history[i])
            return digests[i]

        fitted = _fit_summary(evicted, kept, digest, costs, room, counter)
        if fitted is not None:
            summary, summary_cost, evicted, kept = fitted
            summary_at = evicted[0]
    summary_ref = "" if summary is None else summary.id or "summary"
    for i in evicted:
        if summary is not None:
            drop(i, "compressed", f"replaced by summary {summary_ref}")
        else:
            reason = "no summary of the older turns fits" if compress else "compression is off"
            drop(i, "over_budget", f"oldest turns trimmed; {reason}")
    messages: list[ChatMessage] = []
    admitted: list[AdmittedItem] = []
    chosen = sorted([*kept_summaries, *kept, *([summary_at] if summary is not None else [])])
    for i in chosen:
        if summary is not None and i == summary_at:
            messages.append(ChatMessage(summary.role, summary.content))
            admitted.append(
                AdmittedItem(
                    summary_ref,
                    "history",
                    summary_cost,
                    Origin("history", summary_ref, "summary", None, None),
                    summary=True,
                    covers=summary.covers,
                )
            )
            continue
        turn = history[i]
        messages.append(ChatMessage(turn.role, turn.content))
        admitted.append(
            AdmittedItem(
                ids[i], "history", costs[i], origins[i], summary=turn.summary, covers=turn.covers
            )
        )
    total = sum(costs[i] for i in [*kept_summaries, *kept]) + summary_cost
    return _HistoryPack(tuple(messages), total, tuple(admitted), tuple(dropped), summary)


def _lent(first: _Pack, second: _Pack) -> tuple[DroppedItem, ...]:
    """``second``'s drops, the items ``first`` had admitted saying where their room went."""
    had = {item.id for item in first.admitted}
    return tuple(
        replace(
            item,
            detail="its room was lent to the history, to keep the never-compress fields "
            "(ids, amounts, dates, decisions, constraints) of older turns",
        )
        if item.id in had and item.reason == "over_budget"
        else item
        for item in second.dropped
    )


def _lend_to_history(
    request: ContextRequest,
    budget: ContextBudget,
    counter: TokenCounter,
    system_used: int,
    input_used: int,
    memory: _Pack,
    tools: _Pack,
) -> tuple[_Pack, _Pack, _HistoryPack, dict[Section, int]] | None:
    """Room for the history to keep every never-compress field, or None when those
    fields alone do not fit beside the system prompt and the input.

    The history first takes the room the other sections leave unused; then the memory
    block gives up its lowest-ranked items, then the tool results theirs, only as much
    as the fields need. The lenders' budgets become what they use, the history's the
    rest, so the sections still sum to at most the usable context.
    """
    floor = _history_floor(request.history, counter)
    available = budget.available_tokens
    if floor > available - system_used - input_used:
        return None

    def room() -> int:
        return available - system_used - memory.used - input_used - tools.used

    if room() < floor:
        shrunk = _memory_pack(request.memory, max(0, memory.used - (floor - room())), counter)
        memory = _Pack(shrunk.message, shrunk.used, shrunk.admitted, _lent(memory, shrunk))
    if room() < floor:
        fewer = _tool_pack(request.tool_results, max(0, tools.used - (floor - room())), counter)
        tools = _Pack(fewer.message, fewer.used, fewer.admitted, _lent(tools, fewer))
    history = _history_pack(request.history, room(), counter, True)
    limits: dict[Section, int] = {
        "system": system_used,
        "memory": memory.used,
        "history": room(),
        "current": input_used + tools.used,
    }
    return memory, tools, history, limits


def build_context(
    request: ContextRequest,
    budget: ContextBudget,
    counter: TokenCounter,
    *,
    compress_history: bool = True,
) -> BuiltContext:
    """Build one model call's context within ``budget``, counted by ``counter``.

    Raises :class:`~memstrata.errors.BudgetError` when the system prompt does not fit
    the system section, or the current input the current section: those are sent
    whole or not at all, never as an empty context. Memory items and tool results are
    admitted by relevance, history turns from the newest; older turns that do not fit
    are compressed into one summary (``compress_history``) that keeps ids, amounts,
    dates and decisions verbatim. Existing summaries are kept as they are.

    Those never-compress fields survive any budget they fit at all: when no summary
    fits the history's share, the history borrows the room other sections leave
    unused, then the lowest-ranked memory items, then tool results (their
    ``sections[].budget`` become what they use), and the summary shrinks to
    fields-only lines before more turns are folded into it. Memory items under the
    low-confidence floor are left out (``low_confidence``) when a confident stored
    memory is there, else packed last under one LOW-CONFIDENCE header.
    """
    if not isinstance(request, ContextRequest):
        raise ValidationError("request", f"must be a ContextRequest, got {type(request).__name__}")
    if not isinstance(budget, ContextBudget):
        raise ValidationError("budget", f"must be a ContextBudget, got {type(budget).__name__}")
    if not isinstance(counter, TokenCounter):
        raise ValidationError("counter", "must implement TokenCounter (name, exact, count...)")
    if not isinstance(compress_history, bool):
        raise ValidationError("compress_history", "must be a bool")
    budgets = budget.section_budgets()

    system_used = REPLY_PRIMING_TOKENS + message_tokens(counter, "system", request.system_prompt)
    if system_used > budgets["system"]:
        raise BudgetError(
            "system_prompt",
            system_used,
            budgets["system"],
            f"{budget.available_tokens} usable tokens x shares.system "
            f"{budget.shares.system:g}; grow window_tokens or shares.system, or shorten it",
        )
    input_used = message_tokens(counter, "user", request.current_input)
    if input_used > budgets["current"]:
        raise BudgetError(
            "current_input",
            input_used,
            budgets["current"],
            f"{budget.available_tokens} usable tokens x shares.current {budget.shares.current:g}",
        )

    memory = _memory_pack(request.memory, budgets["memory"], counter)
    history = _history_pack(request.history, budgets["history"], counter, compress_history)
    tools = _tool_pack(request.tool_results, budgets["current"] - input_used, counter)
    limits: dict[Section, int] = dict(budgets)
    if compress_history and history.lost_fields:
        lent = _lend_to_history(request, budget, counter, system_used, input_used, memory, tools)
        if lent is not None:
            memory, tools, history, limits = lent

    chat: list[ChatMessage] = [ChatMessage("system", request.system_prompt)]
    if memory.message is not None:
        chat.append(memory.message)
    chat.extend(history.messages)
    if tools.message is not None:
        chat.append(tools.message)
    chat.append(ChatMessage("user", request.current_input))

    used = {
        "system": system_used,
        "memory": memory.used,
        "history": history.used,
        "current": input_used + tools.used,
    }
    sections = tuple(SectionUsage(name, limits[name], used[name]) for name in budgets)
    return BuiltContext(
        chat=tuple(chat),
        admitted=(*memory.admitted, *history.admitted, *tools.admitted),
        dropped=(*memory.dropped, *history.dropped, *tools.dropped),
        sections=sections,
        total_tokens=sum(used.values()),
        available_tokens=budget.available_tokens,
        counter=counter.name,
        exact=counter.exact,
        summary=history.summary,
    )
