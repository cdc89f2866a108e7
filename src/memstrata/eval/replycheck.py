"""``memstrata eval replycheck``: how well the reply check
(:func:`memstrata.decision.consistency.conflicts`) tells a reply that contradicts the
memories it was built from from one that agrees.

The labeled set (``eval/data/replycheck.jsonl``, packaged) holds (reply, memories)
pairs in English and Chinese, half of them conflicts: amounts (with units and
currencies), dates, ids, negated facts and contradicted facts; and hard non-conflicts:
the same value written another way, numbers unrelated to the held ones, a number the
memories do not mention, and paraphrases that agree. It is split ``dev`` / ``test``;
the test half was written and committed before the rules were tuned, and the rules are
tuned on ``dev`` and ``dev2`` only (``dev2``: pairs written for issue 32 by someone who
had read neither the rules nor the set, ids ``rd-``). The ``blind`` split
(``eval/data/replycheck_blind.jsonl``) was written for issue 32 by someone who had read
neither the rules nor this set, and committed before the rules were changed for it; it
is scored apart, never tuned on. A conflict is the positive class: precision is the
share of flagged replies that do conflict, recall the share of conflicts flagged. Each
memory becomes the L3 item the engine would hand the check: a fact when it reads
``subject attribute: value``, an episode otherwise.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from memstrata.decision.consistency import conflicts
from memstrata.errors import ValidationError
from memstrata.eval.labeled import read_labeled
from memstrata.router.bundle import ContextItem, Provenance

SPLITS = ("dev", "dev2", "test", "blind", "all")
BLIND = "data/replycheck_blind.jsonl"
_FIELDS = {"id": str, "split": str, "lang": str, "kind": str, "reply": str, "conflict": bool}


def load_pairs(path: Path | None = None) -> list[dict[str, Any]]:
    """The labeled pairs (the packaged set without ``path``); a malformed line is a
    :class:`~memstrata.errors.ValidationError` naming ``data`` and the line."""
    if path is not None:
        return read_labeled("", path, _FIELDS, also_missing=_memories_missing)
    return [
        row
        for packaged in ("data/replycheck.jsonl", BLIND)
        for row in read_labeled(packaged, None, _FIELDS, also_missing=_memories_missing)
    ]


def _memories_missing(row: dict[str, Any]) -> list[str]:
    memories = row.get("memories")
    if not isinstance(memories, list) or not all(isinstance(m, str) for m in memories):
        return ["memories"]
    return []


def memory_items(memories: list[str]) -> tuple[ContextItem, ...]:
    """The memories as the L3 items a decision's bundle carries."""
    items = []
    for n, text in enumerate(memories):
        fact = ":" in text and text.split(" ", 1)[0] in ("user", "assistant")
        content = {"text": text, "type": "fact" if fact else "episode"}
        items.append(
            ContextItem.of(f"memory_{n}", content, Provenance("L3", f"m{n}", "eval", 0.8, 1.0))
        )
    return tuple(items)


def run_replycheck_eval(
    *,
    split: str = "test",
    data: Path | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Precision, recall and F1 of the reply check, overall, per split, per language
    and per kind, with the pairs it got wrong."""
    if split not in SPLITS:
        raise ValidationError("split", f"must be one of {list(SPLITS)}")
    rows = [r for r in load_pairs(data) if split == "all" or r["split"] == split]
    counts: dict[str, Counter[str]] = {}
    errors: list[dict[str, Any]] = []
    started = clock()
    for row in rows:
        found = conflicts(row["reply"], memory_items(row["memories"]))
        got, want = bool(found), row["conflict"]
        outcome = ("tp" if want else "fp") if got else ("fn" if want else "tn")
        for group in (
            "overall",
            f"split:{row['split']}",
            f"lang:{row['lang']}",
            f"kind:{row['kind']}",
        ):
            counts.setdefault(group, Counter())[outcome] += 1
        if got != want:
            errors.append(
                {
                    "id": row["id"],
                    "kind": row["kind"],
                    "label": "conflict" if want else "consistent",
                    "reply": row["reply"],
                    "memories": row["memories"],
                    "found": list(found),
                }
            )
    elapsed = clock() - started
    groups: dict[str, dict[str, dict[str, Any]]] = {"split": {}, "lang": {}, "kind": {}}
    for group in sorted(counts):
        if group != "overall":
            kind, name = group.split(":", 1)
            groups[kind][name] = _scores(counts[group])
    return {
        "split": split,
        "pairs": len(rows),
        **_scores(counts.get("overall", Counter())),
        "by_split": groups["split"],
        "by_language": groups["lang"],
        "by_kind": groups["kind"],
        "errors": errors,
        "ms_per_pair": round(1000 * elapsed / len(rows), 3) if rows else 0.0,
    }


def _scores(c: Counter[str]) -> dict[str, Any]:
    tp, fp, fn, tn = c["tp"], c["fp"], c["fn"], c["tn"]
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall
        else None
    )
    n = tp + fp + fn + tn
    return {
        "precision": _round(precision),
        "recall": _round(recall),
        "f1": _round(f1),
        "accuracy": _round((tp + tn) / n if n else None),
        "n": n,
        "conflicts": tp + fn,
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def render_report(report: dict[str, Any], out: TextIO) -> None:
    """The report as plain text tables (n/a: no pair of that class in the group)."""
    out.write(
        f"split {report['split']}: {report['pairs']} pairs ({report['conflicts']} conflicts), "
        f"precision {_fmt(report['precision'])}, recall {_fmt(report['recall'])}, "
        f"F1 {_fmt(report['f1'])} ({report['ms_per_pair']} ms/pair)\n"
    )
    for title, key in (("split", "by_split"), ("language", "by_language"), ("kind", "by_kind")):
        out.write(f"\n{title:<20} precision  recall      F1  accuracy     n\n")
        for name, row in report[key].items():
            out.write(
                f"{name:<20} {_fmt(row['precision']):>9} {_fmt(row['recall']):>7} "
                f"{_fmt(row['f1']):>7} {_fmt(row['accuracy']):>9} {row['n']:>5}\n"
            )
    if report["errors"]:
        out.write("\nmisjudged:\n")
        for e in report["errors"]:
            out.write(f"  {e['id']} {e['kind']:<18} want {e['label']:<10} {e['reply']}\n")


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
