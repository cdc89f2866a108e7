"""The small-talk detector (memstrata.extract.smalltalk), English and Chinese.

Small talk is kept as an episode but weighs little in ranking; the rule must stay
conservative: anything that carries a word of content, a name, a number or a plain
yes / no answer is not small talk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.config import RetrievalSettings, load_settings
from memstrata.errors import ConfigError
from memstrata.extract.smalltalk import (
    MAX_SMALL_TALK_CHARS,
    asks_about_small_talk,
    flagged_small_talk,
    is_small_talk,
    small_talk_payload,
)

SMALL_TALK = [
    # English: thanks, goodbyes, closings, acknowledgements, laughter, emoji
    "Thanks, that's all for today.",
    "thank you so much!",
    "Thanks again for your help, have a great weekend!",
    "Bye for now, talk to you tomorrow.",
    "That's it for now, see you later!",
    "OK, sounds good.",
    "Got it, thanks!",
    "Hi there!",
    "Good night :)",
    "haha",
    "lol ok",
    "👍",
    "🙏🙏🙏",
    "ok 👍",
    "...",
    # Chinese
    "谢谢，今天就到这里吧。",
    "谢谢",
    "好的",
    "好的，明天再聊。",
    "再见！",
    "拜拜～",
    "哈哈哈哈",
    "嗯嗯，收到",
    "没事了，谢谢你！",
    "今天先这样吧，辛苦了",
    "晚安😊",
]

CONTENT = [
    # mixed with content: a fact after the thanks is a fact
    "Thanks! Also my budget is 5000",
    "Thanks, that's all for today. My flight is on May 3.",
    "谢谢！另外我的预算是5000元",
    "谢谢，我对花生过敏。",
    "好的，订单号是ORD-2024-000123",
    "ok 5000",
    # a name, a plain answer, a statement, a question
    "Thanks, Caroline!",
    "No.",
    "Yes",
    "是的",
    "没有",
    "I'm allergic to peanuts and shellfish.",
    "我对花生和海鲜过敏。",
    "Hi, my name is Tom.",
    "你好，我叫小王。",
    "What am I allergic to?",
    "我对什么过敏？",
    # a phatic word inside a longer word is no phatic word
    "history",
    "hiking",
    "okayama",
    "that's all I know about cats",
]


@pytest.mark.parametrize("text", SMALL_TALK)
def test_small_talk_is_recognized(text: str) -> None:
    assert is_small_talk(text)
    assert small_talk_payload(text) == {"small_talk": True}


@pytest.mark.parametrize("text", CONTENT)
def test_content_is_never_small_talk(text: str) -> None:
    assert not is_small_talk(text)
    assert small_talk_payload(text) == {}


def test_a_turn_is_judged_without_its_speaker_prefix() -> None:
    assert is_small_talk("Caroline: Thanks, that's all for today.", "Caroline")
    assert not is_small_talk("Caroline: I moved to Boston.", "Caroline")
    # without the speaker named, the prefix is a word like any other
    assert not is_small_talk("Caroline: Thanks, that's all for today.")


def test_a_long_text_is_never_small_talk() -> None:
    text = " ".join(["thanks"] * (MAX_SMALL_TALK_CHARS // 6 + 2))
    assert len(text) > MAX_SMALL_TALK_CHARS
    assert not is_small_talk(text)


def test_only_a_true_flag_counts() -> None:
    assert flagged_small_talk({"small_talk": True})
    for payload in ({}, {"small_talk": False}, {"small_talk": "yes"}, {"small_talk": 1}):
        assert not flagged_small_talk(payload)  # old points and odd values: content


@pytest.mark.parametrize(
    "question",
    [
        "what did I say when we finished?",
        "How did our last chat end?",
        "What did I say at the end?",
        "Did I thank you?",
        "thanks!",
        "我们结束的时候我说了什么？",
        "我最后说了什么？",
        "今天最后我说了什么？",
        "我跟你道别了吗？",
        "谢谢",
    ],
)
def test_questions_about_small_talk_keep_it_ranked(question: str) -> None:
    assert asks_about_small_talk(question)


@pytest.mark.parametrize(
    "question",
    ["What am I allergic to?", "What is my budget?", "我对什么过敏？", "我的预算是多少？"],
)
def test_other_questions_lower_small_talk(question: str) -> None:
    assert not asks_about_small_talk(question)


@given(st.text(max_size=120))
def test_any_text_gets_an_answer(text: str) -> None:
    assert isinstance(is_small_talk(text), bool)
    assert isinstance(asks_about_small_talk(text), bool)


@given(st.text(alphabet="0123456789", min_size=1, max_size=8))
def test_a_number_is_content(digits: str) -> None:
    assert not is_small_talk(f"thanks {digits}")
    assert not is_small_talk(f"谢谢{digits}")


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True, float("nan")])
def test_a_bad_penalty_is_refused_naming_the_setting(bad: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.small_talk_penalty"):
        RetrievalSettings(small_talk_penalty=bad)  # type: ignore[arg-type]
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"retrieval": {"small_talk_penalty": bad}}))
    with pytest.raises(ConfigError, match=r"retrieval\.small_talk_penalty"):
        load_settings(path)
