"""Pure chunking of Markdown, HTML and plain text into retrieval-sized chunks.

Chunks never cross a section boundary. Inside a section, whole blocks (paragraphs,
code fences) are packed greedily up to the budget; a block too big for one chunk
is split at lines, then sentences (``.!?`` and ``。！？``), then words, and its
pieces are packed the same way. A cut never falls inside a word: the only chunk
that can exceed the budget is one holding a single word that alone exceeds it,
and that chunk says so (``oversized``).

Every chunk's text starts with its heading trail (``Guide > Install``), so a
chunk retrieved on its own still says what it is about.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memstrata.errors import ValidationError
from memstrata.hashing import sha256_hex
from memstrata.knowledge.parsing import FENCE_RE, Block, DocFormat, Section, parse
from memstrata.knowledge.tokens import CJK_CLASS, ApproxTokenizer, Tokenizer
from memstrata.validation import check_positive_int

DEFAULT_MAX_TOKENS = 256
MIN_MAX_TOKENS = 16
SECTION_SEPARATOR = " > "
# Bumped whenever the chunk boundaries an input produces change, so ingested files
# are re-chunked rather than skipped as unchanged.
CHUNKER_VERSION = 1

_SENTENCE_END_RE = re.compile(r"(?:[。！？]+[”’」』）]*|[.!?]+[”’\"')\]]*(?=\s|$))\s*")
_WORD_RE = re.compile(rf"\s+|[{CJK_CLASS}]\s*|[^\s{CJK_CLASS}]+\s*")

Fits = Callable[[str], bool]
Splitter = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieval unit of a document.

    ``text`` begins with the heading trail; ``index`` is the chunk's position in
    the document; ``content_hash`` is the sha256 of ``text``. ``oversized`` is
    True only for a chunk holding a single word longer than the budget.
    """

    text: str
    section_path: tuple[str, ...]
    index: int
    token_count: int
    content_hash: str
    oversized: bool = False

    @property
    def section(self) -> str:
        """The heading trail as one string (``"Guide > Install"``)."""
        return SECTION_SEPARATOR.join(self.section_path)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _sentences(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(text):
        if match.end() > start:
            pieces.append(text[start : match.end()])
            start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _words(text: str) -> list[str]:
    # A CJK character is a word of its own: those scripts put no spaces between words.
    return _WORD_RE.findall(text)


PROSE_LEVELS: tuple[Splitter, ...] = (_lines, _sentences, _words)
CODE_LEVELS: tuple[Splitter, ...] = (_lines, _words)


def _longest_fit(segments: Sequence[str], start: int, fits: Fits) -> int:
    """The largest ``end`` such that ``segments[start:end]`` fits (``start`` if none does).

    Galloping then bisecting costs O(log n) counts per chunk instead of one count per
    segment, which matters for a huge run-on sentence split word by word. It relies on
    a longer text never costing fewer tokens, which holds for any sane tokenizer.
    """

    def ok(end: int) -> bool:
        return fits("".join(segments[start:end]))

    good, step = start, 1
    while good < len(segments):
        probe = min(good + step, len(segments))
        if not ok(probe):
            bad = probe
            break
        good, step = probe, step * 2
    else:
        return good
    while bad - good > 1:
        middle = (good + bad) // 2
        if ok(middle):
            good = middle
        else:
            bad = middle
    return good


def _split(text: str, levels: Sequence[Splitter], fits: Fits, *, code: bool = False) -> list[str]:
    """Contiguous pieces of ``text`` that each fit, cut at the coarsest level possible.

    Separators stay attached to the piece before them, so pieces join back exactly;
    only a single word that does not fit on its own comes back over the budget.
    Code keeps its leading indentation (only blank lines are trimmed from its pieces).
    """

    def clean(piece: str) -> str:
        return piece.strip("\n").rstrip() if code else piece.strip()

    if fits(clean(text)) or not levels:
        return [clean(text)] if text.strip() else []
    segments = levels[0](text)
    out: list[str] = []
    i = 0
    while i < len(segments):
        end = _longest_fit(segments, i, lambda piece: fits(clean(piece)))
        if end > i:
            piece = clean("".join(segments[i:end]))
            if piece:
                out.append(piece)
            i = end
            continue
        # One segment too big on its own: cut it at the next level down.
        pieces = _split(segments[i], levels[1:], fits, code=code)
        if pieces and fits(pieces[-1]):
            # Its tail stays open so the following segments can still join it.
            out.extend(pieces[:-1])
            segment = segments[i]
            segments[i] = pieces[-1] + segment[len(segment.rstrip()) :]
        else:
            out.extend(pieces)
            i += 1
    return out


def _fence(block: Block) -> tuple[str, str, str]:
    """(opening line, inner code, closing line) of a fenced block; bare code otherwise."""
    lines = block.text.split("\n")
    opening = FENCE_RE.match(lines[0])
    if not opening:
        return "", block.text, ""
    marker = opening.group(1)
    if len(lines) > 1 and lines[-1].strip().startswith(marker):
        return lines[0], "\n".join(lines[1:-1]), lines[-1]
    return lines[0], "\n".join(lines[1:]), marker


class Chunker:
    """Splits documents into chunks of at most ``max_tokens`` tokens (heading included).

    ``tokenizer`` defaults to :class:`ApproxTokenizer`; pass an exact one to size
    chunks for a given model.
    """

    def __init__(
        self, *, max_tokens: int = DEFAULT_MAX_TOKENS, tokenizer: Tokenizer | None = None
    ) -> None:
        check_positive_int("max_tokens", max_tokens)
        if max_tokens < MIN_MAX_TOKENS:
            raise ValidationError("max_tokens", f"must be >= {MIN_MAX_TOKENS}")
        self._max_tokens = max_tokens
        self._tokenizer: Tokenizer = tokenizer if tokenizer is not None else ApproxTokenizer()

    @property
    def max_tokens(self) -> int:
        """The token budget of one chunk, heading trail included."""
        return self._max_tokens

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer chunks are sized with."""
        return self._tokenizer

    @property
    def fingerprint(self) -> str:
        """Identifies the chunk boundaries this chunker produces (version, budget, tokenizer)."""
        return f"v{CHUNKER_VERSION}:{self._max_tokens}:{self._tokenizer.name}"

    def chunk(self, text: str, fmt: DocFormat, *, title: str = "") -> tuple[Chunk, ...]:
        """Chunks of ``text`` parsed as ``fmt``.

        ``title`` (e.g. the file name) heads the text that precedes any heading when
        the document has no title of its own (an HTML ``<title>``, a plain-text title line).
        """
        sections, own_title = parse(text, fmt)
        return self.chunk_sections(sections, title=own_title or title)

    def chunk_sections(self, sections: Sequence[Section], *, title: str = "") -> tuple[Chunk, ...]:
        """Chunks of already parsed sections, numbered in order."""
        fallback = tuple(" ".join(title.split()).split(SECTION_SEPARATOR)) if title.strip() else ()
        chunks: list[Chunk] = []
        for section in sections:
            path = section.path or fallback
            heading = self._heading(path)
            for body in self._bodies(section.blocks, heading):
                text = f"{heading}\n\n{body}" if heading else body
                tokens = self._tokenizer.count(text)
                chunks.append(
                    Chunk(
                        text=text,
                        section_path=path,
                        index=len(chunks),
                        token_count=tokens,
                        content_hash=sha256_hex(text),
                        oversized=tokens > self._max_tokens,
                    )
                )
        return tuple(chunks)

    def _heading(self, path: tuple[str, ...]) -> str:
        # The trail is context, not content: it may take at most a quarter of the
        # budget, falling back to the last title, then to that title's first words.
        limit = self._max_tokens // 4
        count = self._tokenizer.count
        full = SECTION_SEPARATOR.join(path)
        if not path or count(full) <= limit:
            return full
        if count(path[-1]) <= limit:
            return path[-1]
        kept = ""
        for word in _words(path[-1]):
            if count(kept + word + "…") > limit:
                break
            kept += word
        return kept.rstrip() + "…"

    def _bodies(self, blocks: Sequence[Block], heading: str) -> list[str]:
        count, budget = self._tokenizer.count, self._max_tokens

        def fits(body: str) -> bool:
            return count(f"{heading}\n\n{body}" if heading else body) <= budget

        bodies: list[str] = []
        current = ""
        for block in blocks:
            candidate = f"{current}\n\n{block.text}" if current else block.text
            if fits(candidate):
                current = candidate
                continue
            if current:
                bodies.append(current)
            current = ""
            if fits(block.text):
                current = block.text
                continue
            pieces = self._split_block(block, fits)
            bodies.extend(pieces[:-1])
            if pieces and fits(pieces[-1]) and not block.code:
                current = pieces[-1]  # a prose tail may share its chunk with what follows
            elif pieces:
                bodies.append(pieces[-1])
        if current:
            bodies.append(current)
        return bodies

    def _split_block(self, block: Block, fits: Fits) -> list[str]:
        if not block.code:
            return _split(block.text, PROSE_LEVELS, fits)
        opening, inner, closing = _fence(block)
        if not opening:
            return _split(block.text, CODE_LEVELS, fits, code=True)

        # Each piece of a long fenced block is fenced again, so it renders as code.
        def wrap(piece: str) -> str:
            return f"{opening}\n{piece}\n{closing}"

        return [wrap(p) for p in _split(inner, CODE_LEVELS, lambda p: fits(wrap(p)), code=True)]
