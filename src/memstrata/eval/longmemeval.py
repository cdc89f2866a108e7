"""LongMemEval: each question's own haystack, scored at turn or session level.

Each question gets its own tenant holding its haystack's turns (always indexed
per turn) and is asked at its ``question_date``.

* ``turn`` granularity: the ranking is the retrieved turns; a turn is relevant
  when its ``has_answer`` is true.
* ``session`` granularity: sessions are ranked by their best-ranked turn among
  the top :data:`SESSION_TURN_DEPTH` retrieved turns (a session none of whose
  turns is retrieved that deep is unranked, i.e. a miss); a session is relevant
  when it is in ``answer_session_ids``. Whole sessions are not indexed as single
  items: LongMemEval sessions often exceed what one embedding represents well.

Abstention questions (ids ending in ``_abs``) are excluded from the scores, and so
is a question with no relevant item at the chosen granularity; both are counted
under ``data``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from memstrata.cer import StepOutcome, cer_summary
from memstrata.errors import ValidationError
from memstrata.eval.calibrate import ScoredList, calibrate
from memstrata.eval.datasets import LmeQuestion
from memstrata.eval.metrics import mean_scores, ndcg, recall_all, recall_any, scores_at
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

Granularity = Literal["session", "turn"]
GRANULARITIES: tuple[Granularity, ...] = ("session", "turn")
SESSION_TURN_DEPTH = 100
DEFAULT_KS = (5, 10)


def tenant_of(question: LmeQuestion) -> str:
    """The tenant of a question's haystack (from its position: always a valid id)."""
    return f"lme-{question.index}"


def check_granularity(value: str) -> Granularity:
    """``value`` if it is 'session' or 'turn'."""
    for granularity in GRANULARITIES:
        if value == granularity:
            return granularity
    raise ValidationError("granularity", f"must be 'session' or 'turn', got {value!r}")


def relevant_ids(question: LmeQuestion, granularity: Granularity) -> frozenset[str]:
    """The relevant turn ids (``has_answer``) or session ids (answer sessions present
    in the haystack)."""
    if granularity == "turn":
        return frozenset(t.turn.id for t in question.turns if t.has_answer)
    return frozenset(question.answer_session_ids).intersection(question.session_ids)


def session_ranking(found: Sequence[Retrieved], question: LmeQuestion) -> list[str]:
    """Sessions in the order of their best-ranked retrieved turn."""
    session_of = {t.turn.id: t.turn.session for t in question.turns}
    ranked = (session_of.get(r.id) for r in found)
    return list(dict.fromkeys(s for s in ranked if s is not None))


def scored(questions: Sequence[LmeQuestion], granularity: Granularity) -> list[LmeQuestion]:
    """The questions that are scored: not abstention, with something relevant."""
    return [q for q in questions if not q.abstention and relevant_ids(q, granularity)]


LME_METRICS = (("recall_any", recall_any), ("recall_all", recall_all), ("ndcg", ndcg))


def question_scores(
    ranked: Sequence[str], relevant: frozenset[str], ks: Sequence[int]
) -> dict[str, float]:
    """``recall_any@k``, ``recall_all@k`` and ``ndcg@k`` for each k."""
    return scores_at(ranked, relevant, ks, LME_METRICS)


def score_system(
    questions: Sequence[LmeQuestion],
    found: Sequence[Sequence[Retrieved]],
    granularity: Granularity,
    ks: Sequence[int],
    *,
    threshold: float,
) -> dict[str, Any]:
    """One system's report from its results, one per :func:`scored` question."""
    asked = scored(questions, granularity)
    if len(found) != len(asked):
        raise ValueError(f"found: expected {len(asked)} result lists, got {len(found)}")
    rows: dict[str, list[dict[str, float]]] = {}
    steps: list[StepOutcome] = []
    for question, result in zip(asked, found, strict=True):
        if granularity == "turn":
            ranked = [r.id for r in result]
        else:
            ranked = session_ranking(result, question)
        scores = question_scores(ranked, relevant_ids(question, granularity), ks)
        rows.setdefault(question.question_type, []).append(scores)
        if question.answer is not None:
            turns = {t.turn.id: t.turn for t in question.turns}
            steps.append(
                qa_step(
                    question.question_id,
                    result[: max(ks)],
                    question.answer,
                    turns,
                    threshold=threshold,
                )
            )
    return {
        "overall": mean_scores(row for group in rows.values() for row in group),
        "by_type": {name: mean_scores(rows[name]) for name in sorted(rows)},
        "cer": cer_summary(steps),
    }


def data_summary(questions: Sequence[LmeQuestion], granularity: Granularity) -> dict[str, Any]:
    """Counts of what was indexed, scored and excluded."""
    answerable = [q for q in questions if not q.abstention]
    return {
        "questions": len(questions),
        "scored": len(scored(questions, granularity)),
        "abstention_excluded": len(questions) - len(answerable),
        "without_relevant": sum(1 for q in answerable if not relevant_ids(q, granularity)),
        "answer_sessions_missing_from_haystack": sum(
            1 for q in questions for s in q.answer_session_ids if s not in q.session_ids
        ),
        "turns": sum(len(q.turns) for q in questions),
        "blank_turns_skipped": sum(q.skipped_turns for q in questions),
        "repeated_sessions_dropped": sum(q.repeated_sessions for q in questions),
        "repeated_sessions_folded": sum(q.repeated_sessions for q in questions),
        "repeated_sessions_folded_with_other_date": sum(q.redated_sessions for q in questions),
    }


def search_k(granularity: Granularity, ks: Sequence[int]) -> int:
    """How many turns are retrieved per question."""
    return max(max(ks), SESSION_TURN_DEPTH) if granularity == "session" else max(ks)


def scored_lists(
    questions: Sequence[LmeQuestion],
    found: Sequence[Sequence[Retrieved]],
    granularity: Granularity,
) -> list[ScoredList]:
    """Per scored question, each retrieved turn's (cosine, relevant) for calibration;
    a turn counts as relevant when it has the answer or (session granularity) lies
    in an answer session."""
    lists: list[ScoredList] = []
    for question, result in zip(scored(questions, granularity), found, strict=True):
        relevant = relevant_ids(question, granularity)
        session_of = {t.turn.id: t.turn.session for t in question.turns}
        lists.append(
            ScoredList(
                tuple(
                    (
                        r.confidence,
                        (r.id if granularity == "turn" else session_of.get(r.id)) in relevant,
                    )
                    for r in result
                    if r.confidence is not None
                )
            )
        )
    return lists


def build_report(
    questions: Sequence[LmeQuestion],
    rankings: Rankings,
    granularity: Granularity,
    ks: Sequence[int],
    *,
    threshold: float,
) -> dict[str, Any]:
    """The full LongMemEval report from the rankings of a run (pure)."""
    results = {
        name: score_system(questions, found, granularity, ks, threshold=threshold)
        for name, found in rankings.by_system.items()
    }
    timed = rankings.timed
    return {
        "dataset": "longmemeval",
        "results": results,
        "latency_ms": latency_summary(rankings),
        "calibration": (
            calibrate(scored_lists(questions, rankings.by_system[timed], granularity))
            if timed is not None and timed in rankings.by_system
            else None
        ),
        "cer": dict(results[timed]["cer"]) if timed in results else cer_summary([]),
        "data": data_summary(questions, granularity),
        "config": {
            "granularity": granularity,
            "ks": list(ks),
            "search_k": search_k(granularity, ks),
            "session_ranking": (
                f"sessions ranked by their best-ranked turn among the top "
                f"{SESSION_TURN_DEPTH} turns"
                if granularity == "session"
                else None
            ),
            "query_time": "the question's question_date",
            "excluded": "abstention questions (_abs) and questions with nothing relevant",
            "low_confidence_cosine": threshold,
            "cer_rule": (
                "step = a scored question with an answer; loaded = a retrieved turn has "
                "cosine >= low_confidence_cosine; used = at least half of the gold "
                f"answer's content words occur in the top {max(ks)} retrieved turns"
            ),
        },
    }


def evaluate_longmemeval(
    questions: Sequence[LmeQuestion],
    systems: Sequence[EvalSystem],
    *,
    granularity: Granularity,
    ks: Sequence[int] = DEFAULT_KS,
    threshold: float,
    progress: ProgressSink | None = None,
) -> dict[str, Any]:
    """Index each scored question's haystack, ask it of every system, report."""
    ks = check_ks(ks)
    asked = scored(questions, granularity)
    index_all(systems, [(tenant_of(q), [t.turn for t in q.turns]) for q in asked], progress)
    queries = [Query(tenant_of(q), q.question, q.question_date) for q in asked]
    rankings = retrieve_all(systems, queries, search_k(granularity, ks), progress=progress)
    return build_report(questions, rankings, granularity, ks, threshold=threshold)
