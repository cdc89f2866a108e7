"""Query routes: the raw query, the entities named in it, the recent conversation intent.

Pure functions. Each route is searched hybrid (dense + BM25) by the retriever; a
route with nothing to say (no entity in the query, no recent turns) is left out.
:func:`entity_spans` locates the entities in the query, so their vector can be
pooled from the query's own forward pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Each opening quote with its own closing one. An apostrophe inside a word ("Anna's",
# "Ender's Game") neither opens nor closes a single-quoted phrase.
_QUOTED = re.compile(
    r'"([^"]{2,80})"'
    r"|“([^”]{2,80})”"
    r"|「([^」]{2,80})」"
    r"|『([^』]{2,80})』"
    r"|‘((?:[^’]|’(?=\w)){2,80})’"
    r"|(?<!\w)'((?:[^']|'(?=\w)){2,80})'(?!\w)"
)
# Ids, numbers, versions, dates (ORD-7781, case_12, A123, v2.0, 2023-06-16, 45): maximal
# runs of id characters holding a digit. One pass without backtracking - a query is
# user input, and a pattern like [A-Za-z]*\d at every word start is quadratic.
_ID_TOKEN = re.compile(r"[A-Za-z0-9_./:#-]+")
_ID_EDGE = "_./:#-"
_CAPITALIZED = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*")
# Capitalized only because they open a question or a clause, not names.
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "has",
        "have",
        "had",
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
        "me",
        "him",
        "us",
        "them",
        "this",
        "that",
        "these",
        "those",
        "in",
        "on",
        "at",
        "of",
        "for",
        "to",
        "from",
        "by",
        "with",
        "about",
        "as",
        "and",
        "or",
        "but",
        "if",
        "not",
        "no",
        "yes",
        "please",
        "tell",
        "give",
        "show",
        "list",
        "find",
        "any",
        "some",
        "all",
        "each",
        "every",
        "both",
        "either",
        "neither",
        "there",
        "here",
        "then",
        "than",
        "so",
    ]
)
_POSSESSIVE = re.compile(r"['’]s?$")
_EDGE_PUNCT = " ?!.,;:\"'“”‘’「」『』"
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")
_CJK_FUNCTION = re.compile(
    r"什么|怎么|为什么|哪里|哪个|哪些|多少|是不是|有没有|吗|呢|了|的|我|你|他|她"
)


MAX_INTENT_CHARS = 4_000
"""The intent route keeps the newest this many characters of the recent turns."""


@dataclass(frozen=True, slots=True)
class Route:
    """One query route: a name, the text searched, its weight in the merge."""

    name: str
    text: str
    weight: float


def entities(query: str) -> tuple[str, ...]:
    """Names, ids, numbers and quoted phrases in ``query``, in order, without repeats."""
    found: list[str] = []
    for match in _QUOTED.finditer(query):
        found.append(next(group for group in match.groups() if group is not None).strip())
    for match in _ID_TOKEN.finditer(query):
        token = match.group(0).strip(_ID_EDGE)
        if any(char.isdigit() for char in token):
            found.append(token)
    for match in _CAPITALIZED.finditer(query):
        words = [w for w in match.group(0).split() if w.lower() not in _FUNCTION_WORDS]
        if words:
            # "Lena's painting" names Lena (and must match a ``speaker`` field).
            found.append(_POSSESSIVE.sub("", " ".join(words)))
    for run in _CJK_RUN.findall(query):
        for piece in _CJK_FUNCTION.split(run):
            if len(piece) >= 2:
                found.append(piece)
    kept: list[str] = []
    folded: set[str] = set()  # repeats are case-insensitive: "Blue Bottle", "blue bottle"
    for item in found:
        key = item.strip(_EDGE_PUNCT)
        if key and key.lower() not in folded and key.lower() not in _FUNCTION_WORDS:
            folded.add(key.lower())
            kept.append(key)
    return tuple(kept)


def entity_spans(query: str, named: Sequence[str]) -> tuple[tuple[int, int], ...] | None:
    """Where ``named`` (from :func:`entities`) occur in ``query``, as character spans.

    An entity is found whole, or word by word when :func:`entities` dropped words
    from it ("What Lena" -> "Lena") or its case differs; None when a word is
    not in ``query`` at all - the caller then embeds the entity text on its own.
    """
    spans: list[tuple[int, int]] = []
    for entity in named:
        start = query.find(entity)
        if start >= 0:
            spans.append((start, start + len(entity)))
            continue
        for word in entity.split():
            match = re.search(re.escape(word), query, re.IGNORECASE)
            if match is None:
                return None
            spans.append(match.span())
    return tuple(spans) if spans else None


def _bare(text: str) -> str:
    return text.strip().strip("?!.,;:").strip().lower()


def build_routes(
    query: str,
    recent: Sequence[str],
    *,
    entity_weight: float,
    intent_weight: float,
    intent_turns: int = 3,
    named: Sequence[str] | None = None,
) -> tuple[Route, ...]:
    """The routes for one retrieval: raw query first, then entities, then intent.

    The entity route is dropped when it would repeat the query (a bare name); the
    intent route uses the last ``intent_turns`` recent turns. ``named`` passes
    ``entities(query)`` when the caller computed it already.
    """
    routes = [Route("query", query, 1.0)]
    if named is None:
        named = entities(query)
    entity_text = " ".join(named)
    if named and entity_weight > 0 and _bare(entity_text) != _bare(query):
        routes.append(Route("entities", entity_text, entity_weight))
    recent_text = " ".join(t.strip() for t in list(recent)[-intent_turns:] if t.strip())
    if len(recent_text) > MAX_INTENT_CHARS:
        # Turns may be long (a pasted document); the route is searched as a query, whose
        # limit is MAX_TEXT_CHARS. The newest text is the intent; the model reads fewer
        # tokens than this anyway.
        recent_text = recent_text[-MAX_INTENT_CHARS:].lstrip()
    if recent_text and intent_weight > 0:
        routes.append(Route("intent", recent_text, intent_weight))
    return tuple(routes)
