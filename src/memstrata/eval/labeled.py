"""Reading a labeled JSONL set: the packaged one or a user's file of the same shape.

One row per line, a JSON object; blank lines are skipped. A line that is no JSON, no
object, or lacks a field of the right type is a
:class:`~memstrata.errors.ValidationError` naming ``data`` and the line number.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from memstrata.errors import ValidationError

__all__ = ["read_labeled"]


def read_labeled(
    packaged: str,
    path: Path | None,
    fields: Mapping[str, type],
    *,
    also_missing: Callable[[dict[str, Any]], list[str]] | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``path``, or of the package's ``memstrata/eval/<packaged>`` without
    one. ``fields``: each required field and its type; ``also_missing``: the names of
    further fields a row lacks (checks a type alone cannot say)."""
    if path is None:
        text = resources.files("memstrata.eval").joinpath(packaged).read_text(encoding="utf-8")
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationError("data", f"cannot read {path}: {exc}") from exc
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ValidationError("data", f"line {number}: not JSON ({exc})") from exc
        if not isinstance(row, dict):
            raise ValidationError("data", f"line {number}: not an object")
        missing = [k for k, kind in fields.items() if not isinstance(row.get(k), kind)]
        if also_missing is not None:
            missing += also_missing(row)
        if missing:
            raise ValidationError("data", f"line {number}: needs {missing}")
        rows.append(row)
    return rows
