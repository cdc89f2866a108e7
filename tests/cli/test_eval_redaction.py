"""``memstrata eval redaction``: the scoring contract on small hand-made rows (a leak, a
full-width leak, a benign row altered), through the real gateway and through a
sanitizer that does exactly one wrong thing; a bad split or file is a typed error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.eval.redaction import leaked, norm, score

runner = CliRunner()


def _row(rid: str, text: str, secrets: list[dict[str, str]], **extra: str) -> dict[str, Any]:
    return {
        "id": rid,
        "split": "dev",
        "lang": extra.get("lang", "en"),
        "kind": secrets[0]["kind"] if secrets else "benign",
        "encoding": extra.get("encoding", "plain"),
        "phrasing": "t",
        "lookalike": extra.get("lookalike", ""),
        "text": text,
        "secrets": secrets,
    }


def _pw(value: str) -> dict[str, str]:
    return {"kind": "password", "value": value}


def test_norm_reads_full_width_zero_width_and_separators_as_the_contract_says() -> None:
    assert norm("ＡＢ\u200bc-d.e (f)\n g") == "abcdefg"
    assert leaked("4539 1488 0343 0007", "card 4539-1488-0343-0007") is True
    assert leaked("Quokka5", "ｑｕｏｋｋａ５ was kept") is True
    assert leaked("abc", "abc") is None  # under 4 characters: not scored
    assert leaked("Quokka5", "[REDACTED:password]") is False


def test_a_leak_a_full_width_leak_and_an_altered_benign_row_are_each_counted() -> None:
    rows = [
        _row("s1", "my password is Quokka5Ravine", [_pw("Quokka5Ravine")]),
        _row(
            "s2",
            "mail ａｌｉｃｅ＠ｅｘａｍｐｌｅ.com",
            [{"kind": "email", "value": "ａｌｉｃｅ＠ｅｘａｍｐｌｅ.com"}],
            encoding="fullwidth",
            lang="zh",
        ),
        _row("s3", "call 13812345678", [{"kind": "phone", "value": "13812345678"}]),
        _row("b1", "order ORD-2024-000123 costs $12.50", [], lookalike="order_number"),
        _row("b2", "your password reset link was sent", [], lookalike="password_reset_notice"),
    ]

    def one_wrong(text: str) -> str:
        # Leaks the password (s1), writes the email in ASCII but keeps it (a full-width
        # leak, s2), redacts the phone, and alters the order row (b1).
        if "13812345678" in text:
            return text.replace("13812345678", "[REDACTED:phone]")
        if text.startswith("mail"):
            return "mail alice@example.com"
        if text.startswith("order"):
            return text.replace("$12.50", "[REDACTED:price]")
        return text

    report = score(rows, one_wrong)
    assert report["texts"] == 5 and report["secrets"] == 3
    assert report["recall"] == round(1 / 3, 4)
    assert {leak["id"] for leak in report["leaks"]} == {"s1", "s2"}
    assert report["recall_by_kind"]["phone"]["recall"] == 1.0
    assert report["recall_by_kind"]["email"]["recall"] == 0.0
    assert report["recall_by_encoding"]["fullwidth"] == {"recall": 0.0, "secrets": 1}
    assert report["recall_by_language"]["zh"]["recall"] == 0.0
    assert report["benign"] == 2 and report["false_redaction"] == 0.5
    assert [f["id"] for f in report["false_redactions"]] == ["b1"]
    assert report["false_redaction_by_lookalike"]["order_number"]["false_redaction"] == 1.0
    assert report["false_redaction_by_lookalike"]["password_reset_notice"]["false_redaction"] == 0.0


def test_the_command_runs_the_real_gateway_on_a_file(tmp_path: Path) -> None:
    rows = [
        _row("s1", "my password is Quokka5Ravine", [_pw("Quokka5Ravine")]),
        _row(
            "s2",
            "ｍｙ ｐａｓｓｗｏｒｄ ｉｓ Ｑｕｏｋｋａ５Ｒａｖｉｎｅ",
            [{"kind": "password", "value": "Ｑｕｏｋｋａ５Ｒａｖｉｎｅ"}],
            encoding="fullwidth",
        ),
        _row("b1", "your password reset link was sent", [], lookalike="password_reset_notice"),
    ]
    data = tmp_path / "mine.jsonl"
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["eval", "redaction", "--data", str(data), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["recall"] == 1.0 and report["false_redaction"] == 0.0, report
    tables = runner.invoke(app, ["eval", "redaction", "--data", str(data)])
    assert tables.exit_code == 0 and "recall 1.0000" in tables.stdout


def test_a_bad_split_or_file_is_a_typed_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "redaction", "--split", "train", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["type"] == "ValidationError"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    result = runner.invoke(app, ["eval", "redaction", "--data", str(bad), "--json"])
    assert result.exit_code == 2 and "line 1" in json.loads(result.stdout)["error"]["message"]


def test_a_named_split_whose_file_is_missing_is_a_typed_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # blind2 is a known split before its file ships; any known split without its
    # file must say which split is missing (a stand-in name: blind2 may be installed).
    from memstrata.eval import redaction

    assert "blind2" in redaction.SPLITS
    monkeypatch.setattr(redaction, "SPLITS", (*redaction.SPLITS, "absent9"))
    result = runner.invoke(app, ["eval", "redaction", "--split", "absent9", "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ValidationError"
    assert "absent9" in error["message"] and "not installed" in error["message"]
