"""The proxy's pure parts: the request read, the memories merged, the reply assembled."""

from __future__ import annotations

import json

import pytest

from memstrata.config import settings_from_dict
from memstrata.config_proxy import DEFAULT_WINDOW_TOKENS, ProxySettings
from memstrata.context.budget import known_window
from memstrata.errors import ConfigError, ValidationError
from memstrata.service.proxy.forward import upstream_headers
from memstrata.service.proxy.messages import (
    ReplyAssembler,
    context_payload,
    memory_block,
    read_request,
    whole_reply,
    with_memories,
)
from memstrata.testing.fake_openai import completion, stream_events


def test_the_last_user_message_is_the_input_and_the_turns_before_it_the_history() -> None:
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "content": "42", "tool_call_id": "t1"},
            {"role": "assistant", "content": "answer"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "second"}, {"type": "image_url"}],
            },
        ],
    }
    chat = read_request(body)
    assert chat.user_input == "second"
    assert chat.system_prompt == "Be brief."
    assert chat.history == (("user", "first"), ("assistant", "answer"))
    payload = context_payload(chat, "s1", 128_000, 10)
    assert payload["history"] == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "answer"},
    ]
    assert payload["window_tokens"] == 128_000 and payload["system_prompt"] == "Be brief."


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "m", "messages": []}, "messages"),
        ({"model": "m", "messages": [{"role": "assistant", "content": "x"}]}, "messages"),
        ({"model": "m", "messages": ["x"]}, "messages[0]"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
    ],
)
def test_a_bad_request_names_its_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        read_request(body)
    assert info.value.field == field


def test_memories_go_before_the_system_text_or_into_a_new_first_message() -> None:
    user = {"role": "user", "content": "q"}
    with_system = {"model": "m", "messages": [{"role": "system", "content": "S"}, user]}
    assert with_memories(with_system, "M")["messages"] == [
        {"role": "system", "content": "M\n\nS"},
        user,
    ]
    parts = {
        "model": "m",
        "messages": [{"role": "system", "content": [{"type": "text", "text": "S"}]}],
    }
    assert with_memories(parts, "M")["messages"][0]["content"][0] == {"type": "text", "text": "M"}
    bare = {"model": "m", "messages": [user], "temperature": 0.2}
    out = with_memories(bare, "M")
    assert out == {
        "model": "m",
        "messages": [{"role": "system", "content": "M"}, user],
        "temperature": 0.2,
    }
    assert bare["messages"] == [user]  # the caller's body is not changed
    assert with_memories(bare, None) == bare


def test_the_memory_block_is_the_built_contexts_system_messages_after_the_first() -> None:
    built = [
        {"role": "system", "content": "S"},
        {"role": "system", "content": "## Retrieved context\n[m1] ..."},
        {"role": "user", "content": "q"},
    ]
    assert memory_block(built) == "## Retrieved context\n[m1] ..."
    assert memory_block(built[:1] + built[2:]) is None


def test_a_streamed_reply_is_assembled_from_chunks_split_anywhere() -> None:
    reply = "Gate B7 — ✈ on the 14th."
    stream = b"".join(stream_events("m", reply, 5))
    for size in (1, 3, 7, len(stream)):
        assembler = ReplyAssembler()
        for start in range(0, len(stream), size):
            assembler.feed(stream[start : start + size])
        assert assembler.text == reply
    assert whole_reply(json.dumps(completion("m", reply)).encode()) == reply
    assert whole_reply(b"not json") == ""


def test_the_memstrata_key_and_headers_stay_here_and_the_callers_key_goes_on() -> None:
    out = upstream_headers(
        {
            "authorization": "Bearer sk-own",
            "x-api-key": "msk_x",
            "x-memstrata-user": "ann",
            "host": "here",
            "content-length": "10",
            "openai-organization": "org",
        }
    )
    assert out == {
        "authorization": "Bearer sk-own",
        "openai-organization": "org",
        "content-type": "application/json",
    }


def test_windows_come_from_the_settings_the_table_or_the_default() -> None:
    settings = ProxySettings(upstream="http://x/v1", windows=(("my-model", 32_000),))
    assert settings.window_of("my-model", known_window("my-model")) == 32_000
    assert settings.window_of("gpt-4o", known_window("gpt-4o")) == 128_000
    assert settings.window_of("unknown-model", None) == DEFAULT_WINDOW_TOKENS
    assert settings.completions_url == "http://x/v1/chat/completions"
    loaded = settings_from_dict({"proxy": {"upstream": "http://x/v1", "windows": [["a", 1]]}})
    assert loaded.proxy.windows == (("a", 1),)
    with pytest.raises(ConfigError, match=r"proxy\.upstream"):
        settings_from_dict({"proxy": {"upstream": "ftp://x"}})
    with pytest.raises(ConfigError, match=r"proxy\.windows"):
        settings_from_dict({"proxy": {"windows": [["a", "big"]]}})
