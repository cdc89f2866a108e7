"""Deep-freeze JSON-like values so bundles and results stay immutable."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

# Exact types checked first: most values are scalars, plain dicts or lists, and an
# ``isinstance`` against the Mapping ABC costs ~10x a type lookup (every L3 write
# freezes its payload, and the engine adapter thaws it again).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """dicts -> read-only mappings, lists -> tuples, recursively."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or isinstance(value, Mapping):
        return MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, set | frozenset):
        return tuple(sorted(freeze(v) for v in value))
    return value


def thaw(value: Any) -> Any:
    """The inverse of :func:`freeze`: plain dicts and lists, ready for ``json.dumps``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is MappingProxyType or kind is dict or isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if kind is tuple or kind is list or isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value
