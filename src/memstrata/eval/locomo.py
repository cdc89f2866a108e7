"""LoCoMo: turn-level evidence retrieval per category, for every system.

One tenant per conversation; each QA is asked of its own conversation only, at
the date of the conversation's last session. A QA is scored on its cleaned
evidence ids (:func:`memstrata.eval.datasets.clean_evidence`); a QA left with no
evidence id is not scored and is counted under ``data.without_evidence``.
Categories 1-4 make up ``overall``; category 5 (adversarial) is reported apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memstrata.cer import StepOutcome, cer_summary
from memstrata.errors import ValidationError
from memstrata.eval.calibrate import ScoredList, calibrate
from memstrata.eval.datasets import (
    ADVERSARIAL_CATEGORY,
    LOCOMO_CATEGORIES,
    LocomoConversation,
    LocomoQuestion,
    issue_counts,
)
from memstrata.eval.metrics import evidence_recall, hit_all, hit_any, mean_scores, scores_at
from memstrata.eval.runner import (
    ProgressSink,
    Query,
    Rankings,
    check_ks,
    index_all,
    latency_summary,
    qa_step,
    retrieve_all,
)
from memstrata.eval.systems import EvalSystem, Retrieved

DEFAULT_KS = (5, 10)
MAX_ISSUE_EXAMPLES = 20
_SELECTION_PART = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_conversations(spec: str) -> tuple[int, ...]:
    """The 1-based conversation positions a ``--conversations`` value names: numbers
    and inclusive ranges, comma-separated (``"1-5"``, ``"6-10"``, ``"1,3,7-9"``),
    sorted and without repeats. ValidationError for anything else."""
    positions: set[int] = set()
    if not isinstance(spec, str) or not spec.strip():
        raise ValidationError("conversations", "must name at least one conversation")
    for part in spec.split(","):
        match = _SELECTION_PART.match(part)
        if match is None:
            raise ValidationError(
                "conversations",
                f"{part.strip()!r} is not a number or a range like 1-5 (1-based)",
            )
        first = int(match.group(1))
        last = first if match.group(2) is None else int(match.group(2))
        if first < 1 or last < first:
            raise ValidationError(
                "conversations", f"{part.strip()!r}: ranges are 1-based and ascending"
            )
        positions.update(range(first, last + 1))
    return tuple(sorted(positions))


def select_conversations(
    conversations: Sequence[LocomoConversation], positions: Sequence[int]
) -> tuple[LocomoConversation, ...]:
    """The conversations at the 1-based ``positions`` of the file, in file order;
    ValidationError naming a position the file does not have."""
    missing = [p for p in positions if not 1 <= p <= len(conversations)]
    if missing or not positions:
        raise ValidationError(
            "conversations",
            f"the file has conversations 1-{len(conversations)}; "
            f"asked for {', '.join(map(str, missing)) or 'none'}",
        )
    return tuple(conversations[p - 1] for p in sorted(set(positions)))


def tenant_of(position: int) -> str:
    """The tenant of the conversation at ``position`` in the file (always a valid id)."""
    return f"locomo-{position}"


def scored_questions(
    conversations: Sequence[LocomoConversation],
) -> list[tuple[int, LocomoQuestion]]:
    """``(conversation position, question)`` for every QA that has evidence, in order."""
    return [(c, q) for c, conv in enumerate(conversations) for q in conv.questions if q.evidence]


LOCOMO_METRICS = (
    ("hit_any", hit_any),
    ("hit_all", hit_all),
    ("evidence_recall", evidence_recall),
)


def question_scores(
    ranked: Sequence[str], evidence: Sequence[str], ks: Sequence[int]
) -> dict[str, float]:
    """``hit_any@k``, ``hit_all@k`` and ``evidence_recall@k`` for each k."""
    return scores_at(ranked, evidence, ks, LOCOMO_METRICS)


def score_system(
    conversations: Sequence[LocomoConversation],
    found: Sequence[Sequence[Retrieved]],
    ks: Sequence[int],
    *,
    threshold: float,
) -> dict[str, Any]:
    """One system's report from its results, one per :func:`scored_questions` entry."""
    questions = scored_questions(conversations)
    if len(found) != len(questions):
        raise ValueError(f"found: expected {len(questions)} result lists, got {len(found)}")
    rows: dict[int, list[dict[str, float]]] = {c: [] for c in (*LOCOMO_CATEGORIES, 5)}
    steps: list[StepOutcome] = []
    turn_maps = [{t.id: t for t in conv.turns} for conv in conversations]
    for (c, question), result in zip(questions, found, strict=True):
        ranked = [r.id for r in result]
        rows[question.category].append(question_scores(ranked, question.evidence, ks))
        if not question.adversarial and question.answer is not None:
            label = f"{conversations[c].sample_id}/qa[{question.index}]"
            context = result[: max(ks)]
            steps.append(
                qa_step(label, context, question.answer, turn_maps[c], threshold=threshold)
            )
    return {
        "overall": mean_scores(row for cat in LOCOMO_CATEGORIES for row in rows[cat]),
        "by_category": {str(cat): mean_scores(rows[cat]) for cat in LOCOMO_CATEGORIES},
        "adversarial": mean_scores(rows[ADVERSARIAL_CATEGORY]),
        "cer": cer_summary(steps),
    }


def data_summary(conversations: Sequence[LocomoConversation]) -> dict[str, Any]:
    """Counts of what was indexed and scored, and every evidence repair made."""
    questions = [q for conv in conversations for q in conv.questions]
    issues = [(conv.sample_id, i) for conv in conversations for i in conv.evidence_issues]
    return {
        "conversations": len(conversations),
        "turns": sum(len(conv.turns) for conv in conversations),
        "questions": len(questions),
        "scored": sum(1 for q in questions if q.evidence and not q.adversarial),
        "adversarial_scored": sum(1 for q in questions if q.evidence and q.adversarial),
        "without_evidence": sum(1 for q in questions if not q.evidence),
        "evidence_issues": issue_counts(i for _, i in issues),
        "evidence_issue_examples": [
            {
                "conversation": sample,
                "qa": issue.question,
                "raw": issue.raw,
                "problem": issue.problem,
                "kept": list(issue.kept),
            }
            for sample, issue in issues[:MAX_ISSUE_EXAMPLES]
        ],
    }


def scored_lists(
    conversations: Sequence[LocomoConversation], found: Sequence[Sequence[Retrieved]]
) -> list[ScoredList]:
    """Each categories 1-4 question's retrieved (cosine, is evidence) pairs, for
    threshold calibration; items without a cosine are left out."""
    lists: list[ScoredList] = []
    for (_, question), result in zip(scored_questions(conversations), found, strict=True):
        if question.adversarial:
            continue
        evidence = set(question.evidence)
        lists.append(
            ScoredList(
                tuple((r.confidence, r.id in evidence) for r in result if r.confidence is not None)
            )
        )
    return lists


def build_report(
    conversations: Sequence[LocomoConversation],
    rankings: Rankings,
    ks: Sequence[int],
    *,
    threshold: float,
) -> dict[str, Any]:
    """The full LoCoMo report from the rankings of a run (pure)."""
    results = {
        name: score_system(conversations, found, ks, threshold=threshold)
        for name, found in rankings.by_system.items()
    }
    timed = rankings.timed
    return {
        "dataset": "locomo",
        "results": results,
        "latency_ms": latency_summary(rankings),
        "calibration": (
            calibrate(scored_lists(conversations, rankings.by_system[timed]))
            if timed is not None and timed in rankings.by_system
            else None
        ),
        "cer": dict(results[timed]["cer"]) if timed in results else cer_summary([]),
        "data": data_summary(conversations),
        "config": {
            "ks": list(ks),
            "search_k": max(ks),
            "categories": {str(c): name for c, name in LOCOMO_CATEGORIES.items()},
            "adversarial_category": ADVERSARIAL_CATEGORY,
            "query_time": "the date of the conversation's last session",
            "low_confidence_cosine": threshold,
            "cer_rule": (
                "step = a QA of categories 1-4 with evidence; loaded = a retrieved turn "
                "has cosine >= low_confidence_cosine; used = at least half of the gold "
                f"answer's content words occur in the top {max(ks)} retrieved turns "
                "rendered as '[session date] speaker: text'"
            ),
        },
    }


def evaluate_locomo(
    conversations: Sequence[LocomoConversation],
    systems: Sequence[EvalSystem],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    threshold: float,
    progress: ProgressSink | None = None,
) -> dict[str, Any]:
    """Index every conversation, ask every scored QA of every system, report."""
    ks = check_ks(ks)
    index_all(
        systems, [(tenant_of(c), conv.turns) for c, conv in enumerate(conversations)], progress
    )
    queries = [
        Query(tenant_of(c), q.question, conversations[c].last_date)
        for c, q in scored_questions(conversations)
    ]
    rankings = retrieve_all(systems, queries, max(ks), progress=progress)
    return build_report(conversations, rankings, ks, threshold=threshold)
