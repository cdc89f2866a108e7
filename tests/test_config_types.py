"""Every setting is type-checked when the settings are loaded (issue 34, "A wrongly typed
setting is accepted and fails later"): the error names the field, the type it wants
and the value given, at load, not as a TypeError at the first read."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.config import (
    LongTermSettings,
    RetrievalSettings,
    Settings,
    load_settings,
    settings_from_dict,
    settings_from_env,
)
from memstrata.errors import ConfigError, ValidationError


def test_a_wrongly_typed_setting_fails_at_load_naming_field_type_and_value(
    tmp_path: Path,
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"longterm": {"low_confidence_cosine": "high"}}))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    message = str(caught.value)
    assert message.startswith("longterm.low_confidence_cosine: ")
    assert "a number" in message and "'high'" in message
    # The service and the CLI read the file through the environment: same error.
    with pytest.raises(ConfigError, match=r"longterm\.low_confidence_cosine"):
        settings_from_env({"MEMSTRATA_SETTINGS": str(path)})


def test_sections_built_in_python_are_checked_too() -> None:
    with pytest.raises(ConfigError, match=r"longterm\.low_confidence_cosine: expected a number"):
        LongTermSettings(low_confidence_cosine="high")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"retrieval\.rerank_weight: expected a number"):
        dataclasses.replace(RetrievalSettings(), rerank_weight="0.5")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^longterm: expected an object"):
        Settings(longterm={"dense_top_n": 5})  # type: ignore[arg-type]
    # An int is a number.
    assert LongTermSettings(low_confidence_cosine=1).low_confidence_cosine == 1


def test_an_unknown_key_is_named_with_the_closest_known_one() -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_dict({"longterm": {"low_confidence_cosin": 0.3}})
    assert str(caught.value) == (
        "longterm.low_confidence_cosin: unknown setting (did you mean 'low_confidence_cosine'?)"
    )
    with pytest.raises(ConfigError, match=r"^retreival: unknown setting \(did you mean 'retr"):
        settings_from_dict({"retreival": {}})
    with pytest.raises(ConfigError, match=r"^longterm\.zzz: unknown setting$"):
        settings_from_dict({"longterm": {"zzz": 1}})


# --- the property: every field, every JSON type it does not take -------------------------


def _fields(cls: type[Any], prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(path, type hint) of every leaf setting under ``cls``."""
    hints = typing.get_type_hints(cls)
    found: list[tuple[tuple[str, ...], Any]] = []
    for item in dataclasses.fields(cls):
        hint = hints[item.name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            found.extend(_fields(hint, (*prefix, item.name)))
        else:
            found.append(((*prefix, item.name), hint))
    return found


FIELDS = _fields(Settings)
_OWN_CHECKS = ("multilingual_knots", "cross_language_tenants")
"""Fields whose own checks take lists too and name the entry at fault."""


def _takes(hint: Any, value: object, *, python: bool = False) -> bool:
    """Whether a settings file's JSON ``value`` has the type ``hint`` wants, by JSON
    type alone (written apart from the checker it tests). ``python``: as a value given
    to a section in Python, where a list is no tuple (a string is read as a path, as
    ``Settings(data_dir=".memstrata")`` writes one)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_takes(a, value, python=python) for a in args)
    if python and origin in (tuple, frozenset):
        return False  # JSON values hold no tuple or frozenset
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint in (str, Path):
        return isinstance(value, str)
    if origin is tuple:
        if not isinstance(value, list):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_takes(args[0], v) for v in value)
        return len(value) == len(args) and all(map(_takes, args, value))
    if origin is frozenset:
        return isinstance(value, list) and all(_takes(args[0], v) for v in value)
    raise AssertionError(f"no JSON rule for {hint}")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


def _nested(path: tuple[str, ...], value: object) -> dict[str, Any]:
    body: Any = value
    for part in reversed(path):
        body = {part: body}
    assert isinstance(body, dict)
    return body


def _names_the_field(message: str, name: str) -> bool:
    return re.match(rf"{re.escape(name)}[:.\[]", message) is not None


@pytest.mark.parametrize("field", FIELDS, ids=lambda f: ".".join(f[0]))
@settings(max_examples=25, deadline=None)
@given(value=JSON)
def test_every_field_refuses_every_wrong_type_at_load(
    field: tuple[tuple[str, ...], Any], value: object
) -> None:
    path, hint = field
    name = ".".join(path)
    try:
        loaded = settings_from_dict(json.loads(json.dumps(_nested(path, value))))
    except ConfigError as exc:  # never another exception: one typed error naming the field
        assert _names_the_field(str(exc), name), (name, str(exc))
        if not _takes(hint, value) and path[-1] not in _OWN_CHECKS:
            assert f"{name}: expected " in str(exc)
        return
    assert _takes(hint, value), f"{name} accepted {value!r}"
    got: Any = loaded
    for part in path:
        got = getattr(got, part)
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(got)
    elif hint is Path or isinstance(got, Path):
        assert got == Path(typing.cast(str, value))
    elif not isinstance(value, list):
        assert got == value


SECTIONS = {
    name: hint
    for name, hint in typing.get_type_hints(Settings).items()
    if isinstance(hint, type) and dataclasses.is_dataclass(hint)
}


@pytest.mark.parametrize(
    "field",
    [f for f in FIELDS if len(f[0]) == 2 and f[0][1] not in _OWN_CHECKS],  # take lists too
    ids=lambda f: ".".join(f[0]),
)
@settings(max_examples=15, deadline=None)
@given(value=JSON)
def test_a_section_built_in_python_refuses_every_wrong_type(
    field: tuple[tuple[str, ...], Any], value: object
) -> None:
    (section, name), hint = field
    try:
        SECTIONS[section](**{name: value})
    except ConfigError as exc:
        assert _names_the_field(str(exc), f"{section}.{name}"), str(exc)
        return
    except ValidationError as exc:  # a range check (memory, pipeline, faults): a right type
        assert exc.field == name and _takes(hint, value, python=True), str(exc)
        return
    assert _takes(hint, value, python=True), f"{section}.{name} took {value!r}"


def test_a_path_setting_given_as_text_is_read_as_a_path() -> None:
    # README: Settings(data_dir=".memstrata"); the type check refused it at first
    from memstrata import Settings

    assert Settings(data_dir=".memstrata").data_dir == Path(".memstrata")  # type: ignore[arg-type]
