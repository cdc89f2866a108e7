"""Long turns (LongMemEval-like answers of hundreds of words) through the rules: the
same candidates as sentence-by-sentence reading gives, with the costly steps run only
where a candidate can come from."""

from __future__ import annotations

import re

import pytest

from memstrata.extract import RuleExtractor, find_extras
from memstrata.extract import rules as rules_module
from memstrata.extract.text import split_sentences
from memstrata.testing.synthetic_longmemeval import long_turns

from .conftest import MakeTurn

_ENDS = frozenset("。！？!?；;\n…")
_ABBREVIATIONS = frozenset({"no", "mr", "mrs", "ms", "dr", "st", "vs", "e.g", "i.e", "etc"})


def reference_sentences(text: str) -> tuple[str, ...]:
    """The splitter's rules read character by character (the definition)."""
    out: list[str] = []
    start = 0
    for index, char in enumerate(text):
        closes = char in _ENDS
        if char == ".":
            after = text[index + 1 : index + 2]
            begin = index
            while begin > 0 and (text[begin - 1].isalpha() or text[begin - 1] == "."):
                begin -= 1
            closes = (not after or after.isspace()) and (
                text[begin:index].casefold() not in _ABBREVIATIONS
            )
        if closes:
            piece = text[start : index + 1].strip()
            if piece.strip("".join(_ENDS) + ". "):
                out.append(piece)
            start = index + 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return tuple(out)


TRICKY = [
    "",
    "Dr. Smith paid $3.5M on 2024-01-02. Order no. 123 ... e.g. this!",
    "Is it 3.5? Yes. e.g., example.com works… ok;fine\nnext",
    "我的订单号是ABCD123，付了300元。然后呢？好的！",
    "1. **Plan Ahead**: Book early.\n\n2. **Pack light**: Less is more...",
    "ends with an abbreviation vs.",
    ". . .",
]


@pytest.mark.parametrize("text", TRICKY)
def test_sentences_split_as_read_char_by_char(text: str) -> None:
    assert split_sentences(text) == reference_sentences(text)


def test_long_turns_split_as_read_char_by_char() -> None:
    for _, _, _, text in long_turns(200, seed=3):
        assert split_sentences(text) == reference_sentences(text)


def test_candidates_carry_their_sentence_extras(make_turn: MakeTurn) -> None:
    """Every candidate of a long turn carries exactly its sentence's verbatim extras."""
    extractor = RuleExtractor()
    made = 0
    for _, _, role, text in long_turns(300, seed=4):
        turn = make_turn(text, role)  # type: ignore[arg-type]
        sentences = split_sentences(text)
        for candidate in extractor.extract(turn):
            owners = [s for s in sentences if candidate.value.rstrip(".") in s]
            assert owners, candidate
            assert candidate.extras in {find_extras(s) for s in owners}
            made += 1
    assert made > 50  # the user turns state facts and decisions; payments carry amounts


def test_an_answer_without_candidates_runs_the_extras_finder_only_where_digits_are(
    make_turn: MakeTurn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long assistant answer of advice (no decision, no order, no amount) gives
    nothing: the finder of ids, amounts and dates, the costliest step of a sentence,
    reads only its sentences with a digit (here the list numbers), not the others."""
    calls: list[str] = []

    def counting(text: str) -> tuple[tuple[str, str], ...]:
        calls.append(text)
        return find_extras(text)

    monkeypatch.setattr(rules_module, "find_extras", counting)
    answer = "\n\n".join(
        f"{n}. **Pack light**: Check the itinerary every Monday so that the luggage stays "
        "light. Many people find that a simple guidebook makes the museum easier to enjoy."
        for n in range(1, 30)
    )
    assert len(answer.split()) > 500
    sentences = split_sentences(answer)
    assert RuleExtractor().extract(make_turn(answer, "assistant")) == ()
    assert calls == [s for s in sentences if re.search(r"\d", s)]
    assert len(calls) == 29 and len(sentences) > 80
    # A sentence with an amount is still read for a payment, its extras found once.
    calls.clear()
    paid = make_turn("I paid $120 for the museum pass on Monday.")
    (payment,) = [c for c in RuleExtractor().extract(paid) if c.attribute == "payment"]
    assert payment.extras == (("amount", "$120"), ("date", "Monday"))
    assert len(calls) == 1


def test_no_digit_means_no_transaction(make_turn: MakeTurn) -> None:
    """The shortcut's premise: an id or an amount always holds a digit."""
    digitless = [
        "我的订单号是ABCDEF，付了三百元。",
        "I paid for the order ORD-ABC-DEF by card.",
        "Refund my order #abc please, I paid dollars.",
    ]
    for text in digitless:
        assert not re.search(r"\d", text)
        assert not [c for c in RuleExtractor().extract(make_turn(text)) if c.kind == "event"]
        assert all(label == "date" for label, _ in find_extras(text))
