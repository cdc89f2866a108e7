"""Extraction for the long-term write pipeline (docs/architecture.md, "The writer").

A :class:`Turn` goes through the :class:`WorthFilter` (small talk and repeats never
reach L3), then an :class:`Extractor` (the deterministic :class:`RuleExtractor`, or an
:class:`LLMExtractor` over any OpenAI-compatible endpoint) turns it into
:class:`Candidate` values, which the write path
(``memstrata.memory.units.unit_from_candidate``) makes into memory units.
"""

from memstrata.errors import ExtractionError, ExtractionUnavailableError
from memstrata.extract.candidates import Candidate, Role, Turn
from memstrata.extract.filter import DropReason, Verdict, WorthFilter
from memstrata.extract.llm import LLMExtractor
from memstrata.extract.llm_payload import (
    RESPONSE_FORMAT,
    SYSTEM_PROMPT,
    ParsedAnswer,
    build_request_body,
    parse_answer,
)
from memstrata.extract.protocol import Extractor
from memstrata.extract.rules import RuleExtractor
from memstrata.extract.verbatim import find_extras

__all__ = [
    "RESPONSE_FORMAT",
    "SYSTEM_PROMPT",
    "Candidate",
    "DropReason",
    "ExtractionError",
    "ExtractionUnavailableError",
    "Extractor",
    "LLMExtractor",
    "ParsedAnswer",
    "Role",
    "RuleExtractor",
    "Turn",
    "Verdict",
    "WorthFilter",
    "build_request_body",
    "find_extras",
    "parse_answer",
]
