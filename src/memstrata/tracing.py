"""OpenTelemetry spans per pipeline stage, off unless configured.

An engine traces through a :class:`Tracing` of its own (its own
:class:`~opentelemetry.sdk.trace.TracerProvider`, never the process-global one), so
several engines in one process do not mix their spans. ``Settings.tracing`` builds
one (:meth:`Tracing.from_settings`: ``console`` or ``otlp``); tests and services can
hand the engine one with any exporter (:meth:`Tracing.to`).

Code inside the pipeline calls :func:`span`, which finds the tracing of the engine
call it runs in (a context variable the engine's traced methods set, see
:func:`traced`). With none active it returns one shared no-op object: a context
variable read and two empty method calls, about the cost of a function call.

What a span may carry: ids, counts, intent and collection names, timings. Never a
text: span names are constants, string attributes that do not look like an
identifier (an e-mail address, a sentence) are replaced by a hash of them, and an
exception is recorded by its type name only (its message may quote the input).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar, Token
from typing import Any, Concatenate, Final, ParamSpec, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased
from opentelemetry.trace import Status, StatusCode

from memstrata.config import TracingSettings
from memstrata.errors import ConfigError

AttributeValue = str | bool | int | float
"""What a span attribute may hold (no sequences, no mappings: nothing to hide a text in)."""

INSTRUMENTATION_NAME: Final = "memstrata"
ERROR_TYPE: Final = "error.type"
_SAFE_STRING = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/\-]{0,127}")
"""Strings kept as they are in an attribute: identifiers, names. No ``@`` (e-mail
addresses are valid user ids), no space (texts)."""

_RESULT_COUNTS: Final = (
    "items",
    "below_threshold",
    "missing",
    "admitted",
    "dropped",
    "episode_ids",
)
"""Sequences of a traced call's result counted into ``result.<name>`` attributes."""
_RESULT_VALUES: Final = ("queued", "l3_skipped", "total_tokens", "chunks")
"""Scalar fields (bool or int) of a traced call's result copied into ``result.<name>``."""


def safe_attribute(value: object) -> AttributeValue | None:
    """``value`` as a span may carry it: numbers and bools as is, identifier-like
    strings as is, other strings as ``sha256:<16 hex>`` of them; None for anything
    else (left out)."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        if _SAFE_STRING.fullmatch(value):
            return value
        return "sha256:" + hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:16]
    return None


def _safe_attributes(attributes: Mapping[str, object]) -> dict[str, AttributeValue]:
    safe: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        converted = safe_attribute(value)
        if converted is not None:
            safe[key] = converted
    return safe


class SpanScope(Protocol):
    """What ``with span(...) as s`` gives: ``s.set(name=value, ...)`` adds attributes
    (through :func:`safe_attribute`); a no-op when tracing is off."""

    def set(self, **attributes: object) -> None: ...

    def __enter__(self) -> SpanScope: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None: ...


class _NoopSpan:
    """The one object :func:`span` returns while tracing is off."""

    __slots__ = ()

    def set(self, **attributes: object) -> None:
        return None

    def __enter__(self) -> _NoopSpan:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        return None


NOOP_SPAN: Final = _NoopSpan()


class _LiveSpan:
    """One recording span, current (the parent of spans opened inside) while entered."""

    __slots__ = ("_attributes", "_name", "_span", "_token", "_tracer")

    def __init__(
        self, tracer: trace.Tracer, name: str, attributes: dict[str, AttributeValue]
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._attributes = attributes
        self._span: trace.Span | None = None
        self._token: Token[otel_context.Context] | None = None

    def set(self, **attributes: object) -> None:
        if self._span is not None:
            self._span.set_attributes(_safe_attributes(attributes))
        else:
            self._attributes.update(_safe_attributes(attributes))

    def __enter__(self) -> _LiveSpan:
        # Exceptions are not recorded by the SDK: its event and status would hold the
        # message, which may quote the input. __exit__ records the type name only.
        self._span = self._tracer.start_span(
            self._name,
            attributes=self._attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        span = self._span
        if span is None:
            return
        if exc_type is not None:
            span.set_attribute(ERROR_TYPE, exc_type.__name__)
            span.set_status(Status(StatusCode.ERROR, exc_type.__name__))
        if self._token is not None:
            otel_context.detach(self._token)
        span.end()
        self._span = self._token = None


_ACTIVE: ContextVar[Tracing | None] = ContextVar("memstrata_tracing", default=None)


class _Activation:
    """Makes a :class:`Tracing` the one :func:`span` uses, for a ``with`` block."""

    __slots__ = ("_token", "_tracing")

    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing
        self._token: Token[Tracing | None] | None = None

    def __enter__(self) -> None:
        self._token = _ACTIVE.set(self._tracing)

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        if self._token is not None:
            _ACTIVE.reset(self._token)
            self._token = None


class _NoActivation:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        return None


_NO_ACTIVATION: Final = _NoActivation()


class Tracing:
    """One engine's tracer: a TracerProvider of its own and what exports its spans."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION_NAME)

    @classmethod
    def to(
        cls,
        *exporters: SpanExporter,
        batch: bool = False,
        service_name: str = "memstrata",
        shutdown_on_exit: bool = False,
    ) -> Tracing:
        """Tracing whose spans go to ``exporters``: each span as it ends (the default,
        e.g. an in-memory exporter in tests), or in batches from a background thread."""
        processors: list[SpanProcessor] = [
            BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
            for exporter in exporters
        ]
        return cls.of(*processors, service_name=service_name, shutdown_on_exit=shutdown_on_exit)

    @classmethod
    def of(
        cls,
        *processors: SpanProcessor,
        service_name: str = "memstrata",
        shutdown_on_exit: bool = False,
    ) -> Tracing:
        """Tracing whose finished spans go to ``processors`` (``SimpleSpanProcessor`` or
        ``BatchSpanProcessor`` around an exporter), in a provider of its own."""
        provider = TracerProvider(
            sampler=ParentBased(ALWAYS_ON),
            resource=Resource({"service.name": service_name}),
            shutdown_on_exit=shutdown_on_exit,
        )
        for processor in processors:
            provider.add_span_processor(processor)
        return cls(provider)

    @classmethod
    def from_settings(cls, settings: TracingSettings) -> Tracing | None:
        """The tracing ``settings`` asks for; None when it is off (``exporter: none``)."""
        if settings.exporter == "none":
            return None
        if settings.exporter == "console":
            exporter: SpanExporter = ConsoleSpanExporter(service_name=settings.service_name)
        else:
            exporter = _otlp_exporter()
        return cls.to(
            exporter, batch=True, service_name=settings.service_name, shutdown_on_exit=True
        )

    @property
    def provider(self) -> TracerProvider:
        """The provider (to add span processors, or to flush)."""
        return self._provider

    def activate(self) -> _Activation:
        """``with tracing.activate():`` :func:`span` calls inside trace here."""
        return _Activation(self)

    def span(self, name: str, attributes: Mapping[str, object] | None = None) -> _LiveSpan:
        """A span of this tracing (current while its ``with`` block runs)."""
        return _LiveSpan(self._tracer, name, _safe_attributes(attributes or {}))

    def finished_span(
        self, name: str, start_ns: int, end_ns: int, attributes: Mapping[str, object] | None = None
    ) -> None:
        """Record a span that already happened (epoch nanoseconds), a child of the
        current span: stages timed by laps rather than ``with`` blocks."""
        span = self._tracer.start_span(
            name,
            attributes=_safe_attributes(attributes or {}),
            start_time=start_ns,
            record_exception=False,
            set_status_on_exception=False,
        )
        span.end(end_time=end_ns)

    def force_flush(self, timeout_ms: int = 30_000) -> bool:
        """Export every finished span now; whether it was done in time."""
        return self._provider.force_flush(timeout_ms)

    def shutdown(self) -> None:
        """Export what is left and stop the exporters; idempotent."""
        self._provider.shutdown()


def _otlp_exporter() -> SpanExporter:
    for module in (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    ):
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        exporter: SpanExporter = found.OTLPSpanExporter()
        return exporter
    raise ConfigError(
        "tracing.exporter: 'otlp' needs the opentelemetry-exporter-otlp-proto-http "
        "(or -grpc) package, which is not installed"
    )


def active() -> Tracing | None:
    """The tracing of the engine call running in this context, if any."""
    return _ACTIVE.get()


def activated(tracing: Tracing | None) -> _Activation | _NoActivation:
    """``with activated(t):`` as ``t.activate()``; nothing when ``t`` is None (a
    worker thread runs outside every engine call: its owner activates its tracing)."""
    return _NO_ACTIVATION if tracing is None else _Activation(tracing)


def span(name: str, **attributes: object) -> SpanScope:
    """A span named ``name``, a child of the current one, in the active tracing; the
    shared :data:`NOOP_SPAN` when no tracing is active. ``attributes`` pass
    :func:`safe_attribute` (never give a text: ids, counts, names)."""
    tracing = _ACTIVE.get()
    if tracing is None:
        return NOOP_SPAN
    return tracing.span(name, attributes)


def finished_span(name: str, start_ns: int, end_ns: int, **attributes: object) -> None:
    """:meth:`Tracing.finished_span` in the active tracing; nothing when none is."""
    tracing = _ACTIVE.get()
    if tracing is not None:
        tracing.finished_span(name, start_ns, end_ns, attributes)


def now_ns() -> int:
    """Epoch nanoseconds, as spans take them."""
    return time.time_ns()


P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


class Traced(Protocol):
    """An object whose methods :func:`traced` wraps: it holds its tracing (or None)."""

    _tracing: Tracing | None


S = TypeVar("S", bound=Traced)


def traced(
    name: str, *, fields: Sequence[str] = ()
) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """Decorate a method of an object holding ``_tracing``: each call activates that
    tracing and runs in a span ``name``. ``fields`` names arguments copied into
    attributes (ids and names only; strings pass :func:`safe_attribute`); counts of
    the result's sequences (``items``, ``dropped``...) and its flags (``queued``,
    ``l3_skipped``...) are added as ``result.<field>``. With ``_tracing`` None, the
    method is called directly (an attribute read more than undecorated)."""

    def decorate(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        signature = inspect.signature(method) if fields else None

        @functools.wraps(method)
        def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            tracing = self._tracing
            if tracing is None:
                return method(self, *args, **kwargs)
            attributes: dict[str, object] = {}
            if signature is not None:
                attributes = _arguments(signature, fields, (self, *args), kwargs)
            with tracing.activate(), tracing.span(name, attributes) as current:
                result = method(self, *args, **kwargs)
                current.set(**result_attributes(result))
                return result

        return wrapper

    return decorate


def _arguments(
    signature: inspect.Signature,
    fields: Iterable[str],
    args: tuple[object, ...],
    kwargs: Mapping[str, object],
) -> dict[str, object]:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {}  # the call itself will raise
    bound.apply_defaults()
    return {name: bound.arguments[name] for name in fields if name in bound.arguments}


def result_attributes(result: object) -> dict[str, object]:
    """``result.<name>`` attributes of a call's result: lengths of its known sequences
    and its known bool / int fields (never their content)."""
    found: dict[str, object] = {}
    for name in _RESULT_COUNTS:
        value = getattr(result, name, None)
        if isinstance(value, tuple | list):
            found[f"result.{name}"] = len(value)
    for name in _RESULT_VALUES:
        value = getattr(result, name, None)
        if isinstance(value, bool | int):
            found[f"result.{name}"] = value
    return found


def traced_stage(name: str) -> Callable[[F], F]:
    """Decorate a function (a stage inside an engine call) to run in ``span(name)``."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            tracing = _ACTIVE.get()
            if tracing is None:
                return function(*args, **kwargs)
            with tracing.span(name):
                return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


__all__ = [
    "NOOP_SPAN",
    "AttributeValue",
    "SpanProcessor",
    "SpanScope",
    "Tracing",
    "activated",
    "active",
    "finished_span",
    "now_ns",
    "result_attributes",
    "safe_attribute",
    "span",
    "traced",
    "traced_stage",
]
