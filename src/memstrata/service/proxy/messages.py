"""The chat request read and rewritten, without I/O (tested without a server).

The caller's request is forwarded as it came, with one change: the memories
``build_context`` admitted for the last user message are put into the system message
(before the caller's own system text, or as a new first system message). Every other
field and message (history, tool calls, images, ``stream``...) goes upstream untouched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstrata.errors import ValidationError

MAX_INITIAL_QUERY_CHARS = 8_000
"""start_session's ``initial_query`` limit: a longer first message is cut to it."""
ACCOUNTING_SYSTEM_PROMPT = "You are a helpful assistant."
"""Counted as the system prompt when the caller sends none (build_context needs one)."""
MEMORY_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """What memstrata needs of one ``/v1/chat/completions`` body."""

    body: Mapping[str, Any]
    model: str
    stream: bool
    user_input: str
    """The last user message's text."""
    system_prompt: str | None
    """The first system (or developer) message's text, if any."""
    history: tuple[tuple[str, str], ...]
    """(role, text) of the user and assistant messages before the last user message."""
    user: str | None
    """The request's ``user`` field."""


def parse_body(raw: bytes) -> Mapping[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ValidationError("body", f"is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ValidationError("body", "must be a JSON object")
    return body


def text_of(content: Any) -> str:
    """A message's text: a string, or the ``text`` parts of a list of content parts
    (images and audio carry no text to remember)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text"))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and part.get("text")
        )
    return ""


def read_request(body: Mapping[str, Any]) -> ChatRequest:
    """The chat request's parts, or ValidationError naming the field at fault."""
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ValidationError("model", "is required: the upstream model's name")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValidationError("messages", "must be a non-empty list of messages")
    last_user = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ValidationError(f"messages[{index}]", "must be an object with a role")
        if message["role"] == "user" and text_of(message.get("content")).strip():
            last_user = index
    if last_user is None:
        raise ValidationError("messages", "hold no user message with text to build context for")
    system = next(
        (
            text_of(m.get("content"))
            for m in messages
            if m["role"] in ("system", "developer") and text_of(m.get("content")).strip()
        ),
        None,
    )
    history = tuple(
        (m["role"], text)
        for m in messages[:last_user]
        if m["role"] in ("user", "assistant") and (text := text_of(m.get("content"))).strip()
    )
    user = body.get("user")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise ValidationError("stream", "must be true or false")
    return ChatRequest(
        body=body,
        model=model,
        stream=stream,
        user_input=text_of(messages[last_user].get("content")),
        system_prompt=system,
        history=history,
        user=user if isinstance(user, str) and user.strip() else None,
    )


def context_payload(
    chat: ChatRequest, session_id: str, window_tokens: int, k: int
) -> dict[str, Any]:
    """The ``build_context`` request for the last user message within the window."""
    return {
        "session_id": session_id,
        "user_input": chat.user_input,
        "system_prompt": chat.system_prompt or ACCOUNTING_SYSTEM_PROMPT,
        "model": chat.model,
        "history": [{"role": role, "content": text} for role, text in chat.history],
        "k": k,
        "window_tokens": window_tokens,
    }


def memory_block(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The memories of a built context: its system messages after the first (the
    history it was given holds only user and assistant turns)."""
    blocks = [
        str(m["content"])
        for m in messages[1:]
        if m.get("role") == "system" and str(m.get("content", "")).strip()
    ]
    return MEMORY_SEPARATOR.join(blocks) if blocks else None


def with_memories(body: Mapping[str, Any], memories: str | None) -> dict[str, Any]:
    """``body`` with ``memories`` before the first system message's text (or as a new
    first system message); the caller's messages otherwise as they came."""
    out = dict(body)
    if memories is None:
        return out
    messages = list(body["messages"])
    for index, message in enumerate(messages):
        if message.get("role") not in ("system", "developer"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            merged: Any = memories + MEMORY_SEPARATOR + content
        elif isinstance(content, list):
            merged = [{"type": "text", "text": memories}, *content]
        else:
            continue
        messages[index] = {**message, "content": merged}
        break
    else:
        messages.insert(0, {"role": "system", "content": memories})
    out["messages"] = messages
    return out


class ReplyAssembler:
    """The assistant's reply text, from a streamed answer's SSE chunks as they pass
    (``choices[0].delta.content``), or from a whole answer."""

    def __init__(self) -> None:
        self._pending = b""
        self._parts: list[str] = []

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk
        while b"\n" in self._pending:
            line, self._pending = self._pending.split(b"\n", 1)
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError:
            return  # not ours to judge: the caller gets it as it came
        self._parts.append(_delta_text(event))

    @property
    def text(self) -> str:
        if self._pending.strip():
            self._line(self._pending.strip())
            self._pending = b""
        return "".join(self._parts)


def _delta_text(event: Any) -> str:
    choices = event.get("choices") if isinstance(event, dict) else None
    if not isinstance(choices, list):
        return ""
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            delta = choice.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                return str(delta["content"])
    return ""


def whole_reply(raw: bytes) -> str:
    """The first choice's message text of a whole answer ("" when it has none)."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return ""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    message = choices[0].get("message")
    return text_of(message.get("content")) if isinstance(message, dict) else ""
