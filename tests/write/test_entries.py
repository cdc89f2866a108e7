"""Pure rules of the write queue: validation, hashing, codecs, stream ids (no server)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.crc import key_slot

from memstrata.errors import ValidationError
from memstrata.write.entries import (
    MAX_PAYLOAD_BYTES,
    MalformedEntryError,
    QueueKeys,
    content_hash,
    decode_entry,
    encode_entry,
    next_stream_id,
    parse_stream_id,
    safe_trim_floor,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_all_keys_share_one_cluster_slot() -> None:
    keys = QueueKeys("memories")
    assert keys.stream == "mq:{memories}:stream"
    slots = {key_slot(k.encode()) for k in (keys.stream, keys.done, keys.dead)}
    assert len(slots) == 1


@pytest.mark.parametrize("name", ["", "a{b}", "a:b", "a b", 7])
def test_queue_name_is_validated(name: Any) -> None:
    with pytest.raises(ValidationError) as info:
        QueueKeys(name)
    assert info.value.field == "name"


@pytest.mark.parametrize("kind", ["", "has space", None, 3, "x" * 200])
def test_bad_kind_names_the_field(kind: Any) -> None:
    with pytest.raises(ValidationError) as info:
        encode_entry(kind, {"a": 1})
    assert info.value.field == "kind"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ([1, 2], "payload"),
        ("text", "payload"),
        ({"a": {1, 2}}, "payload.a"),
        ({"a": [1, object()]}, "payload.a[1]"),
        ({"a": {"b": math.nan}}, "payload.a.b"),
        ({"a": math.inf}, "payload.a"),
        ({1: "x"}, "payload"),
        ({"a": b"bytes"}, "payload.a"),
    ],
)
def test_bad_payload_names_the_offending_path(payload: Any, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        encode_entry("observe", payload)
    assert info.value.field == field


def test_too_deep_payload_is_a_validation_error_not_a_recursion_error() -> None:
    payload: dict[str, Any] = {}
    node = payload
    for _ in range(100):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValidationError):
        encode_entry("observe", payload)


def test_payload_size_limit_is_exact() -> None:
    overhead = len(json.dumps({"t": ""}, separators=(",", ":")))
    fits = {"t": "a" * (MAX_PAYLOAD_BYTES - overhead)}
    assert len(encode_entry("observe", fits)["payload"].encode()) == MAX_PAYLOAD_BYTES
    with pytest.raises(ValidationError) as info:
        encode_entry("observe", {"t": "a" * (MAX_PAYLOAD_BYTES - overhead + 1)})
    assert info.value.field == "payload"
    assert str(MAX_PAYLOAD_BYTES) in info.value.reason


def test_size_limit_counts_utf8_bytes_not_characters() -> None:
    # 3 bytes per character: 100k characters are ~300 KB.
    with pytest.raises(ValidationError):
        encode_entry("observe", {"t": "记" * 100_000})


def test_hash_ignores_key_order_but_not_kind_or_values() -> None:
    a = encode_entry("observe", {"x": 1, "y": [1, 2]})
    b = encode_entry("observe", {"y": [1, 2], "x": 1})
    assert a["content_hash"] == b["content_hash"] == content_hash("observe", {"y": [1, 2], "x": 1})
    assert encode_entry("remember", {"x": 1, "y": [1, 2]})["content_hash"] != a["content_hash"]
    assert encode_entry("observe", {"x": 2, "y": [1, 2]})["content_hash"] != a["content_hash"]


@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_encode_decode_round_trip(payload: dict[str, Any]) -> None:
    fields = encode_entry("observe", payload)
    entry = decode_entry("1-0", fields, 3)
    assert entry.kind == "observe"
    assert entry.deliveries == 3
    assert entry.content_hash == fields["content_hash"]
    assert json.loads(fields["payload"]) == json.loads(json.dumps(payload))


def test_decoded_payload_is_read_only() -> None:
    entry = decode_entry("1-0", encode_entry("observe", {"a": [1]}), 1)
    with pytest.raises(TypeError):
        entry.payload["a"] = 2  # type: ignore[index]
    assert entry.payload["a"] == (1,)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda f: f.update(payload='{"a":2}'),  # hash no longer matches
        lambda f: f.update(payload="not json"),
        lambda f: f.update(payload="[1]"),
        lambda f: f.update(v="99"),
        lambda f: f.pop("kind"),
    ],
)
def test_untrustworthy_entries_are_malformed(mutate: Any) -> None:
    fields = encode_entry("observe", {"a": 1})
    mutate(fields)
    with pytest.raises(MalformedEntryError):
        decode_entry("1-0", fields, 1)


def test_stream_ids_compare_numerically() -> None:
    assert parse_stream_id("10-0") > parse_stream_id("9-5")
    assert parse_stream_id("5-10") > parse_stream_id("5-9")
    assert next_stream_id((5, 9)) == (5, 10)
    with pytest.raises(ValueError):
        parse_stream_id("abc")


def test_trim_floor_keeps_undelivered_and_pending_entries() -> None:
    # Nothing delivered yet: the floor is above 0-0, so every real entry is kept.
    assert safe_trim_floor((0, 0), None) == (0, 1)
    # Delivered up to 10-3, nothing pending: everything up to 10-3 may go.
    assert safe_trim_floor((10, 3), None) == (10, 4)
    # An older entry is still pending: it and everything after it stay.
    assert safe_trim_floor((10, 3), (7, 0)) == (7, 0)
