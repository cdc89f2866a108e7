"""The model that writes a reference agent's replies.

A reply is written from the decision's evidence: the items of the bundle the step was
decided from. Three writers:

* :class:`RuleWriter` (the support agent's default, offline): deterministic, by rule.
  It keeps the evidence items the user's message asks about (their labels, field names
  and values against the message's words) and states their values; when no item
  answers the message it says it has nothing on file rather than repeating whatever
  the context holds. So the context-effectiveness rate (CER) measures something: a
  step whose context lacks the fact asked for gets a reply that reflects no context,
  and counts as not effective.
* :class:`ScriptedWriter`: one composer per intent that builds the reply from the
  items' values, whatever the message asked (the diagnostics agent's writer, whose
  steps are its own plan rather than a user's questions).
* :class:`ChatWriter`: any OpenAI-compatible chat endpoint (:class:`~memstrata.chat.
  ChatEndpoint`), configured by :func:`chat_writer_from_env`. Only sanitized bundle
  content is sent: the bundle passed the gateway when it was built.

Either way the agent loop checks the reply against the memories used
(``engine.check_reply``) and, on a conflict, asks the writer once more with the
conflicts named.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from memstrata.cer import content_words
from memstrata.chat import ChatEndpoint
from memstrata.errors import ConfigError, ModelError, ModelUnavailableError
from memstrata.extract.llm_payload import UnusableAnswerError, message_content
from memstrata.frozen import thaw
from memstrata.router.bundle import ContextBundle, ContextItem

Purpose = Literal["answer", "confirm"]
MAX_ITEM_CHARS = 1_200
MAX_REPLY_CHARS = 8_000

LLM_URL_ENV = "MEMSTRATA_AGENT_LLM_URL"
LLM_MODEL_ENV = "MEMSTRATA_AGENT_LLM_MODEL"
LLM_KEY_ENV = "MEMSTRATA_LLM_API_KEY"
LLM_TIMEOUT_ENV = "MEMSTRATA_AGENT_LLM_TIMEOUT_S"


@dataclass(frozen=True, slots=True)
class ReplyRequest:
    """What a reply is written from."""

    intent: str
    question: str
    """The user's message this step answers."""
    bundle: ContextBundle
    evidence: tuple[ContextItem, ...]
    """The items that answer the step (the policy's evidence)."""
    purpose: Purpose = "answer"
    """``confirm``: ask the user to confirm a held high-impact call."""
    instructions: str = ""
    """The agent's system prompt for a model."""
    previous: str = ""
    """On a regeneration: the reply that conflicted with the context."""
    conflicts: tuple[str, ...] = ()
    """On a regeneration: what the check found wrong in ``previous``."""

    def value(self, name: str, default: Any = None) -> Any:
        """The thawed content of the bundle item ``name`` (``default`` when absent)."""
        for item in self.bundle.items:
            if item.name == name:
                return thaw(item.content)
        return default

    def ref(self, name: str) -> str:
        """Where the item ``name`` came from, as ``<layer> <ref>`` (empty when absent)."""
        for item in self.bundle.items:
            if item.name == name:
                return f"{item.provenance.layer} {item.provenance.ref}"
        return ""


class ReplyWriter(Protocol):
    """Writes one reply. Raises :class:`~memstrata.errors.ModelError` when it cannot."""

    @property
    def name(self) -> str:
        """``scripted`` or ``model:<name>``, for the step record."""
        ...

    def write(self, request: ReplyRequest) -> str: ...


Composer = Callable[[ReplyRequest], str]


class ScriptedWriter:
    """The deterministic default: one composer per intent, each building its reply from
    the request's items."""

    def __init__(self, composers: Mapping[str, Composer]) -> None:
        self._composers = dict(composers)

    @property
    def name(self) -> str:
        return "scripted"

    def write(self, request: ReplyRequest) -> str:
        composer = self._composers.get(request.intent, generic_reply)
        return composer(request)


NOTHING_ON_FILE = "I don't have anything on file that answers that."
NOTHING_ON_FILE_ZH = "我这里没有能回答这个问题的记录。"

TOPICS: Mapping[str, frozenset[str]] = {
    field: frozenset(words.split())
    for field, words in {
        "contact": "reach tell know notify hear inform contact 联系 通知 告诉 知道",
        "channel": "reach tell know notify hear inform contact 联系 通知 告诉 知道",
        "city": "ship send deliver address live located 寄到 送到 地址 城市 哪里 住在",
        "language": "speak language write 语言 英文 中文 英语",
        "order": "package parcel delivery order shipment 订单 包裹 快递 物流",
        "status": "arrived shipped tracking 状态 到了 发货",
        "refund": "money refund return 退款 退钱 退货",
    }.items()
}
"""Words of a message that ask for a field, by a word of the field's label: "how will
you let me know" asks for the contact channel. Generic, not per script: a label word
that is absent here matches only itself."""

_FILLER = "yes yeah ok okay sure go ahead please thank thanks fine 好的 可以 继续 确认 是的 谢谢"
FILLER = frozenset(_FILLER.split())
"""Words of a reply to a question the agent asked ("Yes, go ahead."): such a message
asks for nothing of its own, the step's subject is the held action."""


class RuleWriter:
    """Writes each reply from the request's items by rule (module docstring).

    ``formats`` gives, per intent, how the values of the relevant items are phrased
    (the agent's composers, called with only those items as evidence); an intent
    without one gets :func:`generic_reply`. ``topics`` maps a label word to the message
    words that ask for it (:data:`TOPICS` by default).
    """

    def __init__(
        self,
        formats: Mapping[str, Composer] | None = None,
        *,
        topics: Mapping[str, frozenset[str]] = TOPICS,
    ) -> None:
        self._formats = dict(formats or {})
        self._topics = topics

    @property
    def name(self) -> str:
        return "rules"

    def write(self, request: ReplyRequest) -> str:
        composer = self._formats.get(request.intent, generic_reply)
        asked = asked_words(request.question)
        if request.purpose == "confirm" or not asked:
            # Nothing asked of its own: the reply is about the step's subject.
            return composer(request)
        relevant = tuple(item for item in request.evidence if asked & self.vocabulary(item))
        if not relevant:
            return NOTHING_ON_FILE_ZH if _has_cjk(request.question) else NOTHING_ON_FILE
        return composer(replace(request, evidence=relevant))

    def vocabulary(self, item: ContextItem) -> frozenset[str]:
        """The words an item answers to: its label, field names and values, the words a
        message uses to ask for them (``topics``)."""
        words = set(_words(item.name.replace("_", " ")))
        words |= _words(_flatten(thaw(item.content)))
        for word in tuple(words):
            words |= self._topics.get(word, frozenset())
        return frozenset(words)


def asked_words(question: str) -> frozenset[str]:
    """The content words of a message that can name what it asks for (fillers and
    one-letter tokens dropped)."""
    return frozenset(w for w in _words(question) if w not in FILLER)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in content_words(text) if len(w) > 1 or _has_cjk(w))


def _has_cjk(text: str) -> bool:
    return any("\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" for ch in text)


def _flatten(content: Any) -> str:
    """Field names and scalar values of an item's content, as text."""
    if isinstance(content, dict):
        return " ".join(f"{k.replace('_', ' ')} {_flatten(v)}" for k, v in content.items())
    if isinstance(content, list | tuple):
        return " ".join(_flatten(v) for v in content)
    return "" if content is None or isinstance(content, bool) else str(content)


def generic_reply(request: ReplyRequest) -> str:
    """The first sentence of each evidence item's text, or its scalar values (a fact's
    ``subject attribute: value`` as it is written)."""
    parts: list[str] = []
    for item in request.evidence:
        content = thaw(item.content)
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            parts.append(first_sentences(content["text"], 1))
        elif isinstance(content, dict):
            parts.append(
                ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in content.items() if _scalar(v))
            )
    return " ".join(p for p in parts if p) or "I have nothing on that yet."


def first_sentences(text: str, count: int) -> str:
    """The first ``count`` sentences of a knowledge chunk (its heading path dropped)."""
    body = text.split("\n\n", 1)[1] if "\n\n" in text else text
    sentences = [s.strip() for s in body.replace("\n", " ").split(". ") if s.strip()]
    chosen = ". ".join(sentences[:count])
    return chosen if chosen.endswith(".") else chosen + "."


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


DEFAULT_INSTRUCTIONS = (
    "You are an agent's reply writer. Answer the user's message from the context items "
    "only; never state a value the items do not hold; keep ids, amounts and dates exactly "
    "as written. Reply with the message text only."
)


class ChatWriter:
    """Replies from an OpenAI-compatible chat model."""

    def __init__(self, endpoint: ChatEndpoint) -> None:
        self._endpoint = endpoint

    def __repr__(self) -> str:
        return f"ChatWriter({self._endpoint!r})"

    @property
    def name(self) -> str:
        return f"model:{self._endpoint.model}"

    def write(self, request: ReplyRequest) -> str:
        body = {
            "model": self._endpoint.model,
            "temperature": 0,
            "messages": messages(request),
        }
        raw = self._endpoint.post(
            json.dumps(body, ensure_ascii=False).encode(), ref=request.bundle.session_id
        )
        try:
            text = message_content(raw).strip()
        except UnusableAnswerError as exc:
            raise self._endpoint.failure(f"returned an unusable reply: {exc}") from None
        return text[:MAX_REPLY_CHARS]


def messages(request: ReplyRequest) -> list[dict[str, str]]:
    """The chat messages for one reply (pure: tested without a server)."""
    items = [
        {
            "name": item.name,
            "source": f"{item.provenance.layer} {item.provenance.ref}",
            "relevance": round(item.provenance.relevance, 4),
            "low_confidence": item.provenance.low_confidence,
            "content": json.dumps(thaw(item.content), ensure_ascii=False, default=str)[
                :MAX_ITEM_CHARS
            ],
        }
        for item in request.bundle.items
    ]
    task = (
        "Ask the user to confirm the action below before it runs; say what it changes."
        if request.purpose == "confirm"
        else "Answer the user's message."
    )
    user = {
        "task": task,
        "intent": request.intent,
        "message": request.question,
        "evidence": [item.name for item in request.evidence],
        "context": items,
    }
    out = [
        {"role": "system", "content": request.instructions or DEFAULT_INSTRUCTIONS},
        {"role": "user", "content": json.dumps(user, ensure_ascii=False)},
    ]
    if request.conflicts:
        out.append({"role": "assistant", "content": request.previous})
        out.append(
            {
                "role": "user",
                "content": "That reply contradicts the context: "
                + "; ".join(request.conflicts)
                + ". Write it again from the context items.",
            }
        )
    return out


def chat_writer_from_env(env: Mapping[str, str] | None = None) -> ChatWriter | None:
    """A :class:`ChatWriter` when ``MEMSTRATA_AGENT_LLM_URL`` is set (model from
    ``MEMSTRATA_AGENT_LLM_MODEL``, default ``default``; key from
    ``MEMSTRATA_LLM_API_KEY``; timeout from ``MEMSTRATA_AGENT_LLM_TIMEOUT_S``, default
    30 s); None otherwise. One retry: the agent falls back to the scripted writer."""
    source = os.environ if env is None else env
    url = source.get(LLM_URL_ENV, "").strip()
    if not url:
        return None
    endpoint = ChatEndpoint(
        url,
        source.get(LLM_MODEL_ENV, "").strip() or "default",
        source.get(LLM_KEY_ENV) or None,
        what="agent reply endpoint",
        error=ModelError,
        unavailable=ModelUnavailableError,
        timeout_s=_timeout(source.get(LLM_TIMEOUT_ENV, "")),
        max_retries=1,
    )
    return ChatWriter(endpoint)


def _timeout(raw: str) -> float:
    if not raw.strip():
        return 30.0
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{LLM_TIMEOUT_ENV}: must be a number of seconds") from None
    if not value > 0:
        raise ConfigError(f"{LLM_TIMEOUT_ENV}: must be > 0")
    return value
