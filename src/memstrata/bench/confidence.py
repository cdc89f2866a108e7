"""``memstrata bench confidence``: where the default cosine thresholds come from.

On LoCoMo (categories 1-4), each question is embedded with the default model and
compared with every turn of its own conversation. For the best-matching evidence
turn of each question we record its cosine ("relevant"); the ten best non-evidence
turns give the "distractor" distribution. The printed curve is, for each
threshold, the share of relevant and of distractor scores at or above it: the skip
threshold should keep nearly all relevant context, the low-confidence flag should
sit where relevant and distractor shares start to separate. Issue 4's harness
replaces this with retrieval-level calibration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from memstrata.embed.protocol import Embedder
from memstrata.errors import ValidationError

THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.72)


def _turns(conversation: dict[str, Any]) -> dict[str, str]:
    turns: dict[str, str] = {}
    for key, value in conversation.items():
        if key.startswith("session_") and isinstance(value, list):
            for turn in value:
                turns[turn["dia_id"]] = f"{turn['speaker']}: {turn['text']}"
    return turns


def run_confidence_bench(data: Path, embedder: Embedder, *, conversations: int) -> dict[str, Any]:
    """Relevant vs distractor cosine distributions and the threshold curve."""
    try:
        samples = json.loads(Path(data).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValidationError("data", f"cannot read LoCoMo file {data}: {exc}") from exc
    relevant: list[float] = []
    distractors: list[float] = []
    for sample in samples[:conversations]:
        turns = _turns(sample["conversation"])
        ids = list(turns)
        index = {turn_id: n for n, turn_id in enumerate(ids)}
        matrix = embedder.embed([turns[i] for i in ids])
        qa = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
        scores = embedder.embed([q["question"] for q in qa]) @ matrix.T
        for row, question in enumerate(qa):
            evidence = [index[e] for e in question.get("evidence", []) if e in index]
            if not evidence:
                continue
            relevant.append(float(scores[row, evidence].max()))
            mask = np.ones(len(ids), dtype=bool)
            mask[evidence] = False
            distractors.extend(np.sort(scores[row, mask])[::-1][:10].tolist())
    rel, dis = np.asarray(relevant), np.asarray(distractors)
    return {
        "model": embedder.name,
        "conversations": conversations,
        "questions": len(relevant),
        "relevant_percentiles": {
            str(p): round(float(np.percentile(rel, p)), 3) for p in (5, 10, 25, 50)
        },
        "distractor_percentiles": {
            str(p): round(float(np.percentile(dis, p)), 3) for p in (50, 75, 90, 95)
        },
        "curve": [
            {
                "threshold": t,
                "relevant_at_or_above": round(float((rel >= t).mean()), 3),
                "distractors_at_or_above": round(float((dis >= t).mean()), 3),
            }
            for t in THRESHOLDS
        ],
    }
