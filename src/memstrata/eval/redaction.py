"""``memstrata eval redaction``: how much of what the gateway must redact it redacts,
and how often it changes a text it must leave alone.

The labeled corpus (``eval/data/redaction/<split>.jsonl``, packaged) holds texts in
English, Chinese and both, each with the secrets it carries (every kind the gateway
knows, in many phrasings and encodings: full-width, zero-width characters, line
breaks, spacing, JSON, URLs, markdown) or none: a benign look-alike (order numbers,
prices, dates, tracking numbers, "your password reset link was sent"). The ``test``
split was written and committed before the detectors changed and is never tuned on.

Each text goes through the gateway exactly as the write path sends a turn
(:class:`~memstrata.gateway.Sanitizer` with the default policy, ``field="text"``).
Scoring (the corpus's contract):

* a secret leaks when its normalized value (NFKC, zero-width characters removed,
  whitespace and ``- . ( )`` removed, lowercased; at least 4 characters) is found in
  the normalized sanitized text; recall = secrets not leaked / all secrets;
* a benign text is falsely redacted when the sanitized text differs from it at all;
  the false-redaction rate = falsely redacted benign texts / benign texts.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from memstrata.errors import ValidationError
from memstrata.eval.labeled import read_labeled
from memstrata.gateway import Sanitizer

# blind2: a second held-back split, written after the detectors changed; scored once.
SPLITS = ("dev", "test", "blind2")
LOCATION = "eval:redaction"
MIN_SCORED_CHARS = 4
_FIELDS = {
    "id": str,
    "split": str,
    "lang": str,
    "kind": str,
    "encoding": str,
    "text": str,
    "secrets": list,
}
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
_DROPPED = re.compile(r"[\s\-.()]+")

Sanitize = Callable[[str], str]


def norm(text: str) -> str:
    """The scoring form: NFKC, zero-width characters removed, whitespace and
    ``- . ( )`` removed, lowercased."""
    return _DROPPED.sub("", unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)).lower()


def _secrets_missing(row: dict[str, Any]) -> list[str]:
    secrets = row.get("secrets")
    if not isinstance(secrets, list) or not all(
        isinstance(s, dict) and isinstance(s.get("kind"), str) and isinstance(s.get("value"), str)
        for s in secrets
    ):
        return ["secrets"]
    return []


def load_rows(split: str, path: Path | None = None) -> list[dict[str, Any]]:
    """The rows of ``split`` (the packaged file, or ``path``); a malformed line is a
    :class:`~memstrata.errors.ValidationError` naming ``data`` and the line."""
    if split not in SPLITS:
        raise ValidationError("split", f"must be one of {list(SPLITS)}")
    packaged = f"data/redaction/{split}.jsonl"
    if path is None and not resources.files("memstrata.eval").joinpath(packaged).is_file():
        # A split can be named before its file ships (a blind split is written apart).
        raise ValidationError(
            "split", f"the {split!r} split is not installed (memstrata/eval/{packaged} is missing)"
        )
    return read_labeled(packaged, path, _FIELDS, also_missing=_secrets_missing)


def gateway_sanitize() -> Sanitize:
    """The write path's call: the default policy, the text of a turn."""
    sanitizer = Sanitizer()
    return lambda text: sanitizer.text(text, location=LOCATION, field="text")


def leaked(value: str, sanitized: str) -> bool | None:
    """Whether ``value`` survives in ``sanitized`` (None: too short to score)."""
    needle = norm(value)
    if len(needle) < MIN_SCORED_CHARS:
        return None
    return needle in norm(sanitized)


def score(
    rows: Iterable[dict[str, Any]],
    sanitize: Sanitize,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Recall (overall, per kind, language and encoding), the false-redaction rate
    (overall and per look-alike), and the ids of the misses."""
    kept: dict[str, Counter[str]] = {}
    benign: dict[str, Counter[str]] = {}
    leaks: list[dict[str, Any]] = []
    false_redactions: list[dict[str, Any]] = []
    texts = 0
    started = clock()
    for row in rows:
        texts += 1
        out = sanitize(row["text"])
        if not row["secrets"]:
            changed = out != row["text"]
            lookalike = str(row.get("lookalike") or "unlabeled")
            for group in ("overall", f"lookalike:{lookalike}", f"lang:{row['lang']}"):
                benign.setdefault(group, Counter())["changed" if changed else "kept"] += 1
            if changed:
                false_redactions.append(
                    {"id": row["id"], "lookalike": lookalike, "lang": row["lang"]}
                )
            continue
        for secret in row["secrets"]:
            got = leaked(secret["value"], out)
            if got is None:
                continue
            for group in (
                "overall",
                f"kind:{secret['kind']}",
                f"lang:{row['lang']}",
                f"encoding:{row['encoding']}",
            ):
                kept.setdefault(group, Counter())["leaked" if got else "redacted"] += 1
            if got:
                leaks.append(
                    {
                        "id": row["id"],
                        "kind": secret["kind"],
                        "lang": row["lang"],
                        "encoding": row["encoding"],
                        "phrasing": row.get("phrasing", ""),
                    }
                )
    elapsed = clock() - started
    return {
        "texts": texts,
        **_recall(kept.get("overall", Counter())),
        "recall_by_kind": _grouped(kept, "kind", _recall),
        "recall_by_language": _grouped(kept, "lang", _recall),
        "recall_by_encoding": _grouped(kept, "encoding", _recall),
        **_false(benign.get("overall", Counter())),
        "false_redaction_by_lookalike": _grouped(benign, "lookalike", _false),
        "false_redaction_by_language": _grouped(benign, "lang", _false),
        "leaks": leaks,
        "false_redactions": false_redactions,
        "ms_per_text": round(1000 * elapsed / texts, 3) if texts else 0.0,
    }


def _recall(c: Counter[str]) -> dict[str, Any]:
    n = c["redacted"] + c["leaked"]
    return {"recall": round(c["redacted"] / n, 4) if n else None, "secrets": n}


def _false(c: Counter[str]) -> dict[str, Any]:
    n = c["changed"] + c["kept"]
    return {"false_redaction": round(c["changed"] / n, 4) if n else None, "benign": n}


def _grouped(
    counts: dict[str, Counter[str]], prefix: str, scores: Callable[[Counter[str]], dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    return {
        group.split(":", 1)[1]: scores(counts[group])
        for group in sorted(counts)
        if group.startswith(prefix + ":")
    }


def run_redaction_eval(
    *, split: str = "dev", data: Path | None = None, sanitize: Sanitize | None = None
) -> dict[str, Any]:
    """The gateway against ``split`` of the corpus (module docstring)."""
    rows = load_rows(split, data)
    report = score(rows, sanitize or gateway_sanitize())
    return {"split": split, **report}


def render_report(report: dict[str, Any], out: TextIO) -> None:
    """The report as plain text tables, then the ids of the misses."""
    out.write(
        f"split {report['split']}: {report['texts']} texts; recall {_fmt(report['recall'])} "
        f"over {report['secrets']} secrets, false redaction "
        f"{_fmt(report['false_redaction'])} over {report['benign']} benign texts "
        f"({report['ms_per_text']} ms/text)\n"
    )
    for title, key, column, count in (
        ("kind", "recall_by_kind", "recall", "secrets"),
        ("language", "recall_by_language", "recall", "secrets"),
        ("encoding", "recall_by_encoding", "recall", "secrets"),
        ("look-alike", "false_redaction_by_lookalike", "false_redaction", "benign"),
        ("language", "false_redaction_by_language", "false_redaction", "benign"),
    ):
        out.write(f"\n{title:<24} {column:>16} {count:>8}\n")
        for name, row in report[key].items():
            out.write(f"{name:<24} {_fmt(row[column]):>16} {row[count]:>8}\n")
    if report["leaks"]:
        ids = ", ".join(sorted({leak["id"] for leak in report["leaks"]}))
        out.write(f"\nleaked: {ids}\n")
    if report["false_redactions"]:
        ids = ", ".join(f["id"] for f in report["false_redactions"])
        out.write(f"falsely redacted: {ids}\n")


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"
