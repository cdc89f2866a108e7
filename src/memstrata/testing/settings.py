"""Settings tests build on."""

from __future__ import annotations

from memstrata.config import RetrievalSettings

NEUTRAL_RETRIEVAL = RetrievalSettings(
    sparse_weight=0.0,
    decay_weight=0.0,
    importance_weight=0.0,
    type_weights=(),
    neighbor_weight=0.0,
    thread_weight=0.0,
    time_boost=0.0,
    question_penalty=0.0,
    short_penalty=0.0,
    small_talk_penalty=0.0,
    entity_field_boost=0.0,
    redundancy_penalty=0.0,
)
"""Every adjustment off: a retrieval's score is the dense cosine of its best route."""
