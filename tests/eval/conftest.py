"""Shared helpers for the harness tests: data file paths and a LoCoMo subset."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memstrata.testing.synthetic_longmemeval import write as write_synthetic_lme

REPO = Path(__file__).resolve().parents[2]
_IN_SHARED = Path("data") / "locomo" / "locomo10.json"


def _origin_checkout() -> Path | None:
    """The checkout a local clone was made from (``git clone /path/to/repo``)."""
    try:
        url = subprocess.run(
            ["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(url.removeprefix("file://"))
    return path if url and path.is_absolute() else None


def _find_locomo() -> Path:
    # CC BY-NC: read from the shared folder beside the checkout at test time, never
    # copied into the repository: MEMSTRATA_LOCOMO, else ../shared of this checkout,
    # else ../shared of the checkout this one was cloned from.
    if os.environ.get("MEMSTRATA_LOCOMO"):
        return Path(os.environ["MEMSTRATA_LOCOMO"])
    here = REPO.parent / "shared" / _IN_SHARED
    origin = _origin_checkout()
    if here.is_file() or origin is None:
        return here
    return origin.parent / "shared" / _IN_SHARED


LOCOMO = _find_locomo()


def locomo_subset(sessions: int = 2) -> dict[str, Any]:
    """conv-26 cut to its first ``sessions`` sessions and the QAs whose evidence all
    lies inside them (the other session lists and their dates are dropped)."""
    sample = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
    conversation = sample["conversation"]
    kept = {
        key: value
        for key, value in conversation.items()
        if not key.startswith("session_") or int(key.split("_")[1]) <= sessions
    }
    prefixes = tuple(f"D{n}:" for n in range(1, sessions + 1))
    qa = [
        q
        for q in sample["qa"]
        if q["evidence"] and all(e.startswith(prefixes) for e in q["evidence"])
    ]
    return {"sample_id": sample["sample_id"], "conversation": kept, "qa": qa}


@pytest.fixture
def synthetic_lme(tmp_path: Path) -> Path:
    """The hand-written LongMemEval-format data set (6 questions, one abstention),
    written to a file the way a user would pass one."""
    return write_synthetic_lme(tmp_path / "longmemeval_synthetic.json")


@pytest.fixture
def locomo_file() -> Path:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo data not found at {LOCOMO} (CC BY-NC, kept outside the repo)")
    return LOCOMO


@pytest.fixture
def locomo_subset_file(locomo_file: Path, tmp_path: Path) -> Path:
    path = tmp_path / "locomo_subset.json"
    path.write_text(json.dumps([locomo_subset()]), encoding="utf-8")
    return path
