"""The BM25 tokenizer and encoder (pure functions, no engine)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.errors import ValidationError
from memstrata.longterm.sparse import Bm25Encoder, token_id, tokenize


def test_english_lowercases_drops_stopwords_and_punctuation() -> None:
    assert tokenize("The Invoice, for ACME-42 is overdue!") == ["invoic", "acm", "42", "overdu"]


def test_snowball_stems_match_the_forms_of_a_word() -> None:
    assert tokenize("hiking hiked hikes hike") == ["hike"] * 4
    assert tokenize("meetings policies boxes class bus gas") == [
        "meet",
        "polici",
        "box",
        "class",
        "bus",
        "gas",
    ]
    # Question and auxiliary words are stopwords: a question matches on its content.
    assert tokenize("How did Margaret feel about the schools she visited?") == [
        "margaret",
        "feel",
        "school",
        "visit",
    ]


def test_ids_digits_and_short_words_are_not_stemmed() -> None:
    assert tokenize("ORD-7781 v2 case_12 ab") == ["ord", "7781", "v2", "case", "12", "ab"]


def test_chinese_is_split_into_words() -> None:
    # 的 is a stopword; the rest are the dictionary words of the sentence.
    assert tokenize("我喜欢杭州的西湖") == ["我", "喜欢", "杭州", "西湖"]


def test_mixed_chinese_and_english_runs() -> None:
    tokens = tokenize("明天在上海开会 with ACME团队")
    assert "上海" in tokens and "开会" in tokens and "明天" in tokens
    assert "acm" in tokens and "团队" in tokens  # acme, stemmed
    assert "with" not in tokens


def test_long_compound_also_yields_its_parts() -> None:
    tokens = tokenize("中华人民共和国")
    assert {"中华", "人民", "共和国"} <= set(tokens)


def test_empty_or_symbol_only_text_has_no_tokens() -> None:
    assert tokenize("") == []
    assert tokenize("  ,.!? ——  ") == []
    assert tokenize("the of and") == []


def test_token_id_is_stable_32_bit_blake2b() -> None:
    assert token_id("invoice") == token_id("invoice")
    assert token_id("invoice") != token_id("invoices")
    assert 0 <= token_id("西湖") < 2**32
    # Stable across processes (Python's hash() is salted per process).
    code = "from memstrata.longterm.sparse import token_id; print(token_id('invoice'))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert int(out) == token_id("invoice")


def term(word: str) -> int:
    """The id of ``word``'s index term (its stem)."""
    (token,) = tokenize(word)
    return token_id(token)


def test_document_weights_follow_bm25_saturation() -> None:
    enc = Bm25Encoder(k1=1.2, b=0.75, avg_doc_len=4.0)
    vec = enc.encode_document("apple apple banana cherry")  # 4 tokens, dl == avgdl
    weights = dict(zip(vec.indices, vec.values, strict=True))
    # norm = k1 * (1 - b + b * 4/4) = 1.2
    assert weights[term("apple")] == pytest.approx(2 * 2.2 / (2 + 1.2))
    assert weights[term("banana")] == pytest.approx(1 * 2.2 / (1 + 1.2))
    assert list(vec.indices) == sorted(vec.indices)


def test_longer_documents_get_lower_weights() -> None:
    enc = Bm25Encoder(avg_doc_len=4.0)
    short = enc.encode_document("apple pie")
    long = enc.encode_document("apple pie crust sugar butter flour oven recipe")
    w_short = dict(zip(short.indices, short.values, strict=True))[term("apple")]
    w_long = dict(zip(long.indices, long.values, strict=True))[term("apple")]
    # dl=2: norm = 1.2*(0.25+0.75*0.5) = 0.75 ; dl=8: norm = 1.2*(0.25+1.5) = 2.1
    assert w_short == pytest.approx(2.2 / 1.75)
    assert w_long == pytest.approx(2.2 / 3.1)


def test_query_vector_has_weight_one_per_unique_term() -> None:
    vec = Bm25Encoder().encode_query("西湖 westlake westlake 西湖 boat")
    assert sorted(vec.indices) == sorted({term("西湖"), term("westlake"), term("boat")})
    assert set(vec.values) == {1.0}


def test_stopword_only_query_is_empty() -> None:
    assert Bm25Encoder().encode_query("the and of").is_empty


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"k1": -1.0}, "k1"), ({"b": 1.5}, "b"), ({"avg_doc_len": 0.0}, "avg_doc_len")],
)
def test_bad_parameters_name_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        Bm25Encoder(**kwargs)
    assert err.value.field == field


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "the",
                "Hiking",
                "hikes",
                "ORD-7781",
                "v2",
                "西湖",
                "的",
                "中华人民共和国",
                "café",
                "42",
                "  ",
                ",",
                "naïve",
                "Straße",
                "_x_",
                "ab",
                "THE",
                "résumé",
                "東京",
                "e-mail",
            ]
        ),
        max_size=12,
    )
)
def test_query_encoding_has_the_terms_of_tokenize(words: list[str]) -> None:
    text = " ".join(words) or "x"
    expected = sorted({token_id(t) for t in tokenize(text)})
    encoded = Bm25Encoder().encode_query(text)
    assert list(encoded.indices) == expected
    assert set(encoded.values) <= {1.0}
