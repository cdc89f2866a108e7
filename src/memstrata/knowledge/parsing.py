"""Pure parsers: a document's text into sections of blocks (paragraphs, code).

Each parser returns :class:`Section` values in document order; a section's
``path`` is its heading trail (``("Guide", "Install")``). Text before the first
heading has the empty path. Sections without any block are dropped here, so an
empty section can never produce a chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from html.parser import HTMLParser

from memstrata.errors import ValidationError


class DocFormat(StrEnum):
    """The document formats the cold path understands."""

    MARKDOWN = "markdown"
    HTML = "html"
    TEXT = "text"


_SUFFIXES = {
    ".md": DocFormat.MARKDOWN,
    ".markdown": DocFormat.MARKDOWN,
    ".html": DocFormat.HTML,
    ".htm": DocFormat.HTML,
    ".txt": DocFormat.TEXT,
}
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(_SUFFIXES)


def format_for_suffix(suffix: str) -> DocFormat | None:
    """The format of a file suffix such as ``.md`` (case-insensitive), or None."""
    return _SUFFIXES.get(suffix.lower())


@dataclass(frozen=True, slots=True)
class Block:
    """A paragraph (prose, a list, a table row...) or a code block kept verbatim."""

    text: str
    code: bool = False


@dataclass(frozen=True, slots=True)
class Section:
    """A heading trail and the blocks under that heading (never empty)."""

    path: tuple[str, ...]
    blocks: tuple[Block, ...]


class _SectionBuilder:
    """Collects blocks under a heading stack; headings of level n replace levels >= n."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self._blocks: list[Block] = []
        self.sections: list[Section] = []

    def heading(self, level: int, title: str) -> None:
        self._flush()
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, " ".join(title.split())))

    def block(self, text: str, *, code: bool = False) -> None:
        if text.strip():
            self._blocks.append(Block(text if code else text.strip(), code))

    def _flush(self) -> None:
        if self._blocks:
            path = tuple(title for _, title in self._stack if title)
            self.sections.append(Section(path, tuple(self._blocks)))
        self._blocks = []

    def finish(self) -> tuple[Section, ...]:
        self._flush()
        return tuple(self.sections)


# --- Markdown ---------------------------------------------------------------------

FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def parse_markdown(text: str) -> tuple[Section, ...]:
    """ATX (``#``...``######``) and setext headings define sections.

    A fenced code block is one block, so a ``# comment`` inside it is never taken
    for a heading and the fence can be kept whole by the chunker.
    """
    builder = _SectionBuilder()
    lines = text.splitlines()
    paragraph: list[str] = []

    def flush() -> None:
        builder.block("\n".join(paragraph))
        paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE_RE.match(line)
        if fence:
            flush()
            marker = fence.group(1)
            body = [line]
            i += 1
            # Runs to the matching closing fence, or to the end of an unclosed one.
            while i < len(lines):
                body.append(lines[i])
                i += 1
                stripped = body[-1].strip()
                if stripped.startswith(marker) and not stripped.strip(marker[0]):
                    break
            builder.block("\n".join(body), code=True)
            continue
        atx = _ATX_RE.match(line)
        if atx:
            flush()
            title = _CLOSING_HASHES_RE.sub("", atx.group(2) or "")
            builder.heading(len(atx.group(1)), title)
        elif len(paragraph) == 1 and _SETEXT_RE.match(line):
            # "Title\n=====" / "Title\n-----": only directly under a one-line paragraph,
            # so a "---" after a blank line stays a thematic break.
            title = paragraph.pop()
            builder.heading(1 if line.strip().startswith("=") else 2, title)
        elif not line.strip() or _SETEXT_RE.match(line):
            flush()
        else:
            paragraph.append(line)
        i += 1
    flush()
    return builder.finish()


# --- HTML -------------------------------------------------------------------------

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# Not knowledge: executable or presentational content, and site navigation that
# would repeat on every exported page.
_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "nav", "head"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "dd", "details", "div",
        "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr",
        "html", "li", "main", "ol", "p", "section", "summary", "table", "tbody", "td",
        "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"})


class _HtmlSections(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = _SectionBuilder()
        self.title = ""
        self._dropped: list[str] = []
        self._text: list[str] = []
        self._heading: int | None = None
        self._in_title = False
        self._pre_depth = 0

    def _flush(self) -> None:
        joined = "".join(self._text)
        self._text = []
        if self._pre_depth:
            self.builder.block(joined, code=True)
        else:
            self.builder.block(" ".join(joined.split()))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if self._dropped or tag in _DROPPED:
            if tag not in _VOID:
                self._dropped.append(tag)
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag == "pre":
            self._flush()
            self._pre_depth += 1
        elif tag in _BLOCKS and not self._pre_depth and self._heading is None:
            self._flush()
            if tag == "li":
                self._text.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._dropped:
            # Pop up to the matching open tag; tolerate unclosed inner elements.
            if tag in self._dropped:
                while self._dropped and self._dropped.pop() != tag:
                    pass
            return
        if tag in _HEADINGS and self._heading is not None:
            title = " ".join("".join(self._text).split())
            self._text = []
            self.builder.heading(self._heading, title)
            self._heading = None
        elif tag == "pre" and self._pre_depth:
            self._flush()
            self._pre_depth -= 1
        elif tag in _BLOCKS and not self._pre_depth and self._heading is None:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if not self._dropped:
            self._text.append(data)

    def result(self) -> tuple[Section, ...]:
        self.close()
        self._heading = None
        self._flush()
        return self.builder.finish()


def parse_html(text: str) -> tuple[tuple[Section, ...], str]:
    """``h1``-``h6`` define sections; scripts, styles and navigation are dropped.

    Returns the sections and the ``<title>`` text ("" when absent), which callers
    use as the document title when nothing precedes the first heading.
    """
    parser = _HtmlSections()
    parser.feed(text)
    sections = parser.result()
    return sections, " ".join(parser.title.split())


# --- Plain text -------------------------------------------------------------------

_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t]*\n")
TITLE_MAX_CHARS = 80
_NOT_TITLE_END = tuple(".!?,;:。！？，；：")


def parse_text(text: str) -> tuple[Section, ...]:
    """Blank lines separate paragraphs; a short first line is taken as the title.

    The first paragraph is a title when it is one line of at most
    ``TITLE_MAX_CHARS`` characters not ending like a sentence, and text follows it.
    """
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK_RE.split(text) if p.strip()]
    path: tuple[str, ...] = ()
    if len(paragraphs) > 1:
        first = paragraphs[0]
        if (
            "\n" not in first
            and len(first) <= TITLE_MAX_CHARS
            and not first.endswith(_NOT_TITLE_END)
        ):
            path = (" ".join(first.split()),)
            paragraphs = paragraphs[1:]
    if not paragraphs:
        return ()
    return (Section(path, tuple(Block(p) for p in paragraphs)),)


def parse(text: str, fmt: DocFormat) -> tuple[tuple[Section, ...], str]:
    """Sections of ``text`` in ``fmt`` and the document's own title ("" if none)."""
    if fmt is DocFormat.MARKDOWN:
        return parse_markdown(text), ""
    if fmt is DocFormat.HTML:
        return parse_html(text)
    if fmt is DocFormat.TEXT:
        return parse_text(text), ""
    raise ValidationError("fmt", f"unsupported document format {fmt!r}")
