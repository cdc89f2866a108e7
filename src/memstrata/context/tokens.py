"""Token counting: the ``TokenCounter`` role, exact tiktoken counters and an estimate.

``counter_for_model`` picks the exact counter for OpenAI model families (o200k_base for
gpt-4o / gpt-4.1 / gpt-5 / o-series, cl100k_base for gpt-4 / gpt-3.5 / embeddings) and
the :class:`ApproxCounter` estimate for every other family. Both also satisfy the
knowledge package's ``Tokenizer`` role (``name`` and ``count``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import tiktoken.model

from memstrata.context.encodings import ENCODING_NAMES, EncodingName, load_encoding
from memstrata.errors import ValidationError

# OpenAI's chat format (gpt-3.5-turbo-0613 and later, gpt-4, gpt-4o): every message is
# wrapped in 3 tokens, a "name" field costs 1 more, and the reply is primed with 3.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3

# Encodings that share o200k_base's ranks and split pattern: ordinary text (special
# tokens are counted as plain text) encodes identically.
_ENCODING_ALIASES: dict[str, EncodingName] = {"o200k_harmony": "o200k_base"}


@runtime_checkable
class TokenCounter(Protocol):
    """Counts what text and chat messages cost the target model."""

    @property
    def name(self) -> str:
        """A stable identifier (the encoding name, or the estimate's version)."""
        ...

    @property
    def exact(self) -> bool:
        """True when counts are the model's own tokenizer's, False for an estimate."""
        ...

    def count(self, text: str) -> int:
        """Tokens of ``text``; special-token strings count as ordinary text."""
        ...

    def count_messages(self, messages: Sequence[Mapping[str, str]]) -> int:
        """Tokens of a chat request: every message with its overhead, plus reply priming."""
        ...


def check_messages(messages: Any) -> tuple[Mapping[str, str], ...]:
    """Return ``messages`` if it is a sequence of {"role", "content"[, "name"]} string maps."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValidationError("messages", "must be a sequence of {'role', 'content'} mappings")
    for index, message in enumerate(messages):
        field = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise ValidationError(field, f"must be a mapping, got {type(message).__name__}")
        for key in ("role", "content"):
            if key not in message:
                raise ValidationError(f"{field}.{key}", "is missing")
        for key, value in message.items():
            if not isinstance(value, str):
                raise ValidationError(
                    f"{field}.{key}", f"must be a string, got {type(value).__name__}"
                )
    return tuple(messages)


def chat_tokens(count: Callable[[str], int], messages: Sequence[Mapping[str, str]]) -> int:
    """OpenAI's chat-format count: per message 3 + its values (+1 for a name), then 3."""
    total = REPLY_PRIMING_TOKENS
    for message in check_messages(messages):
        total += TOKENS_PER_MESSAGE
        for key, value in message.items():
            total += count(value)
            if key == "name":
                total += TOKENS_PER_NAME
    return total


def message_tokens(counter: TokenCounter, role: str, content: str) -> int:
    """What one {"role", "content"} message adds to ``count_messages`` (no priming)."""
    return TOKENS_PER_MESSAGE + counter.count(role) + counter.count(content)


def _check_text(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    return value


class TiktokenCounter:
    """Exact counts with an OpenAI encoding loaded from the installed rank file."""

    __slots__ = ("_encoding", "_name")

    def __init__(self, encoding: str = "o200k_base") -> None:
        name = _ENCODING_ALIASES.get(encoding, encoding)
        if name not in ENCODING_NAMES:
            raise ValidationError(
                "encoding", f"{encoding!r} is not one of {', '.join(ENCODING_NAMES)}"
            )
        self._name: EncodingName = "o200k_base" if name == "o200k_base" else "cl100k_base"
        self._encoding = load_encoding(self._name)

    @property
    def name(self) -> str:
        return self._name

    @property
    def exact(self) -> bool:
        return True

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The underlying tiktoken encoding (for encode/decode beyond counting)."""
        return self._encoding

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(_check_text("text", text)))

    def count_messages(self, messages: Sequence[Mapping[str, str]]) -> int:
        return chat_tokens(self.count, messages)

    def __repr__(self) -> str:
        return f"TiktokenCounter({self._name!r})"


# Scripts written without spaces: BPE vocabularies spend about one token per common
# character (Hangul somewhat more) and two or three on rare ones.
_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u309f\u30a0-\u30ff\u3100-\u312f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
)
_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
# Hashes, base64 and other long letter-digit blobs: BPE finds few merges in them.
_BLOB = r"(?=[A-Za-z+/=]*[0-9])(?=[0-9+/=]*[A-Za-z])[A-Za-z0-9+/=]{16,}"
_PIECE_RE = re.compile(
    rf"(?P<blob>{_BLOB})|(?P<latin>[A-Za-z]+)|(?P<digits>[0-9]+)|(?P<cjk>[{_CJK}]+)"
    rf"|(?P<hangul>[{_HANGUL}]+)|(?P<space>\s+)|(?P<ascii>[\x21-\x7e])|(?P<other>[^\x00-\x7f])"
)
_PIECE_COST = {"blob": 0.75, "cjk": 1.5, "hangul": 2.0}


class ApproxCounter:
    """A fast estimate for model families without a shipped tokenizer; errs high.

    An estimate, not a count: it is tuned to come out at or above cl100k_base and
    o200k_base on natural text and code (English and other Latin-script prose, Chinese,
    Japanese, Korean, Cyrillic, Greek, Hindi, emoji, JSON, URLs, hashes), typically
    10-100 % above, so a budget built on it leaves room rather than overflowing.

    Rules: a run of ASCII letters costs one token per started 4 letters, digits one per
    started 3, a letter-digit blob of 16+ characters (hash, base64) 0.75 per character,
    each ASCII symbol one, a CJK ideograph / kana character 1.5, a Hangul syllable 2,
    any other non-ASCII character 1.25 if it takes two UTF-8 bytes (accents, Cyrillic,
    Greek) else 0.75 per byte (emoji, Indic scripts), and whitespace one per run longer
    than a single space. Known gaps: a text of rare CJK characters (2-3 tokens each in
    cl100k_base) or random letter soup can exceed the estimate.
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        return "approx-cjk-v1"

    @property
    def exact(self) -> bool:
        return False

    def count(self, text: str) -> int:
        _check_text("text", text)
        total = 0.0
        for match in _PIECE_RE.finditer(text):
            kind = match.lastgroup
            piece = match.group()
            if kind == "latin":
                total += -(-len(piece) // 4)
            elif kind == "digits":
                total += -(-len(piece) // 3)
            elif kind == "space":
                if piece != " ":
                    total += 1 + len(piece) // 8
            elif kind == "ascii":
                total += 1
            elif kind == "other":
                size = len(piece.encode("utf-8", "surrogatepass"))
                total += 1.25 if size == 2 else 0.75 * size
            else:
                total += _PIECE_COST[kind or "blob"] * len(piece)
        return math.ceil(total)

    def count_messages(self, messages: Sequence[Mapping[str, str]]) -> int:
        return chat_tokens(self.count, messages)

    def __repr__(self) -> str:
        return "ApproxCounter()"


def encoding_for_model(model: str) -> EncodingName | None:
    """The offline encoding for an OpenAI model name, or None for other families.

    Uses tiktoken's own model table (prefixes included, e.g. ``gpt-4o-2024-08-06``); a
    ``provider/`` prefix such as ``openai/gpt-4o`` is ignored.
    """
    if not isinstance(model, str) or not model.strip():
        raise ValidationError("model", "must be a non-empty string")
    bare = model.strip().rsplit("/", 1)[-1]
    try:
        name = tiktoken.model.encoding_name_for_model(bare)
    except KeyError:
        return None
    name = _ENCODING_ALIASES.get(name, name)
    if name == "o200k_base":
        return "o200k_base"
    if name == "cl100k_base":
        return "cl100k_base"
    return None  # r50k / p50k / gpt2: not shipped offline


def counter_for_model(model: str) -> TokenCounter:
    """Exact counter for OpenAI model families, :class:`ApproxCounter` for the rest."""
    encoding = encoding_for_model(model)
    if encoding is None:
        return ApproxCounter()
    return TiktokenCounter(encoding)
