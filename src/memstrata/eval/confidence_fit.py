"""Fitting the reader's confidence model (:data:`memstrata.retrieval.confidence.MODEL`).

    python -m memstrata.eval.confidence_fit --split dev

runs the bilingual set's ``dev`` split through the real engine (every turn through
``observe()``, every question through ``retrieve()`` at its ``asked_at``, as the
``memstrata`` row of ``eval bilingual``), takes each retrieved item's signals
(:class:`~memstrata.retrieval.results.Signals`) with whether it is evidence of its
question, and fits a logistic regression (L2-regularized, Newton's method). The
question-level flag (the top item's confidence below the bar) is then set where it
flags >= 95 % of the unanswerable questions and <= 5 % of the answerable ones, or,
where no bar does, at the best trade-off (most unanswerable minus answerable flagged:
:func:`memstrata.eval.bilingual.choose_threshold`), and the bias shifted so that
bar lands on ``LongTermSettings.low_confidence_cosine``'s default. It prints the
model to paste into ``retrieval/confidence.py`` and the flag rates it gives on the
split. The ``test`` split is refused: it is held back.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memstrata.config import LongTermSettings
from memstrata.errors import ValidationError
from memstrata.eval.bilingual import (
    FLAG_LIMIT_ANSWERABLE,
    FLAG_TARGET_UNANSWERABLE,
    all_questions,
    choose_threshold,
    load_bilingual,
    tenant_of,
)
from memstrata.eval.command import default_embedder, open_product
from memstrata.retrieval.confidence import Model, combined
from memstrata.retrieval.results import Signals

K = 10


@dataclass(frozen=True, slots=True)
class Row:
    """One retrieved item: its signals, its facts' signals, whether it is evidence."""

    own: Signals
    facts: tuple[Signals, ...]
    evidence: bool


@dataclass(frozen=True, slots=True)
class Asked:
    """One question's retrieved items, in rank order."""

    answerable: bool
    language: str
    rows: tuple[Row, ...]


def collect(split: str = "dev", limit: int | None = None) -> list[Asked]:
    """Every question of ``split`` with its retrieved items' signals."""
    if split == "test":
        raise ValidationError("split", "the test split is held back: fit on dev")
    conversations = load_bilingual(split=split, limit=limit)
    out: list[Asked] = []
    with open_product(None, "confidence-fit", default_embedder(), LongTermSettings()) as product:
        for conversation in conversations:
            product.index(tenant_of(conversation), conversation.turns)
        product.finish_indexing()
        for conversation, question in all_questions(conversations):
            result = product.retrieve(
                tenant_of(conversation), question.question, conversation.asked_at, K
            )
            rows = []
            for item in result.items or result.below_threshold:
                if item.signals is None:
                    continue
                turn = product.turn_of(item)
                rows.append(
                    Row(
                        item.signals,
                        tuple(f.signals for f in item.facts if f.signals is not None),
                        turn is not None and turn in question.evidence,
                    )
                )
            out.append(Asked(question.answerable, question.language, tuple(rows)))
    return out


def fit(asked: Sequence[Asked], l2: float = 1.0, steps: int = 50) -> Model:
    """A logistic regression of "the item is evidence" on its own signals."""
    x = np.array([list(r.own) for a in asked for r in a.rows], dtype=np.float64)
    y = np.array([r.evidence for a in asked for r in a.rows], dtype=np.float64)
    if not len(x):
        raise ValidationError("asked", "no retrieved items to fit on")
    design = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(design.shape[1])
    penalty = np.eye(design.shape[1]) * l2
    penalty[-1, -1] = 0.0  # the bias is not shrunk
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ w, -30, 30)))
        gradient = design.T @ (p - y) + penalty @ w
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty
        w -= np.linalg.solve(hessian, gradient)
    return Model(tuple(round(float(v), 3) for v in w[:-1]), round(float(w[-1]), 3))


def tops(asked: Sequence[Asked], model: Model, floor: float) -> list[tuple[Asked, float]]:
    """Each question's top item's confidence (-1 when nothing came back)."""
    return [
        (a, combined(model, a.rows[0].own, a.rows[0].facts, floor) if a.rows else -1.0)
        for a in asked
    ]


def shifted(model: Model, bar: float, target: float) -> Model:
    """``model`` with its bias moved so that confidence ``bar`` becomes ``target``."""
    move = _logit(target) - _logit(bar)
    return Model(model.weights, round(model.bias + move, 3))


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def flag_rates(asked: Sequence[Asked], model: Model, bar: float, floor: float) -> dict[str, Any]:
    """Unanswerable and answerable questions flagged (top item below ``bar``)."""
    scored = tops(asked, model, floor)
    out: dict[str, Any] = {}
    for lang in ("all", "zh", "en", "mixed"):
        chosen = [(a, c) for a, c in scored if lang in ("all", a.language)]
        un = [c < bar for a, c in chosen if not a.answerable]
        an = [c < bar for a, c in chosen if a.answerable]
        out[lang] = {
            "unanswerable_flagged": round(sum(un) / len(un), 4) if un else None,
            "answerable_flagged": round(sum(an) / len(an), 4) if an else None,
        }
    return out


def run(split: str, limit: int | None, l2: float) -> dict[str, Any]:
    """Collect, fit, choose the bar, shift; the report."""
    asked = collect(split, limit)
    settings = LongTermSettings()
    raw = fit(asked, l2)
    floor = 0.0  # the window floor is applied after the shift, on the final scale
    scored = tops(asked, raw, floor)
    chosen = choose_threshold(
        [c for a, c in scored if a.answerable],
        [c for a, c in scored if not a.answerable],
        target=FLAG_TARGET_UNANSWERABLE,
        limit=FLAG_LIMIT_ANSWERABLE,
    )
    # The target's threshold where one meets it, else the best trade-off (most
    # unanswerable minus answerable flagged), as the dense rows' thresholds are chosen.
    bar = float(chosen["threshold"])
    model = shifted(raw, bar, settings.low_confidence_cosine)
    return {
        "split": split,
        "questions": len(asked),
        "items": sum(len(a.rows) for a in asked),
        "raw": raw._asdict(),
        "bar_on_raw": bar,
        "choice": chosen,
        "model": model._asdict(),
        "flags": flag_rates(asked, model, settings.low_confidence_cosine, 0.0),
        "paste": f"MODEL = Model(weights={model.weights}, bias={model.bias})",
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev",))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--l2", type=float, default=1.0)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.split, args.limit, args.l2), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
