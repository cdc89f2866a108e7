"""Type checks of the settings dataclasses (:mod:`memstrata.config`), field by field.

Each section checks the type of every field as it is built, against the field's own
annotation (a pydantic ``TypeAdapter`` in strict mode: no string read as a number, no
bool as an int; an int is a number). A wrongly typed setting is refused when the
settings are loaded, naming the field, the type it wants and the value given, instead
of failing at the first read that uses it. Ranges and allowed values stay with each
section's own checks, which run after this one.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memstrata.errors import ConfigError

_Check = tuple[str, Any, str, Any]
_ADAPTERS: dict[type[Any], tuple[_Check, ...]] = {}


def _adapters(cls: type[Any]) -> tuple[_Check, ...]:
    """(name, type hint, annotation text, TypeAdapter or the section class) per field,
    built once per class."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = _build_adapters(cls)
    return _ADAPTERS[cls]


def _build_adapters(cls: type[Any]) -> tuple[_Check, ...]:
    from pydantic import TypeAdapter  # here: the CLI's light commands never build settings

    hints = typing.get_type_hints(cls)
    checks: list[_Check] = []
    for item in dataclasses.fields(cls):
        hint = hints[item.name]
        text = item.type if isinstance(item.type, str) else _text(hint)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            checks.append((item.name, hint, text, hint))  # a section: isinstance
        else:
            checks.append((item.name, hint, text, TypeAdapter(hint)))
    return tuple(checks)


def check_field_types(section: object, where: str, *, skip: Iterable[str] = ()) -> None:
    """Raise ConfigError naming the first field of ``section`` (a settings dataclass)
    whose value does not have the field's type. ``where`` prefixes the name
    (``"longterm."``); ``skip``: fields whose own check takes more (lists as tuples)
    and names the entry at fault."""
    from pydantic import ValidationError as TypeMismatch

    skipped = set(skip)
    cls: type[Any] = type(section)
    for name, hint, text, check in _adapters(cls):
        if name in skipped:
            continue
        value = getattr(section, name)
        if isinstance(value, str) and _takes_path(hint):
            # Settings(data_dir=".memstrata"): a path given as text is a path
            object.__setattr__(section, name, Path(value))
            continue
        if isinstance(check, type):
            if isinstance(value, check):
                continue
        else:
            try:
                check.validate_python(value, strict=True)
                continue
            except TypeMismatch:
                pass
        raise ConfigError(
            f"{where}{name}: expected {describe(hint)} ({text}), "
            f"got {_shown(value)} ({type(value).__name__})"
        )


def _takes_path(hint: Any) -> bool:
    return hint is Path or (
        typing.get_origin(hint) in (typing.Union, types.UnionType) and Path in typing.get_args(hint)
    )


def describe(hint: Any) -> str:
    """A type as a settings file spells it: "a number", "a list of strings", ..."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        named = [describe(a) for a in args if a is not type(None)]
        return " or ".join(named) + (" or null" if type(None) in args else "")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_plural(args[0])}"
        return "a list [" + ", ".join(describe(a) for a in args) + "]"
    if origin is frozenset:
        return f"a list of {_plural(args[0])}"
    simple = {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
        Path: "a path",
    }
    if hint in simple:
        return simple[hint]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return "an object"
    return _text(hint)


def _plural(hint: Any) -> str:
    one = describe(hint)
    if one.startswith("a list "):
        return "lists " + one[len("a list ") :]
    for article in ("an ", "a "):
        if one.startswith(article) and " " not in one[len(article) :]:
            return one[len(article) :] + "s"
    return f"items each {one}"


def _text(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def unknown_key(name: str, key: str, known: Iterable[str]) -> ConfigError:
    """The error for a key no field has, with the closest field's name when one is
    close (a typo)."""
    import difflib  # only on this error path

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ConfigError(f"{name}: unknown setting{hint}")
