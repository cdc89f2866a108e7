"""The pure chunker: sections, budgets, sentence and word boundaries, formats."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.errors import ValidationError
from memstrata.hashing import sha256_hex
from memstrata.knowledge import ApproxTokenizer, Chunk, Chunker, DocFormat
from memstrata.knowledge.tokens import CJK_CLASS

TOK = ApproxTokenizer()


def body(chunk: Chunk) -> str:
    """The chunk text without its heading trail."""
    heading = " > ".join(chunk.section_path)
    assert chunk.text.startswith(heading + "\n\n") if heading else True
    return chunk.text[len(heading) + 2 :] if heading else chunk.text


def english(n: int, start: int = 0) -> str:
    return " ".join(f"Sentence {i} talks about pumps and valves." for i in range(start, start + n))


class CharTokenizer:
    """TEST DOUBLE: one token per non-space character (a 'tokenizer' for long words)."""

    name = "test-chars"

    def count(self, text: str) -> int:
        return sum(1 for c in text if not c.isspace())


def test_approx_tokenizer_counts_words_and_cjk_characters() -> None:
    assert TOK.count("") == 0
    assert TOK.count("hello, world!") == 2
    assert TOK.count("你好世界") == 4
    assert TOK.count("use 中文 here") == 4
    # Long blobs cost more than one token, so they cannot sneak past a budget.
    assert TOK.count("a" * 12) == 1
    assert TOK.count("a" * 13) == 2
    assert TOK.count("a" * 30) == 3


def test_markdown_sections_titles_and_empty_sections() -> None:
    md = (
        "# Guide\n\nIntro text.\n\n## Install\n\nRun the installer.\n\n"
        "## Empty\n\n### Deep\n\nDeep text.\n"
    )
    chunks = Chunker().chunk(md, DocFormat.MARKDOWN)
    assert [c.section_path for c in chunks] == [
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Empty", "Deep"),
    ]
    assert chunks[1].text == "Guide > Install\n\nRun the installer."
    assert [c.index for c in chunks] == [0, 1, 2]
    assert all(c.content_hash == sha256_hex(c.text) for c in chunks)
    assert chunks[1].section == "Guide > Install"


def test_heading_only_document_produces_nothing() -> None:
    assert Chunker().chunk("# A\n\n## B\n\n   \n", DocFormat.MARKDOWN) == ()
    assert Chunker().chunk("", DocFormat.TEXT) == ()


def test_text_before_first_heading_uses_the_given_title() -> None:
    chunks = Chunker().chunk("Preface.\n\n# One\n\nBody.", DocFormat.MARKDOWN, title="manual")
    assert chunks[0].section_path == ("manual",)
    assert chunks[0].text == "manual\n\nPreface."
    assert chunks[1].section_path == ("One",)


def test_code_fence_is_one_block_and_its_comments_are_not_headings() -> None:
    md = "# Setup\n\n```bash\n# install it\npip install pump\n\n# run\npump --fast\n```\n\nAfter.\n"
    chunks = Chunker().chunk(md, DocFormat.MARKDOWN)
    assert len(chunks) == 1
    assert chunks[0].section_path == ("Setup",)
    assert "```bash\n# install it\npip install pump\n\n# run\npump --fast\n```" in chunks[0].text


def test_long_code_fence_splits_at_lines_and_each_piece_stays_fenced() -> None:
    lines = [f"    step_{i}(valve={i})  # keep" for i in range(60)]
    md = "# Code\n\n```python\n" + "\n".join(lines) + "\n```\n"
    chunks = Chunker(max_tokens=40).chunk(md, DocFormat.MARKDOWN)
    assert len(chunks) > 1
    seen: list[str] = []
    for chunk in chunks:
        assert chunk.token_count <= 40
        text = body(chunk)
        assert text.startswith("```python\n") and text.endswith("\n```")
        seen += text.split("\n")[1:-1]
    assert seen == lines  # indentation kept, nothing lost, no line cut


def test_long_section_splits_at_sentences_within_budget() -> None:
    md = "# Pumps\n\n" + english(100) + "\n"
    chunks = Chunker(max_tokens=64).chunk(md, DocFormat.MARKDOWN)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.token_count == TOK.count(chunk.text) <= 64
        assert not chunk.oversized
        assert body(chunk).endswith("valves.")  # cut between sentences only
    # Greedy packing: every chunk but the last is close to the budget.
    assert all(c.token_count > 64 - 9 for c in chunks[:-1])
    assert " ".join(body(c) for c in chunks) == english(100)


def test_sizes_near_the_budget() -> None:
    chunker = Chunker(max_tokens=32)
    heading_cost = TOK.count("T\n\n")
    words = [f"w{i}" for i in range(32 - heading_cost)]
    exact = "# T\n\n" + " ".join(words) + "\n"
    assert [c.token_count for c in chunker.chunk(exact, DocFormat.MARKDOWN)] == [32]
    over = "# T\n\n" + " ".join([*words, "extra"]) + "\n"
    counts = [c.token_count for c in chunker.chunk(over, DocFormat.MARKDOWN)]
    assert len(counts) == 2 and max(counts) <= 32


def test_paragraphs_are_packed_whole_before_anything_is_split() -> None:
    paragraphs = [english(3, start=10 * i) for i in range(6)]  # 21 tokens each
    md = "# P\n\n" + "\n\n".join(paragraphs)
    chunks = Chunker(max_tokens=50).chunk(md, DocFormat.MARKDOWN)
    assert [body(c) for c in chunks] == [
        "\n\n".join(paragraphs[0:2]),
        "\n\n".join(paragraphs[2:4]),
        "\n\n".join(paragraphs[4:6]),
    ]


def test_chinese_text_splits_at_chinese_sentence_punctuation() -> None:
    sentences = [
        f"第{i}号泵的振动阈值需要检查。" if i % 3 else f"阀门{i}是否正常？" for i in range(40)
    ]
    md = "# 设备手册\n\n" + "".join(sentences) + "\n"
    chunks = Chunker(max_tokens=48).chunk(md, DocFormat.MARKDOWN)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.token_count <= 48
        assert chunk.text.startswith("设备手册\n\n")
        assert body(chunk)[-1] in "。！？"
    assert "".join(body(c) for c in chunks) == "".join(sentences)


def test_over_long_sentence_is_split_between_words_never_inside_one() -> None:
    words = [f"token{i}" for i in range(300)]
    text = "Run-on\n\n" + " ".join(words)  # one sentence, no punctuation at all
    chunks = Chunker(max_tokens=64).chunk(text, DocFormat.TEXT)
    assert len(chunks) >= 5
    assert all(c.token_count <= 64 and not c.oversized for c in chunks)
    assert [w for c in chunks for w in body(c).split()] == words


def test_a_single_word_over_the_budget_is_kept_whole_and_flagged() -> None:
    # With a per-character tokenizer a 40-letter word alone exceeds a 20-token budget.
    giant = "x" * 40
    chunker = Chunker(max_tokens=20, tokenizer=CharTokenizer())
    chunks = chunker.chunk(f"short words here {giant} and more", DocFormat.TEXT)
    oversized = [c for c in chunks if c.oversized]
    assert [c.text for c in oversized] == [giant]
    assert oversized[0].token_count == 40
    assert all(c.token_count <= 20 for c in chunks if not c.oversized)
    assert " ".join(c.text for c in chunks).split() == f"short words here {giant} and more".split()


def test_long_heading_trail_is_shortened() -> None:
    long_title = " ".join(f"word{i}" for i in range(30))
    md = f"# {long_title}\n\nBody text here.\n"
    chunk = Chunker(max_tokens=32).chunk(md, DocFormat.MARKDOWN)[0]
    assert chunk.token_count <= 32
    assert chunk.text.endswith("…\n\nBody text here.")


def test_html_sections_with_scripts_styles_and_navigation_dropped() -> None:
    html = """<!doctype html><html><head><title>Pump Manual</title>
    <style>p { color: red }</style><script>var secret = 1;</script></head>
    <body><nav><a href="/">Home</a></nav><p>Read this first.</p>
    <h1>Maintenance</h1><p>Check the <b>valve</b> &amp; the seal.</p>
    <ul><li>weekly</li><li>monthly</li></ul>
    <h2>Tools</h2><pre>  wrench --size 10
    done</pre><script>alert(1)</script><h3>Nothing here</h3></body></html>"""
    chunks = Chunker().chunk(html, DocFormat.HTML, title="file-stem")
    assert [c.section_path for c in chunks] == [
        ("Pump Manual",),
        ("Maintenance",),
        ("Maintenance", "Tools"),
    ]
    assert chunks[0].text == "Pump Manual\n\nRead this first."
    assert chunks[1].text == "Maintenance\n\nCheck the valve & the seal.\n\n- weekly\n\n- monthly"
    assert "  wrench --size 10" in chunks[2].text
    joined = "\n".join(c.text for c in chunks)
    for dropped in ("color", "secret", "alert", "Home"):
        assert dropped not in joined


def test_plain_text_title_detection() -> None:
    titled = Chunker().chunk("Valve Guide\n\nOpen slowly.\n\nClose firmly.", DocFormat.TEXT)
    assert [c.section_path for c in titled] == [("Valve Guide",)]
    assert titled[0].text == "Valve Guide\n\nOpen slowly.\n\nClose firmly."
    # A first line that reads like a sentence is content, not a title.
    untitled = Chunker().chunk("Open slowly.\n\nClose firmly.", DocFormat.TEXT, title="notes")
    assert untitled[0].text == "notes\n\nOpen slowly.\n\nClose firmly."


def test_setext_headings() -> None:
    md = "Title\n=====\n\nIntro.\n\nPart\n----\n\nBody.\n\n---\n\nAfter a rule.\n"
    chunks = Chunker().chunk(md, DocFormat.MARKDOWN)
    assert [c.section_path for c in chunks] == [("Title",), ("Title", "Part")]
    assert chunks[1].text == "Title > Part\n\nBody.\n\nAfter a rule."


def test_budget_is_validated() -> None:
    with pytest.raises(ValidationError) as err:
        Chunker(max_tokens=8)
    assert err.value.field == "max_tokens"


_UNITS = re.compile(rf"[{CJK_CLASS}]|[^\s{CJK_CLASS}]+")
_WORD = st.one_of(
    st.from_regex(r"[a-z]{1,12}", fullmatch=True),
    st.sampled_from(["valve.", "pump!", "why?", "e.g.", "3.5", "泵", "阀门。", "好！"]),
)
_PARAGRAPH = st.lists(_WORD, min_size=1, max_size=80).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(paragraphs=st.lists(_PARAGRAPH, min_size=1, max_size=6), budget=st.integers(16, 80))
def test_property_within_budget_nothing_lost_no_word_cut(
    paragraphs: list[str], budget: int
) -> None:
    text = "\n\n".join(paragraphs)
    chunks = Chunker(max_tokens=budget).chunk(text, DocFormat.MARKDOWN)
    assert all(c.token_count <= budget and not c.oversized for c in chunks)
    # Latin words must come back whole; CJK text may be cut between characters.
    words = _UNITS.findall(text)
    assert _UNITS.findall(" ".join(c.text for c in chunks)) == words
