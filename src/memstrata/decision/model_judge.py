"""A model makes the judgment (and checks the reply) when an OpenAI-compatible
endpoint is configured ("a small model, or even rules": docs/architecture.md,
"Decisions and feedback").

The model answers in JSON under a schema; what it proposes is still held to the
rules' bars: a tool it names must be registered, its parameters pass the gate, and
an answer needs the risk's threshold. Whenever the endpoint fails or answers
unusably, :class:`~memstrata.errors.ModelError` tells the decision layer to use the
rules instead. Only sanitized bundle content goes to the model: the bundle passed the
gateway when it was built.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.chat import ChatEndpoint
from memstrata.decision.judgment import Judgment
from memstrata.decision.policy import RiskThresholds, StepPolicy
from memstrata.decision.tools import ToolSpec
from memstrata.extract.llm_payload import UnusableAnswerError, message_content
from memstrata.frozen import thaw
from memstrata.router.bundle import ContextBundle, ContextItem

MAX_ITEM_CHARS = 600

JUDGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["needs_data", "data_kind", "enough", "confidence", "missing", "tool", "params"],
    "properties": {
        "needs_data": {"type": "boolean"},
        "data_kind": {"enum": ["tool", "clarification", None]},
        "enough": {"type": "boolean"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "missing": {"type": "array", "items": {"type": "string"}},
        "tool": {"type": ["string", "null"]},
        "params": {"type": "object"},
    },
}
CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["conflicts"],
    "properties": {"conflicts": {"type": "array", "items": {"type": "string"}}},
}
JUDGE_PROMPT = """\
You route one step of an agent. From the context items, decide: is more data needed,
of which kind (a tool call, or a clarification from the user), and is what is held
enough to answer? Give your confidence in [0, 1] in your judgment: that the held items
answer the step or, when you name a tool, that the call with these parameters fetches
what the step needs. Name a tool only from the list, with parameters taken from the
held facts; list the key information nobody holds in "missing". Answer with JSON only."""
CHECK_PROMPT = """\
Compare the reply with the context items it was written from. List each statement of
the reply that contradicts an item (a different value, number or a replaced fact); an
empty list when nothing contradicts. Answer with JSON only."""


class ModelJudge:
    """Judgments and reply checks by a chat model."""

    def __init__(self, endpoint: ChatEndpoint) -> None:
        self._endpoint = endpoint

    def __repr__(self) -> str:
        return f"ModelJudge({self._endpoint!r})"

    def judge(
        self,
        bundle: ContextBundle,
        policy: StepPolicy,
        facts: Mapping[str, Any],
        thresholds: RiskThresholds,
        tools: Sequence[ToolSpec],
    ) -> Judgment:
        """The model's judgment; ModelError when it cannot be had or read."""
        step = {
            "intent": policy.intent,
            "risk": policy.risk,
            "threshold": thresholds.of(policy.risk),
            "items": [_item(item) for item in bundle.items],
            "not_loaded": [m.name for m in bundle.missing],
            "facts": {k: v for k, v in facts.items() if _scalar(v)},
            "key_information": [slot.name for slot in policy.slots],
            "tools": [
                {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                for t in tools
            ],
        }
        answer = self._ask(JUDGE_PROMPT, step, JUDGMENT_SCHEMA, "judgment", bundle.session_id)
        try:
            confidence = float(answer["confidence"])
            kind = answer["data_kind"]
            tool = answer["tool"]
            params = answer["params"]
            if kind not in ("tool", "clarification", None) or not isinstance(params, dict):
                raise ValueError("data_kind or params out of schema")
            if tool is not None and not isinstance(tool, str):
                raise ValueError("tool is not a string")
            return Judgment(
                needs_data=bool(answer["needs_data"]),
                data_kind=kind,
                enough=bool(answer["enough"]),
                confidence=min(1.0, max(0.0, confidence)),
                missing=tuple(str(m) for m in answer["missing"]),
                tool=tool,
                params=params,
                reasons=("judged by the model",),
                judged_by="model",
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise self._endpoint.failure(f"answered a judgment out of schema: {exc}") from None

    def conflicts(self, reply: str, items: Sequence[ContextItem], ref: str) -> tuple[str, ...]:
        """The reply's statements the model finds contradicting the items."""
        step = {"reply": reply, "items": [_item(item) for item in items]}
        answer = self._ask(CHECK_PROMPT, step, CHECK_SCHEMA, "reply_check", ref)
        found = answer.get("conflicts")
        if not isinstance(found, list):
            raise self._endpoint.failure("answered a reply check out of schema")
        return tuple(str(c)[:300] for c in found)

    def _ask(
        self, prompt: str, step: Mapping[str, Any], schema: Mapping[str, Any], name: str, ref: str
    ) -> dict[str, Any]:
        body = {
            "model": self._endpoint.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": prompt},
                {"role": "user", "content": json.dumps(step, ensure_ascii=False, default=str)},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(schema), "strict": True},
            },
        }
        raw = self._endpoint.post(json.dumps(body, ensure_ascii=False).encode(), ref=ref)
        try:
            answer = json.loads(_unfenced(message_content(raw)))
        except (UnusableAnswerError, ValueError) as exc:
            raise self._endpoint.failure(f"returned an unusable answer: {exc}") from None
        if not isinstance(answer, dict):
            raise self._endpoint.failure("returned an unusable answer: not a JSON object")
        return answer


def _item(item: ContextItem) -> dict[str, Any]:
    content = json.dumps(thaw(item.content), ensure_ascii=False, default=str)
    return {
        "name": item.name,
        "layer": item.provenance.layer,
        "relevance": round(item.provenance.relevance, 4),
        "low_confidence": item.provenance.low_confidence,
        "content": content[:MAX_ITEM_CHARS],
    }


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _unfenced(text: str) -> str:
    """The JSON inside a ```json fence, when the model wrapped it in one."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped
