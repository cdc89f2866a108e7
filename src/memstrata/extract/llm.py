"""An extractor over any OpenAI-compatible ``/v1/chat/completions`` endpoint.

The request asks for JSON through ``response_format`` (a JSON schema); the answer is
parsed tolerantly and every candidate validated on its own (see
:mod:`memstrata.extract.llm_payload`). Retries and errors are the shared
:class:`~memstrata.chat.ChatEndpoint`'s; after the last try an :class:`ExtractionError`
names the endpoint URL. Logs carry ids, lengths, statuses and counts only: never the
API key, the turn text or the model's answer, since both may hold user data.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from collections.abc import Callable

from memstrata.chat import ChatEndpoint, endpoint_url, redacted_url
from memstrata.config import DEFAULT_MULTI_VALUED
from memstrata.errors import ExtractionError, ExtractionUnavailableError
from memstrata.extract.candidates import Candidate, Turn
from memstrata.extract.corrections import with_corrections
from memstrata.extract.llm_payload import (
    UnusableAnswerError,
    build_request_body,
    message_content,
    parse_answer,
)
from memstrata.extract.text import fold_quotes, split_sentences
from memstrata.extract.thread import in_thread

__all__ = ["LLMExtractor", "endpoint_url", "redacted_url"]

logger = logging.getLogger("memstrata.extract.llm")
WHAT = "LLM extraction endpoint"


class LLMExtractor:
    """:class:`~memstrata.extract.protocol.Extractor` backed by a chat-completions model.

    ``max_retries`` counts repeats after the first try (so at most ``max_retries + 1``
    requests per turn); the n-th repeat waits ``backoff_s * 2**(n-1)`` seconds, or the
    server's ``Retry-After`` when longer, capped at ``max_backoff_s``. ``sleep`` and
    ``opener`` are injected so tests run against a real local server without waiting.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 10.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        opener: urllib.request.OpenerDirector | None = None,
        multi_valued: frozenset[str] = DEFAULT_MULTI_VALUED,
    ) -> None:
        self._multi_valued = multi_valued
        self._endpoint = ChatEndpoint(
            base_url,
            model,
            api_key,
            what=WHAT,
            error=ExtractionError,
            unavailable=ExtractionUnavailableError,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
            sleep=sleep,
            opener=opener,
        )

    def __repr__(self) -> str:
        # The key is deliberately absent: reprs end up in logs and tracebacks.
        return f"LLMExtractor(url={self._endpoint.url!r}, model={self._endpoint.model!r})"

    @property
    def url(self) -> str:
        """The chat-completions endpoint (without user info or query)."""
        return self._endpoint.url

    def extract(self, turn: Turn) -> tuple[Candidate, ...]:
        """Candidates the model finds in ``turn``; ExtractionError on endpoint failure."""
        started = time.monotonic()
        body = build_request_body(self._endpoint.model, turn)
        raw = self._endpoint.post(json.dumps(body, ensure_ascii=False).encode(), ref=turn.turn_id)
        try:
            parsed = parse_answer(message_content(raw))
        except UnusableAnswerError as exc:
            logger.warning(
                "llm extraction: unusable answer url=%s turn=%s bytes=%d reason=%s",
                self._endpoint.url,
                turn.turn_id,
                len(raw),
                exc,
            )
            raise self._endpoint.failure(f"returned an unusable answer: {exc}") from exc
        for dropped in parsed.dropped:
            logger.warning(
                "llm extraction: dropped invalid candidate turn=%s index=%d field=%s reason=%s",
                turn.turn_id,
                dropped.index,
                dropped.field,
                dropped.reason,
            )
        logger.info(
            "llm extraction: url=%s model=%s session=%s turn=%s text_chars=%d "
            "candidates=%d dropped=%d elapsed_ms=%.0f",
            self._endpoint.url,
            self._endpoint.model,
            turn.session_id,
            turn.turn_id,
            len(turn.text),
            len(parsed.candidates),
            len(parsed.dropped),
            (time.monotonic() - started) * 1000,
        )
        # The model states facts; corrections and removals are read as the rules read
        # them, so a configured model corrects and takes back values like the default.
        if turn.role != "user":
            return parsed.candidates
        sentences = split_sentences(fold_quotes(turn.text))
        found = with_corrections(sentences, parsed.candidates, self._multi_valued)
        # Read in its conversation as the rules read it ("不对，是6月3号。" alone).
        return in_thread(turn, found)
