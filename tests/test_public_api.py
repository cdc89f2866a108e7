"""The curated public API: every name in __all__ exists and is documented, every type
in a public engine signature is exported, and every error lives in memstrata.errors."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import typing
from collections.abc import Iterator
from pathlib import Path

import memstrata
from memstrata.engine import ContextEngine
from memstrata.errors import ERROR_CODES, MemstrataError, error_code

PUBLIC_NAMES = [
    "AccessRequest",
    "AuditEvent",
    "AuthContext",
    "AuthenticationError",
    "BackendError",
    "BackendUnavailableError",
    "BudgetError",
    "BudgetShares",
    "BuiltContext",
    "Clock",
    "CompactionTimeoutError",
    "ConfigError",
    "ConflictError",
    "ConsolidationReport",
    "ConsolidationResult",
    "ContextBudget",
    "ContextBundle",
    "ContextEngine",
    "ContextItem",
    "ContextMissError",
    "DatasetError",
    "DeadLetter",
    "Decision",
    "DecisionRates",
    "DiskSpaceError",
    "Document",
    "DocumentFormat",
    "Embedder",
    "EngineParts",
    "Episode",
    "ExtractionError",
    "ExtractionUnavailableError",
    "Extractor",
    "FactHistory",
    "FakeClock",
    "FeedbackReceipt",
    "FeedbackReport",
    "FieldPolicy",
    "FileError",
    "FlushTimeoutError",
    "ForgetJob",
    "ForgetReport",
    "HealthReport",
    "HealthSample",
    "Hit",
    "IngestProgress",
    "IngestReport",
    "IntentRegistry",
    "IntentSpec",
    "IsolationError",
    "L2Need",
    "L3Need",
    "ListedMemory",
    "LongTermSettings",
    "MemoryPage",
    "MemorySettings",
    "MemoryUnit",
    "MemstrataError",
    "MergeReport",
    "MissingContext",
    "ModelError",
    "ModelUnavailableError",
    "Namespace",
    "NotFoundError",
    "PermissionDeniedError",
    "PipelineSettings",
    "Preference",
    "Provenance",
    "RateLimitedError",
    "ReadOnlyError",
    "ReplyCheck",
    "RetrievalResult",
    "RetrievedItem",
    "RiskThresholds",
    "SeriesPoint",
    "SessionState",
    "SessionWorkingMemory",
    "Settings",
    "SharedItem",
    "Slot",
    "StageUnavailableError",
    "StepGraph",
    "StepPolicy",
    "StepSpec",
    "StoreItem",
    "StoredPlan",
    "SystemClock",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "TraceCard",
    "Turn",
    "UnitSource",
    "UnknownIntentError",
    "UserSummary",
    "ValidationError",
    "WorkingItem",
    "WorkingKey",
    "WorkingMemorySettings",
    "WriteNotQueuedError",
    "WriteReceipt",
    "WriteStats",
    "WrittenMemory",
    "__version__",
]


def _modules() -> Iterator[object]:
    yield memstrata
    for info in pkgutil.walk_packages(memstrata.__path__, "memstrata."):
        yield importlib.import_module(info.name)


def _error_classes() -> set[type[MemstrataError]]:
    found: set[type[MemstrataError]] = set()
    for module in _modules():
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, MemstrataError):
                found.add(obj)
    return found


def test_all_is_pinned_and_sorted() -> None:
    assert memstrata.__all__ == PUBLIC_NAMES
    assert sorted(PUBLIC_NAMES) == PUBLIC_NAMES


def test_all_names_exist_and_have_docstrings() -> None:
    for name in memstrata.__all__:
        obj = getattr(memstrata, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"


def _classes_in(hint: object) -> Iterator[type]:
    """The classes a type hint names, through Optional, unions, containers, Callable."""
    if isinstance(hint, type) and not typing.get_args(hint):
        yield hint
        return
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return
    if isinstance(origin, type):
        yield origin
    for arg in typing.get_args(hint):
        if isinstance(arg, list):  # Callable[[A, B], R]
            for item in arg:
                yield from _classes_in(item)
        else:
            yield from _classes_in(arg)


def _public_methods() -> Iterator[tuple[str, object]]:
    for name, member in inspect.getmembers(ContextEngine):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            assert member.fget is not None
            yield name, member.fget
        elif callable(member):
            yield name, member


def test_every_type_in_a_public_engine_signature_is_exported() -> None:
    missing: dict[str, set[str]] = {}
    methods = dict(_public_methods())
    for expected in ("end_session", "ingest_documents", "confirm_knowledge", "set_preference"):
        assert expected in methods
    for name, method in methods.items():
        hints = typing.get_type_hints(method)
        for hint in hints.values():
            for cls in _classes_in(hint):
                if not cls.__module__.startswith("memstrata"):
                    continue  # builtins, the standard library, numpy
                if getattr(memstrata, cls.__name__, None) is not cls:
                    missing.setdefault(name, set()).add(f"{cls.__module__}.{cls.__qualname__}")
    assert missing == {}, f"not exported from memstrata: {missing}"


def test_the_type_walk_sees_through_wrappers() -> None:
    from collections.abc import Callable, Mapping, Sequence

    from memstrata import IntentSpec, MergeReport, SessionState

    hint = Callable[[SessionState | None], Mapping[str, Sequence[tuple[MergeReport, IntentSpec]]]]
    found = set(_classes_in(hint))
    assert {SessionState, MergeReport, IntentSpec} <= found


def test_every_error_class_is_defined_in_memstrata_errors() -> None:
    errors = _error_classes()
    assert len(errors) >= 15
    outside = sorted(
        f"{c.__module__}.{c.__qualname__}" for c in errors if c.__module__ != "memstrata.errors"
    )
    assert outside == []


def test_every_error_class_is_exported_and_has_its_own_transport_codes() -> None:
    for cls in _error_classes():
        assert getattr(memstrata, cls.__name__) is cls, f"{cls.__name__} is not exported"
        assert cls in ERROR_CODES, f"{cls.__name__} has no row in ERROR_CODES"
        # An instance without the class's own arguments: the codes depend on the class.
        probe = type("Probe", (cls,), {"__init__": lambda self: None})()
        assert error_code(probe) is ERROR_CODES[cls]


def test_error_codes_list_the_most_specific_class_first() -> None:
    order = list(ERROR_CODES)
    for i, cls in enumerate(order):
        for later in order[i + 1 :]:
            assert not issubclass(later, cls), (
                f"{later.__name__} comes after its base {cls.__name__}"
            )


def test_error_codes_of_the_common_errors() -> None:
    assert error_code(memstrata.ValidationError("f", "r")).http == 422
    assert error_code(memstrata.ContextMissError("wm:{s}:api:x")).grpc == "NOT_FOUND"
    # An intent name no intent has is a well-formed request for something not there.
    assert error_code(memstrata.UnknownIntentError("x")).http == 404
    assert error_code(memstrata.UnknownIntentError("x")).mcp == -32004
    assert error_code(memstrata.FlushTimeoutError("q", 1.0, 3)).grpc == "DEADLINE_EXCEEDED"
    assert error_code(memstrata.ExtractionUnavailableError("down")).http == 503


def _package_of(module: str) -> str:
    # memstrata.<pkg>.<mod> -> memstrata.<pkg>; memstrata.<mod> and memstrata stay.
    return ".".join(module.split(".")[:2])


def _package_imports() -> dict[str, set[str]]:
    root = Path(memstrata.__file__).parent
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        source = _package_of(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name == "memstrata" or name.startswith("memstrata."):
                    target = _package_of(name)
                    if target != source:
                        edges.setdefault(source, set()).add(target)
    return edges


def test_no_import_cycles_between_packages() -> None:
    # memstrata/__init__ imports from many packages; a module that imported from the
    # top level (or two packages importing each other) would close a cycle.
    edges = _package_imports()
    assert "memstrata.engine" in edges["memstrata"]
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert cycles == []
