"""Log redaction: a filter that sanitizes each record before any handler sees it.

Filters on a *logger* do not run for records propagated from child loggers, so
:func:`install_log_redaction` also attaches the filter to the logger's handlers;
handlers added later need ``handler.addFilter(filter)`` with the returned filter.
"""

from __future__ import annotations

import logging
import traceback

from memstrata.gateway.sanitizer import Sanitizer

LOG_LOCATION = "log"


class RedactingFilter(logging.Filter):
    """Replaces a record's message, args, exception and stack text with sanitized text.

    The message is rendered first (``msg % args``), because a secret can arrive
    in either half; args are then cleared so no formatter renders them again.
    """

    def __init__(self, sanitizer: Sanitizer, *, location: str = LOG_LOCATION) -> None:
        super().__init__()
        self._sanitizer = sanitizer
        self._location = location

    def _clean(self, text: str) -> str:
        """``text`` redacted; if the redaction itself fails (its audit sink full or
        gone), the text is withheld: a log call never raises into the caller's work
        (a read on a full disk), and never writes what it could not redact."""
        try:
            return self._sanitizer.text(text, location=self._location)
        except Exception as exc:
            return f"[log text withheld: redaction failed: {type(exc).__name__}]"

    def filter(self, record: logging.LogRecord) -> bool:
        """Sanitize ``record`` in place; never drops it."""
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not let raw args through
            message = f"{record.msg!s} {record.args!r}"
        record.msg = self._clean(message)
        record.args = None
        if record.exc_info is not None and record.exc_info[0] is not None:
            rendered = record.exc_text or "".join(traceback.format_exception(*record.exc_info))
            record.exc_text = self._clean(rendered.rstrip("\n"))
            # Formatters re-render exc_info when present; drop it so only the
            # sanitized exc_text is ever written.
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self._clean(record.stack_info)
        return True


def install_log_redaction(
    logger: logging.Logger | None = None, *, sanitizer: Sanitizer | None = None
) -> RedactingFilter:
    """Attach one :class:`RedactingFilter` to ``logger`` (root by default) and its handlers.

    Installing twice is harmless: an existing filter is reused, not stacked.
    """
    target = logger if logger is not None else logging.getLogger()
    existing = next((f for f in target.filters if isinstance(f, RedactingFilter)), None)
    redactor = existing or RedactingFilter(sanitizer if sanitizer is not None else Sanitizer())
    if existing is None:
        target.addFilter(redactor)
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(redactor)
    return redactor


_FACTORY_MARK = "_memstrata_redacting_factory"


def install_global_log_redaction(sanitizer: Sanitizer) -> None:
    """Sanitize every log record of the process at creation, whatever logger or handler.

    Filters only cover the handlers that exist when they are attached (pytest's
    capture handler, a handler an application adds later, a child logger's own
    handler all escape them); the record factory runs for every record, so this is
    what makes "no secret in any log line" hold. Installing twice keeps one wrapper.
    """
    current = logging.getLogRecordFactory()
    inner = (
        getattr(current, "__wrapped__", current)
        if getattr(current, _FACTORY_MARK, False)
        else current
    )
    redactor = RedactingFilter(sanitizer)

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = inner(*args, **kwargs)
        redactor.filter(record)
        return record

    setattr(factory, _FACTORY_MARK, True)
    factory.__wrapped__ = inner  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
