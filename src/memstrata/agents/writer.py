"""The model that writes a reference agent's replies.

A reply is written from the decision's evidence: the items of the bundle the step was
decided from. Two writers:

* :class:`ScriptedWriter` (the default, offline): deterministic; each agent gives one
  composer per intent that builds the reply from the items' values, as a careful
  model would. The context-effectiveness rate (CER) it earns is meaningful: a reply
  reflects the evidence only when the evidence was loaded.
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
from dataclasses import dataclass
from typing import Any, Literal, Protocol

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


def generic_reply(request: ReplyRequest) -> str:
    """The first sentence of each evidence item's text, or its scalar values."""
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
