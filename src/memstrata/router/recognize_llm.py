"""A chat model recognizes a message's intent when an OpenAI-compatible endpoint is
configured (``Settings.intents.llm_base_url``): the model sees each registered intent's
name, description and a few of its examples, and answers in JSON under a schema.
Whatever it names must be registered; when it fails or answers unusably,
:class:`~memstrata.errors.ModelError` lets the examples decide instead
(:class:`~memstrata.router.recognize.MessageUnderstanding`'s backup)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memstrata.chat import ChatEndpoint
from memstrata.extract.llm_payload import UnusableAnswerError, message_content
from memstrata.router.intents import IntentSpec
from memstrata.router.recognize import Guess

MAX_EXAMPLES_SHOWN = 6
MAX_MESSAGE_CHARS = 2_000

RECOGNITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["intent", "confidence"],
    "properties": {
        "intent": {"type": ["string", "null"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
RECOGNIZE_PROMPT = """\
Classify the user's message as one of the intents listed (the message may be in
Chinese, English or both). Answer with the intent's exact name and your confidence in
[0, 1]; answer null when none fits. Answer with JSON only."""


class ModelRecognizer:
    """:class:`~memstrata.router.recognize.IntentRecognizer` backed by a chat model."""

    def __init__(self, endpoint: ChatEndpoint) -> None:
        self._endpoint = endpoint

    def __repr__(self) -> str:
        return f"ModelRecognizer({self._endpoint!r})"

    def guess(self, message: str, intents: Sequence[IntentSpec]) -> Guess:
        """The model's pick; ModelError when it cannot be had or read."""
        step = {
            "message": message[:MAX_MESSAGE_CHARS],
            "intents": [
                {
                    "name": spec.name,
                    "description": spec.description,
                    "examples": list(spec.examples[:MAX_EXAMPLES_SHOWN]),
                }
                for spec in intents
            ],
        }
        body = {
            "model": self._endpoint.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": RECOGNIZE_PROMPT},
                {"role": "user", "content": json.dumps(step, ensure_ascii=False)},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "intent", "schema": RECOGNITION_SCHEMA, "strict": True},
            },
        }
        raw = self._endpoint.post(json.dumps(body, ensure_ascii=False).encode(), ref="intent")
        try:
            answer = json.loads(_unfenced(message_content(raw)))
            if not isinstance(answer, dict):
                raise ValueError("not a JSON object")
            intent = answer.get("intent")
            confidence = float(answer["confidence"])
            if intent is not None and not isinstance(intent, str):
                raise ValueError("intent is not a string")
        except (UnusableAnswerError, KeyError, TypeError, ValueError) as exc:
            raise self._endpoint.failure(f"answered an intent out of schema: {exc}") from None
        names = {spec.name for spec in intents}
        if intent not in names:
            # A name the model made up is no intent: nothing fits.
            return Guess(None, 0.0, "model")
        return Guess(intent, min(1.0, max(0.0, confidence)), "model")


def _unfenced(text: str) -> str:
    """The JSON inside a ```json fence, when the model wrapped it in one."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped
