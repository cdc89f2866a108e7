"""Every secret sample is redacted with the right kind, in every context; ordinary text is not."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from gateway_samples import (
    CN_ID_1,
    JWT,
    ORDINARY_TEXTS,
    SECRET_SAMPLES,
    Sample,
    cn_id_complete,
    luhn_complete,
    luhn_ok,
)

from memstrata.gateway import (
    CREDENTIAL_KINDS,
    PII_KINDS,
    Kind,
    Sanitizer,
    find_matches,
    placeholder,
)
from memstrata.gateway.checks import bank_card_valid, cn_id_valid, luhn_valid

CONTEXTS: dict[str, Callable[[str], str]] = {
    "bare": lambda s: s,
    "sentence": lambda s: f"Please use {s} for the request.",
    "json": lambda s: json.dumps({"note": s, "n": 1}, ensure_ascii=False),
    "query": lambda s: f"https://api.example.com/v1/items?ref=abc&v={s}&page=2",
    "chinese": lambda s: f"请注意：{s}，不要外传。",
}


@pytest.fixture(scope="module")
def sanitizer() -> Sanitizer:
    return Sanitizer()


def test_tables_are_large_enough() -> None:
    assert len(SECRET_SAMPLES) >= 60
    assert len(ORDINARY_TEXTS) >= 60
    assert len(set(ORDINARY_TEXTS)) == len(ORDINARY_TEXTS)
    # Every detectable kind is represented in the secret table.
    detectable = {k for k in Kind if k is not Kind.FIELD}
    assert {s.kind for s in SECRET_SAMPLES} == detectable


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("sample", SECRET_SAMPLES, ids=lambda s: s.id)
def test_secret_redacted_in_context(sanitizer: Sanitizer, sample: Sample, context: str) -> None:
    text = CONTEXTS[context](sample.text)
    result = sanitizer.sanitize_text(text, location="test")
    assert sample.secret not in result.text
    assert placeholder(sample.kind) in result.text
    assert sample.kind in {r.kind for r in result.redactions}
    if context == "json":
        # Replacements inside a JSON document keep it parseable.
        json.loads(result.text)


@pytest.mark.parametrize("sample", SECRET_SAMPLES, ids=lambda s: s.id)
def test_secret_redacted_inside_json_value(sanitizer: Sanitizer, sample: Sample) -> None:
    result = sanitizer.sanitize_value({"note": sample.text, "items": [sample.text]}, location="t")
    dumped = json.dumps(result.value, ensure_ascii=False)
    assert sample.secret not in dumped
    assert {r.field_path for r in result.redactions} >= {"$.note", "$.items[0]"}


@pytest.mark.parametrize("sample", SECRET_SAMPLES, ids=lambda s: s.id)
def test_sanitizing_a_sample_is_idempotent(sanitizer: Sanitizer, sample: Sample) -> None:
    once = sanitizer.text(f"x {sample.text} y", location="t")
    assert sanitizer.sanitize_text(once, location="t").text == once
    assert not find_matches(once)


@pytest.mark.parametrize("text", ORDINARY_TEXTS)
def test_ordinary_text_unchanged(sanitizer: Sanitizer, text: str) -> None:
    result = sanitizer.sanitize_text(text, location="test")
    assert result.text == text
    assert result.redactions == ()


@pytest.mark.parametrize("text", ORDINARY_TEXTS)
def test_ordinary_text_unchanged_in_json(sanitizer: Sanitizer, text: str) -> None:
    doc = {"a": text, "list": [text, 1, 2.5, None, True]}
    assert sanitizer.value(doc, location="test") == doc


def test_numeric_decoys_really_fail_their_checks() -> None:
    # Guards the ordinary table itself: these must be invalid by an independent check.
    assert not luhn_ok("1234567890123456")
    assert not luhn_ok("4111111111111112")
    assert cn_id_complete(CN_ID_1[:17]) == CN_ID_1
    assert CN_ID_1[:-1] + "1" != CN_ID_1


def test_checks_agree_with_independent_implementation() -> None:
    for number in ("4111111111111111", "378282246310005", "6011111111111117", "79927398713"):
        assert luhn_valid(number) and luhn_ok(number)
    for number in ("4111111111111112", "1234567812345678", "79927398710"):
        assert not luhn_valid(number) and not luhn_ok(number)
    assert not luhn_valid("") and not luhn_valid("12a4")
    assert bank_card_valid("4111-1111-1111-1111")
    # Luhn-valid but no issuer uses prefix 1: an order number, not a card.
    order_no = luhn_complete("100000000000000")
    assert luhn_ok(order_no) and not bank_card_valid(order_no)
    assert cn_id_valid(CN_ID_1) and cn_id_valid(CN_ID_1.lower())
    assert not cn_id_valid(cn_id_complete("11010519490231002")[:-1] + "0")
    assert not cn_id_valid(cn_id_complete("11010518000101002"))  # born before 1900
    assert not cn_id_valid(cn_id_complete("11010519490230002"))  # 30 February


def test_invalid_birth_date_is_not_an_id(sanitizer: Sanitizer) -> None:
    bad_date = cn_id_complete("11010519490230002")  # right checksum, 30 February
    assert sanitizer.text(f"编号 {bad_date}", location="t") == f"编号 {bad_date}"


def test_kind_sets_partition_the_enum() -> None:
    assert not CREDENTIAL_KINDS & PII_KINDS
    assert CREDENTIAL_KINDS | PII_KINDS | {Kind.FIELD} == set(Kind)


def test_specific_token_wins_over_field_name(sanitizer: Sanitizer) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert sanitizer.text(f"token={token}", location="t") == "token=[REDACTED:github_token]"
    assert sanitizer.text(f"access_token={JWT}&x=1", location="t") == (
        "access_token=[REDACTED:jwt]&x=1"
    )


def test_credential_wins_over_pii_in_overlap(sanitizer: Sanitizer) -> None:
    result = sanitizer.sanitize_text("password=alice@example.com", location="t")
    assert result.text == "password=[REDACTED:password]"
    assert [r.kind for r in result.redactions] == [Kind.PASSWORD]


def test_overlapping_matches_merge_into_one_span(sanitizer: Sanitizer) -> None:
    # The URL password and the "email" it seems to form overlap: nothing of either leaks.
    result = sanitizer.sanitize_text("dsn https://u:pw9@db.example.com/x", location="t")
    assert "pw9" not in result.text and "db.example.com" not in result.text
    assert len(result.redactions) == 1
    assert result.redactions[0].kind is Kind.PASSWORD


def test_rejected_candidate_does_not_hide_a_real_one(sanitizer: Sanitizer) -> None:
    # "2024 4111 1111 1111" fails Luhn; the real card starts inside it.
    out = sanitizer.text("2024 4111 1111 1111 1111", location="t")
    assert out == "2024 [REDACTED:bank_card]"
    out = sanitizer.text("?v=password=hunter2&page=2", location="t")
    assert out == "?v=password=[REDACTED:password]&page=2"


def test_redaction_offsets_point_into_the_input(sanitizer: Sanitizer) -> None:
    text = "mail alice@example.com or call 13812345678."
    result = sanitizer.sanitize_text(text, location="t")
    spans = [text[r.offset : r.offset + r.length] for r in result.redactions]
    assert spans == ["alice@example.com", "13812345678"]
    assert [r.field_path for r in result.redactions] == ["$", "$"]
    assert result.changed


def test_bare_json_number_under_secret_key_stays_valid_json(sanitizer: Sanitizer) -> None:
    out = sanitizer.text('{"pin_password": 123456, "ok": true}', location="t")
    assert json.loads(out) == {"pin_password": "[REDACTED:password]", "ok": True}


def test_truncated_private_key_redacted_to_end(sanitizer: Sanitizer) -> None:
    text = "dump: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    assert sanitizer.text(text, location="t") == "dump: [REDACTED:private_key]"


def test_existing_placeholder_inside_a_value_does_not_shield_the_rest(
    sanitizer: Sanitizer,
) -> None:
    out = sanitizer.text('password="abc [REDACTED:secret] def"', location="t")
    assert out == 'password="[REDACTED:password]"'


def test_chinese_labels_only_take_ascii_values(sanitizer: Sanitizer) -> None:
    assert sanitizer.text("密码：abc123，请妥善保管", location="t") == (
        "密码：[REDACTED:password]，请妥善保管"
    )
    assert sanitizer.text("手机号13812345678，邮箱 a@b.cn", location="t") == (
        "手机号[REDACTED:phone]，邮箱 [REDACTED:email]"
    )


def test_long_field_names_still_count(sanitizer: Sanitizer) -> None:
    name = "x" * 100 + "_db_password"
    assert sanitizer.text(f"{name}=hunter2", location="t") == f"{name}=[REDACTED:password]"


def test_python_repr_and_env_styles(sanitizer: Sanitizer) -> None:
    assert sanitizer.text("{'password': 'hunter2', 'user': 'bob'}", location="t") == (
        "{'password': '[REDACTED:password]', 'user': 'bob'}"
    )
    assert sanitizer.text("export GITHUB_TOKEN=abc123\n", location="t") == (
        "export GITHUB_TOKEN=[REDACTED:secret]\n"
    )


def test_command_line_flags(sanitizer: Sanitizer) -> None:
    assert sanitizer.text("mysql --password hunter2 -h db", location="t") == (
        "mysql --password [REDACTED:password] -h db"
    )
    assert sanitizer.text("cli --api-key 'abc 123' --verbose", location="t") == (
        "cli --api-key '[REDACTED:secret]' --verbose"
    )
    # A flag without a value, and a word that merely follows "password", are left alone.
    for text in ("tool --no-password --verbose", "reset password now"):
        assert sanitizer.text(text, location="t") == text
