"""Exact counts for cl100k_base / o200k_base built offline, and the approximate fallback."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import socket
from typing import Any

import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public  # type: ignore[import-untyped]

from memstrata.context import (
    ApproxCounter,
    TiktokenCounter,
    TokenCounter,
    counter_for_model,
    encoding_for_model,
)
from memstrata.context import encodings as enc_mod
from memstrata.context.tokens import message_tokens
from memstrata.errors import BackendUnavailableError, ConfigError, ValidationError

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog. Context engineering decides "
    "what the model sees, in which order, and how much of it.",
    "chinese": "上下文工程的核心是预算管理。我们在每次请求时从记忆层捞出候选内容，做重排、"
    "裁剪、压缩，组装成最终送进模型的提示词。用户昨天发起了一笔退款。",
    "emoji": "😀🎉👍🏽 family: 👨‍👩‍👧 flags 🇨🇳🇺🇸 ✨",
    "code": "def build(x: int) -> dict[str, int]:\n    if x > 10:\n        return {'a': x ** 2}"
    "\n    return {}\n\n\nclass A:\n\tpass  # tab\r\n",
    "json": '{"device_id": "D123", "alert_ts": "2025-04-01T08:22:00Z", "v": [1.25, 3.5]}',
    "mixed": "Refund ¥1,280.50 and $3.2M for ORD-2024-000123 on 2024-03-05（2024年3月5日）.",
    "japanese_korean": "こんにちは、世界。안녕하세요 세계.",
    "special_text": "a literal <|endoftext|> and <|fim_prefix|> are plain text here",
    "whitespace": "  leading\n\n\n   trailing   \n",
    "hash": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
}


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_count_equals_the_encodings_own_encode(exact: TiktokenCounter, sample: str) -> None:
    text = SAMPLES[sample]
    assert exact.count(text) == len(exact.encoding.encode(text, disallowed_special=()))


def test_known_counts(cl100k: TiktokenCounter, o200k: TiktokenCounter) -> None:
    assert cl100k.count("hello world") == 2
    assert cl100k.encoding.encode("hello world") == [15339, 1917]
    assert cl100k.encoding.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert o200k.count("hello world") == 2
    assert o200k.encoding.encode("hello world") == [24912, 2375]
    assert cl100k.count("") == 0
    assert o200k.encoding.n_vocab == 200019
    assert cl100k.encoding.n_vocab == 100277


def test_encodings_match_tiktokens_own_constructors(
    monkeypatch: pytest.MonkeyPatch, cl100k: TiktokenCounter, o200k: TiktokenCounter
) -> None:
    """Split pattern and special tokens are exactly what tiktoken itself would use."""
    for counter, constructor in (
        (cl100k, openai_public.cl100k_base),
        (o200k, openai_public.o200k_base),
    ):
        ranks = counter.encoding._mergeable_ranks

        def serve(*args: object, ranks: dict[bytes, int] = ranks, **kwargs: object) -> Any:
            return ranks  # the ranks we loaded, instead of letting tiktoken download them

        monkeypatch.setattr(openai_public, "load_tiktoken_bpe", serve)
        reference: dict[str, Any] = constructor()
        assert counter.encoding._pat_str == reference["pat_str"]
        assert counter.encoding._special_tokens == reference["special_tokens"]
        rebuilt = tiktoken.Encoding(**reference)
        for text in SAMPLES.values():
            assert counter.encoding.encode_ordinary(text) == rebuilt.encode_ordinary(text)


def test_matches_an_independent_implementation(exact: TiktokenCounter) -> None:
    """bpe-openai's Rust tokenizer (a separate BPE implementation) agrees on every sample."""
    bpe_openai = pytest.importorskip("bpe_openai")
    other = bpe_openai.get_encoding(exact.name)
    for text in SAMPLES.values():
        if "<|" in text:
            continue  # its encode has no way to treat special-token strings as text
        assert exact.encoding.encode_ordinary(text) == list(other.encode(text))


def test_builds_with_the_network_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    fresh = enc_mod.load_encoding.__wrapped__("cl100k_base")
    assert fresh.encode("hello world") == [15339, 1917]


def test_rank_file_hash_is_checked() -> None:
    with gzip.open(enc_mod.rank_file("cl100k_base")) as handle:
        data = handle.read()
    with pytest.raises(ConfigError, match="sha256"):
        enc_mod.parse_ranks(
            data + b"\n", expected_sha256=enc_mod.SPECS["cl100k_base"].sha256, origin="x"
        )
    bad = b"not-base64!! 1\n"
    with pytest.raises(ConfigError, match="line 1"):
        enc_mod.parse_ranks(bad, expected_sha256=hashlib.sha256(bad).hexdigest(), origin="x")


def test_missing_data_package_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendUnavailableError, match="bpe-openai"):
        enc_mod.rank_file("o200k_base")


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("gpt-oss-20b", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("text-embedding-ada-002", "cl100k_base"),
        ("claude-3-5-sonnet", None),
        ("llama-3.1-70b", None),
        ("qwen2.5-72b", None),
        ("text-davinci-003", None),  # p50k_base is not shipped offline
    ],
)
def test_counter_for_model(model: str, encoding: str | None) -> None:
    assert encoding_for_model(model) == encoding
    counter = counter_for_model(model)
    assert isinstance(counter, TokenCounter)
    if encoding is None:
        assert isinstance(counter, ApproxCounter)
        assert not counter.exact
    else:
        assert isinstance(counter, TiktokenCounter)
        assert counter.exact and counter.name == encoding


def test_bad_model_and_encoding_names_name_the_field() -> None:
    with pytest.raises(ValidationError) as err:
        counter_for_model("  ")
    assert err.value.field == "model"
    with pytest.raises(ValidationError) as err:
        TiktokenCounter("p50k_base")
    assert err.value.field == "encoding"
    with pytest.raises(ValidationError) as err:
        ApproxCounter().count(b"bytes")  # type: ignore[arg-type]
    assert err.value.field == "text"
    with pytest.raises(ValidationError) as err:
        enc_mod.load_encoding("gpt2")
    assert err.value.field == "encoding"


def test_count_messages_uses_the_chat_format_overhead(exact: TiktokenCounter) -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "你好，world 😀", "name": "alice"},
    ]
    expected = 3  # reply priming
    for message in messages:
        expected += 3 + sum(exact.count(value) for value in message.values())
    expected += 1  # the name field
    assert exact.count_messages(messages) == expected
    assert exact.count_messages([]) == 3
    assert message_tokens(exact, "user", "hi") == 3 + exact.count("user") + exact.count("hi")


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ("not a list", "messages"),
        ([{"role": "user"}], "messages[0].content"),
        ([{"content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": 3}], "messages[0].content"),
        ([["user", "x"]], "messages[0]"),
    ],
)
def test_count_messages_validates(messages: Any, field: str) -> None:
    for counter in (ApproxCounter(), counter_for_model("gpt-4o")):
        with pytest.raises(ValidationError) as err:
            counter.count_messages(messages)
        assert err.value.field == field


@pytest.mark.parametrize("sample", sorted(set(SAMPLES) - {"special_text"}))
def test_approx_errs_on_the_high_side(
    sample: str, cl100k: TiktokenCounter, o200k: TiktokenCounter
) -> None:
    text = SAMPLES[sample]
    estimate = ApproxCounter().count(text)
    highest = max(cl100k.count(text), o200k.count(text))
    assert estimate >= highest
    assert estimate <= 2.5 * highest + 2  # an estimate, not a wild guess


def test_approx_is_fast_and_cjk_aware() -> None:
    approx = ApproxCounter()
    assert approx.count("") == 0
    assert approx.count("你好世界") == 6  # 1.5 per ideograph
    assert approx.count("hello world") == 4
    assert approx.count_messages([{"role": "user", "content": "hi"}]) == 3 + 3 + 1 + 1
