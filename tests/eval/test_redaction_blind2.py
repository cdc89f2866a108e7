"""The second blind redaction corpus (blind2): format, coverage, checksums, reproducibility."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "memstrata" / "eval" / "data" / "redaction" / "blind2.jsonl"
GENERATOR = ROOT / "eval_corpus" / "redaction2" / "make_blind2.py"

KINDS = {
    "api_key", "aws_access_key", "aws_secret_key", "github_token", "slack_token",
    "google_api_key", "jwt", "bearer_token", "basic_auth", "private_key", "password",
    "secret", "email", "phone", "cn_id", "bank_card",
}  # fmt: skip
FIELDS = {"id", "split", "lang", "kind", "encoding", "phrasing", "lookalike", "text", "secrets"}
ZW = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
GB_W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]


def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]


def digits_of(value: str) -> str:
    plain = unicodedata.normalize("NFKC", value).translate(ZW)
    return "".join(c for c in plain if c not in " -")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def gb_ok(s: str) -> bool:
    if len(s) != 18 or not s[:17].isdigit():
        return False
    return "10X98765432"[sum(int(a) * w for a, w in zip(s, GB_W, strict=False)) % 11] == s[17]


def test_format_and_ids() -> None:
    data = rows()
    ids = [r["id"] for r in data]
    assert len(ids) == len(set(ids))
    assert ids == [f"blind2-{i:04d}" for i in range(1, len(ids) + 1)]
    for r in data:
        assert set(r) == FIELDS, r["id"]
        assert r["split"] == "blind2"
        assert r["lang"] in {"en", "zh", "mixed"}
        assert r["kind"] in KINDS | {"benign"}
        assert r["encoding"] and r["phrasing"] and r["text"]
        if r["kind"] == "benign":
            assert r["secrets"] == [] and r["lookalike"], r["id"]
        else:
            assert r["lookalike"] == "" and r["secrets"], r["id"]
            for s in r["secrets"]:
                assert s["kind"] in KINDS
                assert s["value"] in r["text"], r["id"]
                assert len(digits_of(s["value"]).replace(".", "")) >= 4


def test_size_and_coverage() -> None:
    data = rows()
    secret = [r for r in data if r["kind"] != "benign"]
    assert len(secret) >= 450
    assert len(data) - len(secret) >= 450
    phrasings: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in secret:
        phrasings[(r["kind"], r["lang"])].add(r["phrasing"])
    for kind in KINDS:
        assert len(phrasings[(kind, "en")]) >= 10, kind
        assert len(phrasings[(kind, "zh")]) >= 10, kind
    encodings = Counter(r["encoding"] for r in secret)
    for enc in ("plain", "fullwidth", "zerowidth", "linebreak", "spacing", "json", "url"):
        assert encodings[enc] >= 5, enc
    assert any("\u5bc6\u78bc" in r["text"] for r in data)  # Traditional Chinese
    nonascii = [
        s["value"]
        for r in secret
        for s in r["secrets"]
        if s["kind"] == "password" and any(ord(c) > 0x7F for c in s["value"])
    ]
    assert len(nonascii) >= 5


def test_checksums() -> None:
    for r in rows():
        for s in r["secrets"]:
            d = digits_of(s["value"])
            if s["kind"] == "bank_card":
                assert d.isdigit() and 13 <= len(d) <= 19 and luhn_ok(d), r["id"]
            elif s["kind"] == "cn_id":
                assert gb_ok(d), r["id"]
            elif s["kind"] == "phone" and not d.startswith("+1"):
                assert d.removeprefix("+86")[:2] in {"13", "15", "16", "17", "18", "19"}


def test_benign_numbers_fail_checksums() -> None:
    for r in rows():
        if r["kind"] != "benign":
            continue
        for run in re.findall(r"\d+", r["text"]):
            if 13 <= len(run) <= 19:
                assert not luhn_ok(run), r["id"]
            if len(run) == 18:
                assert not gb_ok(run), r["id"]
            assert not (len(run) == 11 and run[0] == "1" and run[1] in "3456789"), r["id"]
        # Digits grouped by spaces or dashes (a dashed ISBN, a date) read as one number too.
        for group in re.findall(r"\d[\d -]*\d", r["text"]):
            joined = group.replace(" ", "").replace("-", "")
            if 13 <= len(joined) <= 19:
                assert not luhn_ok(joined), r["id"]
        assert "@" not in r["text"], r["id"]


def test_generator_reproduces_file() -> None:
    proc = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
