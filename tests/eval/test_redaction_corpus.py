"""The redaction corpus: its format, its coverage, the validity of its values, and that the
generators under eval_corpus/redaction reproduce the committed files byte for byte."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "memstrata" / "eval" / "data" / "redaction"
GENERATORS = ROOT / "eval_corpus" / "redaction"
SPLITS = ("dev", "test")

KINDS = {
    "api_key",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "slack_token",
    "google_api_key",
    "jwt",
    "bearer_token",
    "basic_auth",
    "private_key",
    "password",
    "secret",
    "email",
    "phone",
    "cn_id",
    "bank_card",
}
ENCODINGS = {
    "plain",
    "fullwidth",
    "zerowidth",
    "linebreak",
    "spacing",
    "json",
    "url",
    "markdown",
    "env",
    "log",
    "chat",
}
LANGS = {"en", "zh", "mixed"}
FIELDS = {"id", "split", "lang", "kind", "encoding", "phrasing", "lookalike", "text", "secrets"}
ZERO_WIDTH = re.compile("[\u200b-\u200d\u2060\ufeff]")
CJK = re.compile("[\u4e00-\u9fff]")


def load(split: str) -> list[dict[str, Any]]:
    lines = (DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def norm(s: str) -> str:
    """The scorer's normalization (see the format): NFKC, no zero-width, no separators."""
    s = ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", s))
    return re.sub(r"[\s\-.()]", "", s).lower()


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def gb11643_ok(number: str) -> bool:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    if not re.fullmatch(r"\d{17}[\dX]", number):
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], weights, strict=True))
    return "10X98765432"[total % 11] == number[17]


@pytest.fixture(scope="module", params=SPLITS)
def split(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, load(request.param)


def test_rows_follow_the_format(split: tuple[str, list[dict[str, Any]]]) -> None:
    name, rows = split
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert len({r["text"] for r in rows}) == len(rows), "duplicate texts"
    for r in rows:
        assert set(r) == FIELDS, r["id"]
        assert r["split"] == name and r["id"].startswith(f"{name}-")
        assert r["lang"] in LANGS and r["phrasing"] and r["text"]
        if r["lang"] in ("zh", "mixed"):
            assert CJK.search(r["text"]), r["id"]
        if r["lang"] in ("en", "mixed"):
            assert re.search(
                "[A-Za-z]{2}", ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", r["text"]))
            )
        if r["lang"] == "en":
            assert not CJK.search(r["text"]), r["id"]
        if r["kind"] == "benign":
            assert r["secrets"] == [] and r["lookalike"], r["id"]
            continue
        assert r["kind"] in KINDS and r["lookalike"] == "", r["id"]
        assert r["encoding"] in ENCODINGS, r["id"]
        assert r["secrets"] and r["secrets"][0]["kind"] == r["kind"], r["id"]
        for s in r["secrets"]:
            assert set(s) == {"kind", "value"} and s["kind"] in KINDS, r["id"]
            assert s["value"] in r["text"], r["id"]
            assert len(norm(s["value"])) >= 4, r["id"]


def test_sizes_and_coverage(split: tuple[str, list[dict[str, Any]]]) -> None:
    _, rows = split
    secret = [r for r in rows if r["kind"] != "benign"]
    benign = [r for r in rows if r["kind"] == "benign"]
    assert len(secret) >= 400 and len(benign) >= 400
    phrasings: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in secret:
        phrasings[r["kind"], r["lang"]].add(r["phrasing"])
    for kind in KINDS:
        for lang in ("en", "zh"):
            assert len(phrasings[kind, lang]) >= 10, (kind, lang)
    assert any(r["lang"] == "mixed" for r in secret)
    assert any(r["lang"] == "mixed" for r in benign)
    kinds_by_encoding: dict[str, set[str]] = defaultdict(set)
    for r in secret:
        kinds_by_encoding[r["encoding"]].add(r["kind"])
    assert set(kinds_by_encoding) == ENCODINGS
    for encoding in ENCODINGS - {"spacing"}:
        assert len(kinds_by_encoding[encoding]) >= 10, encoding
    assert {"phone", "cn_id", "bank_card"} <= kinds_by_encoding["spacing"]
    lookalikes = Counter(r["lookalike"] for r in benign)
    for must in ("order_number", "tracking_number", "price", "date", "password_reset_notice"):
        assert lookalikes[must] >= 1, must
    assert len(lookalikes) >= 20


def test_values_are_valid_for_their_kind(split: tuple[str, list[dict[str, Any]]]) -> None:
    _, rows = split
    seen: Counter[str] = Counter()
    for r in rows:
        for s in r["secrets"]:
            kind, flat = s["kind"], norm(s["value"])
            plain = ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", s["value"]))
            seen[kind] += 1
            if kind == "bank_card":
                assert flat.isdigit() and 13 <= len(flat) <= 19 and luhn_ok(flat), r["id"]
            elif kind == "cn_id":
                assert gb11643_ok(flat.upper()), r["id"]
                assert 1940 <= int(flat[6:10]) <= 2010, r["id"]
            elif kind == "phone":
                assert re.fullmatch(r"(\+?86)?1[3-9]\d{9}|\+?1?\d{10}|\+?44\d{10}", flat), r["id"]
            elif kind == "email":
                assert re.fullmatch(r"[\w.+-]+@[\w-]+(\.[\w-]+)+", plain), r["id"]
            elif kind == "aws_access_key":
                assert re.fullmatch(r"(akia|asia)[a-z2-7]{16}", flat), r["id"]
            elif kind == "aws_secret_key":
                assert re.fullmatch(r"[A-Za-z0-9+/]{40}", plain), r["id"]
            elif kind == "github_token":
                assert flat.startswith(("ghp_", "gho_", "ghs_", "github_pat_")), r["id"]
            elif kind == "slack_token":
                assert flat.startswith(("xoxb", "xoxp")), r["id"]
            elif kind == "google_api_key":
                assert flat.startswith("aiza"), r["id"]
            elif kind == "jwt":
                assert re.fullmatch(r"eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+", plain), r["id"]
            elif kind == "private_key":
                assert "-----BEGIN" in s["value"] and "PRIVATE KEY-----" in s["value"], r["id"]
    assert set(seen) == KINDS


def test_benign_rows_hold_no_valid_number() -> None:
    """Benign look-alikes stay unambiguous: no Luhn-valid card, no valid ID, no mobile."""
    for name in SPLITS:
        for r in load(name):
            if r["kind"] != "benign":
                continue
            flat = unicodedata.normalize("NFKC", r["text"])
            for run in re.findall(r"\d(?:[ \-]?\d)*", flat):
                digits = re.sub(r"\D", "", run)
                assert not (13 <= len(digits) <= 19 and luhn_ok(digits)), r["id"]
                assert not (len(digits) == 18 and gb11643_ok(digits)), r["id"]
                assert not re.fullmatch(r"1[3-9]\d{9}", digits), r["id"]
            assert not re.search(r"[\w.+-]+@[\w-]+\.[a-z]{2,}", flat), r["id"]
            assert "-----BEGIN" not in flat, r["id"]


def test_splits_are_disjoint() -> None:
    dev, test = load("dev"), load("test")
    assert not {r["phrasing"] for r in dev} & {r["phrasing"] for r in test}
    assert all(r["phrasing"].startswith("d-") for r in dev)
    assert all(r["phrasing"].startswith("t-") for r in test)
    values = {norm(s["value"]) for r in test for s in r["secrets"]}
    assert not values & {norm(s["value"]) for r in dev for s in r["secrets"]}
    assert not {r["text"] for r in dev} & {r["text"] for r in test}


@pytest.mark.parametrize("name", SPLITS)
def test_generators_reproduce_the_files(name: str) -> None:
    out = subprocess.run(
        [sys.executable, str(GENERATORS / f"make_{name}.py")],
        capture_output=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert out == (DATA / f"{name}.jsonl").read_bytes()
