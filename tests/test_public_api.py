"""The curated public API: every name in __all__ exists and is documented."""

from __future__ import annotations

import inspect

import memstrata
from memstrata.errors import ERROR_CODES, MemstrataError, error_code


def test_all_names_exist_and_have_docstrings() -> None:
    for name in memstrata.__all__:
        obj = getattr(memstrata, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"


def test_every_public_error_maps_to_transport_codes() -> None:
    errors = [
        getattr(memstrata, n)
        for n in memstrata.__all__
        if inspect.isclass(getattr(memstrata, n))
        and issubclass(getattr(memstrata, n), MemstrataError)
    ]
    assert len(errors) >= 9
    for cls in errors:
        assert any(base in ERROR_CODES for base in cls.__mro__)
    assert error_code(memstrata.ValidationError("f", "r")).http == 422
    assert error_code(memstrata.ContextMissError("wm:{s}:api:x")).grpc == "NOT_FOUND"
    assert error_code(memstrata.UnknownIntentError("x")).mcp == -32602
