"""The bilingual evaluation: Chinese and mixed Chinese/English chats, per category,
per question language, across languages, and unanswerable questions flagged.

The data set is the packaged ``bilingual.json`` (:mod:`memstrata.eval.bilingual_data`
writes it). One tenant per conversation; every question is asked of its own
conversation, at the conversation's ``asked_at`` (a day or two after its last
session). Answerable questions are scored by ``hit_any@k`` / ``hit_all@k`` on their
evidence turn ids; an unanswerable question is scored by whether the system flags it
low-confidence, and the same flag is counted on the answerable ones (it should
rarely fire there).

The ``test`` split is held back: nothing (thresholds, weights, rules) may be
tuned on it. ``--calibrate`` works on ``dev`` only and refuses the others.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from memstrata.errors import DatasetError, ValidationError
from memstrata.eval.datasets import Turn
from memstrata.eval.metrics import hit_all, hit_any, mean_scores, scores_at
from memstrata.eval.runner import (
    ProgressSink,
    Query,
    Rankings,
    check_ks,
    index_all,
    latency_summary,
    retrieve_all,
)
from memstrata.eval.systems import EvalSystem, Retrieved
from memstrata.language import LANGUAGES

SPLIT_CHOICES = ("dev", "test", "all")
CATEGORIES = (
    "single-hop",
    "multi-hop",
    "temporal",
    "knowledge-update",
    "cross-language",
    "unanswerable",
)
UNANSWERABLE = "unanswerable"
CROSS_LANGUAGE = "cross-language"
DEFAULT_KS = (10,)
PACKAGED = "bilingual.json"
PRODUCT = "memstrata"
DENSE_ROWS = ("minilm", "multilingual")

# Top-1 cosine below which a dense row flags a question low-confidence, per model and
# query language. Calibrated on the dev split only (`memstrata eval bilingual --split
# dev --calibrate`; docs/benchmarks.md, "Bilingual"): the threshold flagging >= 95 %
# of dev's unanswerable questions with <= 5 % of its answerable ones, or the best
# trade-off where none does.
# MiniLM cannot separate Chinese questions at all (its unanswerable ones score higher
# than its answerable ones), so its zh / mixed thresholds are the best of bad trade-offs.
DENSE_THRESHOLDS: Mapping[str, Mapping[str, float]] = {
    "minilm": {"zh": 0.713, "en": 0.209, "mixed": 0.541},
    "multilingual": {"zh": 0.314, "en": 0.305, "mixed": 0.387},
}

FLAG_TARGET_UNANSWERABLE = 0.95
FLAG_LIMIT_ANSWERABLE = 0.05


@dataclass(frozen=True, slots=True)
class BilingualQuestion:
    """One question: its text and language (``zh``, ``en``, ``mixed``), category,
    evidence turn ids (empty when unanswerable) and, for a knowledge update, the
    turns whose value it replaced."""

    id: str
    question: str
    language: str
    category: str
    evidence: tuple[str, ...]
    superseded: tuple[str, ...]
    answer: str | None

    @property
    def answerable(self) -> bool:
        """Whether the question has evidence (every category but unanswerable)."""
        return self.category != UNANSWERABLE


@dataclass(frozen=True, slots=True)
class BilingualConversation:
    """One conversation: its turns in order (sessions on different days), its
    questions and when they are asked."""

    id: str
    split: str
    language: str
    turns: tuple[Turn, ...]
    turn_languages: Mapping[str, str]
    questions: tuple[BilingualQuestion, ...]
    asked_at: datetime


def check_split(split: str) -> str:
    """``split`` if it is dev, test or all; ValidationError naming ``split`` otherwise."""
    if split not in SPLIT_CHOICES:
        raise ValidationError("split", f"must be one of {', '.join(SPLIT_CHOICES)}, got {split!r}")
    return split


def load_bilingual(
    path: Path | None = None, *, split: str = "test", limit: int | None = None
) -> tuple[BilingualConversation, ...]:
    """The conversations of ``split`` (file order), the first ``limit`` of them when
    given; ``path`` None reads the packaged set. DatasetError names the file, the
    conversation and the field of the first malformed record."""
    check_split(split)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValidationError("limit", f"must be a positive integer, got {limit!r}")
    source = str(path) if path is not None else PACKAGED
    try:
        if path is None:
            text = (resources.files("memstrata.eval") / "data" / "bilingual" / PACKAGED).read_text(
                "utf-8"
            )
        else:
            text = Path(path).read_text(encoding="utf-8")
        raw = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DatasetError(source, None, f"cannot read: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("conversations"), list):
        raise DatasetError(source, None, "conversations: must be a list")
    out = [
        _conversation(source, i, record)
        for i, record in enumerate(raw["conversations"])
        if split == "all" or (isinstance(record, dict) and record.get("split") == split)
    ]
    return tuple(out[:limit] if limit is not None else out)


def _conversation(source: str, index: int, record: Any) -> BilingualConversation:
    where = f"record {index}"

    def fail(field: str, reason: str) -> DatasetError:
        return DatasetError(source, where, f"{field}: {reason}")

    if not isinstance(record, dict):
        raise fail("conversation", "must be an object")
    conv_id = record.get("id")
    if not isinstance(conv_id, str) or not conv_id:
        raise fail("id", "must be a non-empty string")
    where = f"record {index} ({conv_id})"
    turns: list[Turn] = []
    languages: dict[str, str] = {}
    try:
        asked_at = datetime.fromisoformat(record["asked_at"])
        for s, session in enumerate(record["sessions"]):
            at = datetime.fromisoformat(session["date"])
            for t, turn in enumerate(session["turns"]):
                if not isinstance(turn["text"], str) or not turn["text"].strip():
                    raise fail(f"sessions[{s}].turns[{t}].text", "must be a non-empty string")
                turns.append(
                    Turn(
                        id=str(turn["id"]),
                        session=str(session["id"]),
                        speaker=str(turn["speaker"]),
                        text=turn["text"],
                        at=at,
                        date_text=at.date().isoformat(),
                    )
                )
                languages[str(turn["id"])] = str(turn["language"])
        questions = tuple(
            BilingualQuestion(
                id=str(q["id"]),
                question=str(q["question"]),
                language=str(q["language"]),
                category=str(q["category"]),
                evidence=tuple(str(e) for e in q["evidence"]),
                superseded=tuple(str(e) for e in q.get("superseded", ())),
                answer=q.get("answer"),
            )
            for q in record["questions"]
        )
    except KeyError as exc:
        raise fail(str(exc.args[0]), "missing") from exc
    except (TypeError, ValueError) as exc:
        raise fail("conversation", str(exc)) from exc
    if asked_at.tzinfo is None:
        raise fail("asked_at", "must carry a time zone")
    known = set(languages)
    for q in questions:
        if q.category not in CATEGORIES:
            raise fail(f"questions[{q.id}].category", f"must be one of {', '.join(CATEGORIES)}")
        if q.answerable != bool(q.evidence):
            raise fail(f"questions[{q.id}].evidence", "empty exactly when unanswerable")
        dangling = [e for e in (*q.evidence, *q.superseded) if e not in known]
        if dangling:
            raise fail(f"questions[{q.id}].evidence", f"no such turn: {', '.join(dangling)}")
    return BilingualConversation(
        id=conv_id,
        split=str(record.get("split", "")),
        language=str(record.get("language", "")),
        turns=tuple(turns),
        turn_languages=languages,
        questions=questions,
        asked_at=asked_at,
    )


def tenant_of(conversation: BilingualConversation) -> str:
    """The tenant a conversation is indexed under."""
    return f"bilingual-{conversation.id}"


def all_questions(
    conversations: Sequence[BilingualConversation],
) -> list[tuple[BilingualConversation, BilingualQuestion]]:
    """Every question with its conversation, in file order (the query order)."""
    return [(c, q) for c in conversations for q in c.questions]


# --- scoring (pure) -------------------------------------------------------------------

Flagger = Callable[[BilingualQuestion, Sequence[Retrieved]], bool | None]


def product_flag(_: BilingualQuestion, found: Sequence[Retrieved]) -> bool | None:
    """The product's own flag: the top item is ``low_confidence`` (or nothing came)."""
    if not found:
        return True
    return bool(found[0].low_confidence)


def dense_flag(thresholds: Mapping[str, float]) -> Flagger:
    """A dense row's flag: the top-1 cosine is below the model's threshold for the
    question's language (or nothing came)."""

    def flag(question: BilingualQuestion, found: Sequence[Retrieved]) -> bool | None:
        limit = thresholds.get(question.language)
        if limit is None:
            return None
        if not found or found[0].confidence is None:
            return True
        return found[0].confidence < limit

    return flag


def _share(values: Iterable[bool]) -> dict[str, float | int | None]:
    items = list(values)
    return {"share": round(sum(items) / len(items), 4) if items else None, "n": len(items)}


def _update_order(ranked: Sequence[str], q: BilingualQuestion) -> bool:
    """The current value's turn is retrieved and ranked above every replaced one."""
    position = {turn: i for i, turn in reversed(list(enumerate(ranked)))}
    current = min((position[e] for e in q.evidence if e in position), default=None)
    if current is None:
        return False
    return all(position.get(old, math.inf) > current for old in q.superseded)


def score_system(
    conversations: Sequence[BilingualConversation],
    found: Sequence[Sequence[Retrieved]],
    ks: Sequence[int],
    flag: Flagger | None,
) -> dict[str, Any]:
    """One system's report from its results (one per :func:`all_questions` entry)."""
    pairs = all_questions(conversations)
    if len(found) != len(pairs):
        raise ValueError(f"found: expected {len(pairs)} result lists, got {len(found)}")
    metrics = (("hit_any", hit_any), ("hit_all", hit_all))
    rows: list[tuple[BilingualQuestion, dict[str, float]]] = []
    flags: list[tuple[BilingualQuestion, bool]] = []
    order: list[bool] = []
    for (_, q), result in zip(pairs, found, strict=True):
        ranked = [r.id for r in result]
        if q.answerable:
            rows.append((q, scores_at(ranked, q.evidence, ks, metrics)))
            if q.superseded and q.category == "knowledge-update":
                order.append(_update_order(ranked[: max(ks)], q))
        flagged = flag(q, result) if flag is not None else None
        if flagged is not None:
            flags.append((q, flagged))

    def group(category: str | None = None, language: str | None = None) -> dict[str, float]:
        return mean_scores(
            r for q, r in rows if category in (None, q.category) and language in (None, q.language)
        )

    report: dict[str, Any] = {
        "overall": group(),
        "by_category": {c: group(category=c) for c in CATEGORIES if c != UNANSWERABLE},
        "by_language": {lang: group(language=lang) for lang in LANGUAGES},
        "cross_language": {
            f"{lang} question": group(CROSS_LANGUAGE, lang) for lang in ("zh", "en")
        },
        "temporal_by_language": {lang: group("temporal", lang) for lang in LANGUAGES},
        "update_current_first": _share(order),
    }
    if flags:
        report["confidence"] = {
            "unanswerable_flagged": _share(f for q, f in flags if not q.answerable),
            "answerable_flagged": _share(f for q, f in flags if q.answerable),
            "by_language": {
                lang: {
                    "unanswerable_flagged": _share(
                        f for q, f in flags if not q.answerable and q.language == lang
                    ),
                    "answerable_flagged": _share(
                        f for q, f in flags if q.answerable and q.language == lang
                    ),
                }
                for lang in LANGUAGES
            },
        }
    else:
        report["confidence"] = None
    return report


# --- calibration (pure) ---------------------------------------------------------------


def _summary(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)

    def q(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 4)

    return {
        "n": len(ordered),
        "min": round(ordered[0], 4),
        "p05": q(0.05),
        "p25": q(0.25),
        "p50": q(0.5),
        "p75": q(0.75),
        "p95": q(0.95),
        "max": round(ordered[-1], 4),
    }


def choose_threshold(
    answerable: Sequence[float],
    unanswerable: Sequence[float],
    *,
    target: float = FLAG_TARGET_UNANSWERABLE,
    limit: float = FLAG_LIMIT_ANSWERABLE,
) -> dict[str, Any]:
    """The top-1 cosine threshold (flag = below it) flagging at least ``target`` of the
    unanswerable questions while flagging at most ``limit`` of the answerable ones;
    where none does, the best trade-off (most unanswerable minus answerable flagged).
    Among equally good thresholds the middle one is taken (the widest margin).
    ``within_answerable_limit`` is the threshold flagging the most unanswerable
    questions while flagging at most ``limit`` of the answerable ones."""
    if not answerable or not unanswerable:
        return {"threshold": None, "meets_target": False, "reason": "needs both kinds"}
    points = sorted({round(v, 4) for v in (*answerable, *unanswerable)})
    candidates = sorted(
        {round((a + b) / 2, 4) for a, b in itertools.pairwise(points)}
        | {round(points[0] - 0.001, 4), round(points[-1] + 0.001, 4)}
    )

    def rates(t: float) -> tuple[float, float]:
        return (
            sum(v < t for v in unanswerable) / len(unanswerable),
            sum(v < t for v in answerable) / len(answerable),
        )

    scored = [(t, *rates(t)) for t in candidates]
    valid = [s for s in scored if s[1] >= target and s[2] <= limit]
    pool = valid or scored
    best = max(u - a for _, u, a in pool)
    ties = [s for s in pool if s[1] - s[2] == best]
    t, u, a = ties[len(ties) // 2]
    # The other way to read "best": never flag more than ``limit`` of the answerable
    # questions, and flag as many unanswerable ones as that allows.
    safe = max((s for s in scored if s[2] <= limit), key=lambda s: (s[1], -s[2]))
    return {
        "threshold": t,
        "unanswerable_flagged": round(u, 4),
        "answerable_flagged": round(a, 4),
        "meets_target": bool(valid),
        "within_answerable_limit": {
            "threshold": safe[0],
            "unanswerable_flagged": round(safe[1], 4),
            "answerable_flagged": round(safe[2], 4),
        },
    }


def calibrate_rows(
    conversations: Sequence[BilingualConversation], rankings: Rankings
) -> dict[str, Any]:
    """Per row with cosines and per query language (and ``all``): the top-1 cosine
    distributions of answerable and unanswerable questions and the chosen threshold."""
    pairs = all_questions(conversations)
    out: dict[str, Any] = {}
    for name, found in rankings.by_system.items():
        if name not in (PRODUCT, *DENSE_ROWS):
            continue  # BM25 has no cosine of its own to calibrate
        tops = [
            (q, result[0].confidence if result else None)
            for (_, q), result in zip(pairs, found, strict=True)
        ]
        if all(c is None for _, c in tops):
            continue
        by_lang: dict[str, Any] = {}
        for lang in (*LANGUAGES, "all"):
            chosen = [(q, -1.0 if c is None else c) for q, c in tops if lang in ("all", q.language)]
            ans = [c for q, c in chosen if q.answerable]
            unans = [c for q, c in chosen if not q.answerable]
            by_lang[lang] = {
                "answerable": _summary(ans),
                "unanswerable": _summary(unans),
                **choose_threshold(ans, unans),
            }
        out[name] = by_lang
    return {
        "rule": (
            f"flag = top-1 cosine below the threshold; target: >= {FLAG_TARGET_UNANSWERABLE:.0%} "
            f"of unanswerable flagged, <= {FLAG_LIMIT_ANSWERABLE:.0%} of answerable; else the "
            "best trade-off (max unanswerable minus answerable flagged)"
        ),
        "rows": out,
    }


# --- the run --------------------------------------------------------------------------


def data_summary(conversations: Sequence[BilingualConversation]) -> dict[str, Any]:
    """Counts of what was indexed and asked."""
    questions = [q for c in conversations for q in c.questions]

    def count(key: Callable[[BilingualQuestion], str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for q in questions:
            out[key(q)] = out.get(key(q), 0) + 1
        return dict(sorted(out.items()))

    return {
        "conversations": len(conversations),
        "by_conversation_language": {
            lang: sum(1 for c in conversations if c.language == lang) for lang in ("zh", "mixed")
        },
        "sessions": sum(len({t.session for t in c.turns}) for c in conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions": len(questions),
        "by_category": count(lambda q: q.category),
        "by_language": count(lambda q: q.language),
    }


def build_report(
    conversations: Sequence[BilingualConversation],
    rankings: Rankings,
    ks: Sequence[int],
    *,
    thresholds: Mapping[str, Mapping[str, float]] = DENSE_THRESHOLDS,
    calibrate: bool = False,
) -> dict[str, Any]:
    """The report from the rankings of a run (pure)."""
    results: dict[str, Any] = {}
    for name, found in rankings.by_system.items():
        flag: Flagger | None = None
        if name == PRODUCT:
            flag = product_flag
        elif name in thresholds:
            flag = dense_flag(thresholds[name])
        results[name] = score_system(conversations, found, ks, flag)
    return {
        "dataset": "bilingual",
        "results": results,
        "latency_ms": latency_summary(rankings),
        "calibration": calibrate_rows(conversations, rankings) if calibrate else None,
        "data": data_summary(conversations),
        "config": {
            "ks": list(ks),
            "search_k": max(ks),
            "query_time": "the conversation's asked_at (a day or two after its last session)",
            "dense_thresholds": {k: dict(v) for k, v in thresholds.items()},
            "flags": {
                PRODUCT: "the top item's low_confidence (L3 skipped counts as flagged)",
                **{
                    row: "top-1 cosine below DENSE_THRESHOLDS[row][question language]"
                    for row in thresholds
                },
                "bm25": "none (no calibrated confidence)",
            },
        },
    }


def evaluate_bilingual(
    conversations: Sequence[BilingualConversation],
    systems: Sequence[EvalSystem],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    thresholds: Mapping[str, Mapping[str, float]] = DENSE_THRESHOLDS,
    calibrate: bool = False,
    progress: ProgressSink | None = None,
) -> dict[str, Any]:
    """Index every conversation in every system, ask every question, report."""
    cutoffs = check_ks(ks)
    index_all(systems, [(tenant_of(c), c.turns) for c in conversations], progress)
    queries = [Query(tenant_of(c), q.question, c.asked_at) for c, q in all_questions(conversations)]
    rankings = retrieve_all(systems, queries, max(cutoffs), progress=progress)
    return build_report(
        conversations, rankings, cutoffs, thresholds=thresholds, calibrate=calibrate
    )
