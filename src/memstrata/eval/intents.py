"""``memstrata eval intents``: how often a message sent without a step intent is routed
to the right one.

The labeled set (``eval/data/intents.jsonl``, packaged) holds messages in Chinese,
English and both mixed over the reference agents' intents (the support and the
diagnostics agents, :mod:`memstrata.agents`) and messages none of them serves, which
must go to ``respond``. It was written before the recognizer was tuned and is split
``dev`` / ``test``: the threshold and the lexical weight were chosen on ``dev``; the
intents' examples are not taken from it. A message counts as right when it is routed
to its label (for an out-of-scope one: ``respond``, recognized or fallen back to).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from memstrata.errors import ValidationError
from memstrata.eval.labeled import read_labeled
from memstrata.router.intents import RESPOND, IntentRegistry, IntentSpec
from memstrata.router.recognize import MessageUnderstanding

SPLITS = ("dev", "test", "all")
NOW = datetime(2025, 5, 6, 12, tzinfo=UTC)
"""The session time relative dates resolve against (fixed: the report is reproducible)."""


def reference_intents() -> tuple[IntentSpec, ...]:
    """The reference agents' intents and ``respond``: what the set is labeled over."""
    from memstrata.agents import diagnostics, support

    return (*support.INTENTS, *diagnostics.INTENTS, RESPOND)


def load_messages(path: Path | None = None) -> list[dict[str, str]]:
    """The labeled messages (the packaged set without ``path``)."""
    return read_labeled(
        "data/intents.jsonl", path, {"text": str, "intent": str, "lang": str, "split": str}
    )


def run_intents_eval(
    understanding: MessageUnderstanding,
    *,
    split: str = "test",
    data: Path | None = None,
    intents: Sequence[IntentSpec] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Accuracy overall, per language and per intent, and the fall-back rate."""
    if split not in SPLITS:
        raise ValidationError("split", f"must be one of {list(SPLITS)}")
    registry = IntentRegistry(intents or reference_intents())
    rows = [r for r in load_messages(data) if split == "all" or r["split"] == split]
    unknown = sorted({r["intent"] for r in rows} - set(registry.names()))
    if unknown:
        raise ValidationError("data", f"labels name unregistered intents {unknown}")
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    errors: list[dict[str, Any]] = []
    fell_back = 0
    started = clock()
    for row in rows:
        got = understanding.understand(row["text"], registry, NOW)
        ok = got.intent == row["intent"]
        fell_back += got.fell_back
        for group in ("overall", f"lang:{row['lang']}", f"intent:{row['intent']}"):
            total[group] += 1
            right[group] += ok
        if not ok:
            errors.append(
                {
                    "id": row.get("id"),
                    "text": row["text"],
                    "label": row["intent"],
                    "got": got.intent,
                    "candidate": got.candidate,
                    "confidence": round(got.confidence, 4),
                }
            )
    elapsed = clock() - started

    def share(group: str) -> float:
        return round(right[group] / total[group], 4) if total[group] else 0.0

    by: defaultdict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for group in sorted(total):
        if group != "overall":
            kind, name = group.split(":", 1)
            by[kind][name] = {"accuracy": share(group), "n": total[group]}
    return {
        "split": split,
        "messages": len(rows),
        "accuracy": share("overall"),
        "fallback_rate": round(fell_back / len(rows), 4) if rows else 0.0,
        "min_confidence": understanding.min_confidence,
        "by_language": dict(by["lang"]),
        "by_intent": dict(by["intent"]),
        "errors": errors,
        "ms_per_message": round(1000 * elapsed / len(rows), 2) if rows else 0.0,
    }


def render_report(report: dict[str, Any], out: TextIO) -> None:
    """The report as plain text tables."""
    out.write(
        f"split {report['split']}: {report['messages']} messages, accuracy "
        f"{report['accuracy']:.3f}, fall-back rate {report['fallback_rate']:.3f} "
        f"(threshold {report['min_confidence']}, {report['ms_per_message']} ms/message)\n"
    )
    for title, key in (("language", "by_language"), ("intent", "by_intent")):
        out.write(f"\n{title:<24} accuracy     n\n")
        for name, row in report[key].items():
            out.write(f"{name:<24} {row['accuracy']:>8.3f} {row['n']:>5}\n")
    if report["errors"]:
        out.write("\nmisrouted:\n")
        for e in report["errors"]:
            out.write(f"  {e['label']:<22} -> {e['got']:<22} {e['confidence']:.3f}  {e['text']}\n")
