"""L2's JSON codec: orjson's fast path and the standard library's slow path agree.

canonical_json writes with orjson unless its output holds ``null`` (where orjson
hides NaN) or orjson refuses the value; the standard encoder decides then. These
tests pin that both paths accept, refuse and write the same values, and that what
either writes reads back equal.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
import uuid
from datetime import UTC, date, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import BackendError, ValidationError
from memstrata.working import keys as K
from memstrata.working.values import decode_value, encode_value

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too: orjson refuses those, the slow path writes them
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _reordered(value: Any) -> Any:
    """The same value with every dict's insertion order reversed."""
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


def _slow(value: Any) -> str:
    return K._CANONICAL.encode(value)


@given(JSON_VALUES)
def test_any_json_value_reads_back_equal_and_is_order_independent(value: Any) -> None:
    text = K.canonical_json("value", value)
    assert decode_value("k", text) == value
    assert K.canonical_json("value", _reordered(value)) == text
    assert json.loads(_slow(value)) == value


@given(st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=10), max_size=6))
def test_both_paths_write_the_same_text_without_floats(value: dict[str, Any]) -> None:
    # Floats may be spelled differently (1e-07 / 1e-7); everything else is identical.
    assert K.canonical_json("value", value) == _slow(value)


def test_keys_are_sorted_and_there_are_no_spaces() -> None:
    assert K.canonical_json("v", {"b": 1, "a": {"d": [1, 2], "c": "x y"}}) == (
        '{"a":{"c":"x y","d":[1,2]},"b":1}'
    )


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        math.inf,
        -math.inf,
        {"a": 1, "b": [2, math.nan]},
        {"a": None, "b": math.inf},  # a real null beside it: the slow path decides
        [None, {"x": -math.inf}],
    ],
)
def test_nan_and_infinity_are_refused_on_either_path(bad: Any) -> None:
    with pytest.raises(ValidationError) as err:
        K.canonical_json("fields.reading", bad)
    assert err.value.field == "fields.reading"


class _Colour(enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


class _Mode(enum.StrEnum):
    FAST = "fast"


@dataclasses.dataclass
class _Point:
    x: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (uuid.UUID(int=5), '"00000000-0000-0000-0000-000000000005"'),
        (_Colour.RED, '"red"'),
        (_Level.HIGH, "3"),
        (_Mode.FAST, '"fast"'),
        ((1, 2), "[1,2]"),
        ({1: "a"}, '{"1":"a"}'),  # orjson refuses non-string keys; the slow path writes them
        (2**70, str(2**70)),
    ],
)
def test_values_beyond_plain_json_are_written_the_same_with_or_without_a_null(
    value: Any, expected: str
) -> None:
    assert K.canonical_json("v", value) == expected
    # Beside a null the slow path writes the value: the same text.
    assert K.canonical_json("v", {"a": value, "b": None}) == f'{{"a":{expected},"b":null}}'


@pytest.mark.parametrize(
    "bad",
    [
        datetime(2025, 1, 2, tzinfo=UTC),
        date(2025, 1, 2),
        _Point(1),
        {1, 2},
        b"raw",
        object(),
        {"a": None, "when": date(2025, 1, 2)},
    ],
)
def test_values_that_are_not_json_are_refused_on_either_path(bad: Any) -> None:
    with pytest.raises(ValidationError) as err:
        K.canonical_json("params", bad)
    assert err.value.field == "params"
    assert "JSON-serializable" in str(err.value)


def test_circular_and_too_deep_values_are_refused_not_crashed() -> None:
    loop: list[Any] = []
    loop.append(loop)
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    for bad in (loop, deep):
        with pytest.raises(ValidationError):
            K.canonical_json("value", bad)


def test_integers_beyond_64_bits_round_trip_through_the_store_codec() -> None:
    text = encode_value("value", {"big": 2**80, "small": -(2**70)})
    assert decode_value("k", text) == {"big": 2**80, "small": -(2**70)}


@pytest.mark.parametrize("corrupt", ["{", '{"a": }', "NaN-ish", "[1,]", "\ud800"])
def test_corrupt_stored_json_is_a_backend_error_naming_the_key(corrupt: str) -> None:
    with pytest.raises(BackendError, match=re.escape("wm:{s1}:api:x")):
        decode_value("wm:{s1}:api:x", corrupt)
