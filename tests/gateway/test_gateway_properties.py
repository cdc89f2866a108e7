"""Property tests: idempotence, no generated secret survives, plain prose is untouched."""

from __future__ import annotations

import json
import string
from datetime import date
from itertools import pairwise
from typing import Any

import pytest
from gateway_samples import SECRET_SAMPLES, cn_id_complete, luhn_complete
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from memstrata.gateway import FieldPolicy, Sanitizer, find_matches

DEFAULT = Sanitizer()
MASKING = Sanitizer(
    FieldPolicy.from_config(
        {"email": "mask", "phone": "mask", "cn_id": "mask", "bank_card": "mask"}
    )
)
ALLOWING = Sanitizer(FieldPolicy.from_config({"email": "allow", "phone": "mask"}))

# Ordinary text: no digits, no '@', no '-'/'_'/'=' glue, and a few CJK characters
# that spell none of the secret labels.
_PLAIN = string.ascii_letters + " .,!?()'\n" + "上下文管理结构记忆长程任务数据的是在"
# Words that legitimately start a detection; random text containing one is not "plain".
_TRIGGERS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "credential",
    "bearer",
    "basic",
    "authorization",
    "akia",
    "asia",
    "aiza",
    "eyj",
    "xox",
    "ghp",
    "gho",
    "ghu",
    "ghs",
    "ghr",
    "begin",
)

_FRAGMENTS = [s.text for s in SECRET_SAMPLES] + [
    "[REDACTED:email]",
    "[REDACTED:",
    "a***@example.com",
    "138****5678",
    "password=",
    '"token": ',
    "?token=",
    "&",
    "=",
    ":",
    '"',
    "'",
    '\\"',
    "@",
    "+86 ",
    "-",
    " ",
    "，",
    "密码：",
    "my password is ",
    "密码改成了",
    ";",
    ",",
    "ORD-2024-000123",
    "v2.13.0",
    "2025-04-01T08:22:00Z",
    "¥1,299.00",
]

_mixed_text = st.lists(
    st.one_of(
        st.sampled_from(_FRAGMENTS),
        st.text(alphabet=string.printable + "密码令牌，。", max_size=12),
        st.from_regex(r"[1-9][0-9 \-]{6,22}", fullmatch=True),
    ),
    max_size=8,
).map("".join)

_secret_body = st.text(alphabet=string.ascii_letters + string.digits, min_size=32, max_size=32)


@settings(max_examples=120, deadline=None)
@given(_mixed_text)
# Regressions found by this test: masking must not expose a second address, and
# a phone number glued to a key is found once the key is gone.
@example("alice@example.comalice@example.com")
@example("sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz12345+8615900001111")
def test_sanitizing_is_idempotent(text: str) -> None:
    for sanitizer in (DEFAULT, MASKING, ALLOWING):
        once = sanitizer.text(text, location="prop")
        assert sanitizer.text(once, location="prop") == once


@settings(max_examples=80, deadline=None)
@given(_mixed_text)
@example("sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz12345+8615900001111")
def test_default_output_has_nothing_left_to_find(text: str) -> None:
    matches = find_matches(text)
    # Spans come sorted, disjoint and non-empty, ready to splice.
    assert all(m.start < m.end for m in matches)
    assert all(a.end <= b.start for a, b in pairwise(matches))
    assert find_matches(DEFAULT.text(text, location="prop")) == []


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    body=_secret_body,
    prefix=st.sampled_from(["sk-", "sk-proj-", "sk_live_", "sk-ant-api03-"]),
)
def test_generated_api_key_never_survives(before: str, after: str, body: str, prefix: str) -> None:
    assume(body not in before + after)  # the surroundings may say what they like
    secret = prefix + body
    text = f"{before} {secret} {after}"
    assert body not in DEFAULT.text(text, location="prop")
    assert body not in json.dumps(DEFAULT.value({"msg": text, "k": [text]}, location="prop"))


@settings(max_examples=80, deadline=None)
@given(
    before=st.text(max_size=30),
    after=st.text(max_size=30),
    body=st.from_regex(r"[0-9]{14}", fullmatch=True),
    sep=st.sampled_from(["", " ", "-"]),
)
def test_generated_card_never_survives(before: str, after: str, body: str, sep: str) -> None:
    card = luhn_complete("4" + body)  # a 16-digit Visa-range number
    shown = sep.join(card[i : i + 4] for i in range(0, 16, 4))
    out = DEFAULT.text(f"{before} {shown} {after}", location="prop")
    assert shown not in out


@settings(max_examples=80, deadline=None)
@given(
    region=st.from_regex(r"[1-6][0-9]{5}", fullmatch=True),
    born=st.dates(
        min_value=date(1930, 1, 1),
        max_value=date(2020, 12, 31),
    ),
    seq=st.from_regex(r"[0-9]{3}", fullmatch=True),
    words=st.text(alphabet="上下文管理结构记忆", max_size=10),
)
def test_generated_cn_id_never_survives(region: str, born: date, seq: str, words: str) -> None:
    number = cn_id_complete(region + born.strftime("%Y%m%d") + seq)
    out = DEFAULT.text(f"{words}身份证{number}{words}", location="prop")
    assert number not in out and "[REDACTED:cn_id]" in out


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=_PLAIN, max_size=200))
def test_plain_text_passes_unchanged(text: str) -> None:
    assume(not any(t in text.lower() for t in _TRIGGERS))
    result = DEFAULT.sanitize_text(text, location="prop")
    assert result.text == text and result.redactions == ()


_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(alphabet=_PLAIN, max_size=20),
)


@settings(max_examples=80, deadline=None)
@given(
    st.recursive(
        _json_leaf,
        lambda kids: st.one_of(
            st.lists(kids, max_size=4),
            st.dictionaries(
                st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6), kids, max_size=4
            ),
        ),
        max_leaves=20,
    )
)
def test_value_without_secrets_round_trips_and_input_is_untouched(value: object) -> None:
    snapshot = json.dumps(value, sort_keys=True)
    result = DEFAULT.sanitize_value(value, location="prop")
    assert json.dumps(value, sort_keys=True) == snapshot  # not mutated
    if not result.redactions:
        assert result.value == value


def test_clean_text_cache_never_skips_a_secret_or_an_audit() -> None:
    from memstrata.gateway import InMemoryAuditLog

    audit = InMemoryAuditLog()
    sanitizer = Sanitizer(audit=audit)
    clean = "order ORD-2024-000123 shipped on 2025-04-01"
    assert sanitizer.text(clean, location="a") == clean
    assert sanitizer.text(clean, location="b") == clean  # served from the clean cache
    dirty = clean + " key sk-proj-Zx81KqLmN0pQrStUvWxYz1234567890abcd"
    for _ in range(2):  # never cached: both passes redact and audit
        assert "sk-proj-" not in sanitizer.text(dirty, location="c")
    assert [e.location for e in audit.events()] == ["c", "c"]


def test_clean_cache_serves_value_leaves_and_never_a_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memstrata.gateway import InMemoryAuditLog
    from memstrata.gateway import sanitizer as sanitizer_module

    scanned: list[str] = []
    real_find = sanitizer_module.find_matches

    def counting_find(text: str) -> Any:
        scanned.append(text)
        return real_find(text)

    monkeypatch.setattr(sanitizer_module, "find_matches", counting_find)
    audit = InMemoryAuditLog()
    sanitizer = Sanitizer(audit=audit)
    unit = {"subject": "user", "value": "lives in Hangzhou", "version": 3}
    for _ in range(3):  # a memory unit's fields pass the gateway at each L3 write
        assert sanitizer.value(unit, location="L3") == unit
    assert sorted(scanned) == sorted(
        ["subject", "value", "version", "user", "lives in Hangzhou", "3"]
    )
    dirty = {**unit, "value": "mail me at ana.lima@example.com"}
    for _ in range(2):  # a leaf with a finding is scanned, redacted and audited every time
        assert "example.com" not in str(sanitizer.value(dirty, location="L3"))
    assert scanned.count("mail me at ana.lima@example.com") == 2
    assert len(audit.events()) == 2
