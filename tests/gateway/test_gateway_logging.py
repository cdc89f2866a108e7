"""No secret reaches a log handler: message, args, exception text or stack."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from gateway_samples import OPENAI

from memstrata.gateway import InMemoryAuditLog, RedactingFilter, Sanitizer, install_log_redaction

SECRET = OPENAI


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    # These tests are about the filters alone: an engine opened by a module-scoped
    # fixture elsewhere leaves its process-wide redacting record factory behind.
    factory = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)
    logger = logging.getLogger(f"memstrata.test.gateway.{id(object())}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    yield logger, stream, handler
    logger.removeHandler(handler)
    logging.setLogRecordFactory(factory)


def test_args_are_sanitized(captured: tuple[logging.Logger, io.StringIO, logging.Handler]) -> None:
    logger, stream, _ = captured
    install_log_redaction(logger)
    logger.info("key %s for %s", SECRET, "alice@example.com")
    assert stream.getvalue() == "INFO key [REDACTED:api_key] for [REDACTED:email]\n"


def test_exception_text_is_sanitized(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, _ = captured
    install_log_redaction(logger)
    try:
        raise RuntimeError(f"upstream said: invalid api_key: {SECRET}")
    except RuntimeError:
        logger.exception("call failed")
    output = stream.getvalue()
    assert SECRET not in output and SECRET[8:20] not in output
    assert "Traceback" in output and "[REDACTED:api_key]" in output


def test_stack_info_is_sanitized(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, _ = captured
    install_log_redaction(logger)
    # The stack dump quotes this source line, literal key included.
    logger.warning("stack", stack_info=True, extra={"k": "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0"})
    output = stream.getvalue()
    assert "Zz9Yy8Xx7Ww6" not in output
    assert "Stack (most recent call last)" in output and "[REDACTED:api_key]" in output


def test_child_logger_records_are_sanitized_by_the_handler_filter(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, _ = captured
    install_log_redaction(logger)
    child = logger.getChild("child")  # propagates; logger filters alone would miss it
    child.error("password=%s", "hunter2")
    assert stream.getvalue() == "ERROR password=[REDACTED:password]\n"


def test_bad_format_string_does_not_leak_args(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, _ = captured
    install_log_redaction(logger)
    logger.info("no placeholder here", SECRET)
    assert SECRET not in stream.getvalue()


def test_install_is_idempotent_and_uses_the_given_sanitizer(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, handler = captured
    audit = InMemoryAuditLog()
    first = install_log_redaction(logger, sanitizer=Sanitizer(audit=audit))
    second = install_log_redaction(logger)
    assert first is second
    assert sum(isinstance(f, RedactingFilter) for f in logger.filters) == 1
    assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
    logger.info("mail a@b.io")
    assert stream.getvalue() == "INFO mail [REDACTED:email]\n"
    assert [e.location for e in audit.events()] == ["log"]


def test_without_the_filter_the_secret_would_leak(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    # Control: proves the fixture's handler really writes what it is given.
    logger, stream, _ = captured
    logger.info("key %s", SECRET)
    assert SECRET in stream.getvalue()


def test_global_redaction_covers_loggers_and_handlers_added_later() -> None:
    import io

    from memstrata.gateway.logging import install_global_log_redaction

    install_global_log_redaction(Sanitizer())
    install_global_log_redaction(Sanitizer())  # idempotent: one wrapper, not two
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    late = logging.getLogger("someone.elses.library")
    late.addHandler(handler)
    late.propagate = False
    try:
        late.warning("token for %s is %s", "a@b.example.org", SECRET)
        try:
            raise ValueError(SECRET)
        except ValueError:
            late.exception("boom")
    finally:
        late.removeHandler(handler)
    text = stream.getvalue()
    assert SECRET not in text and "a@b.example.org" not in text
    assert "[REDACTED:api_key]" in text and "ValueError" in text
    factory = logging.getLogRecordFactory()
    assert getattr(factory, "__wrapped__", None) is logging.LogRecord


class _FullDiskAudit:
    """An audit sink on a full volume: every append fails as the JSONL log's does."""

    def record(self, event: object) -> None:
        raise OSError(28, "No space left on device")


def test_a_failing_audit_never_raises_from_a_log_call_nor_lets_the_secret_through(
    captured: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, handler = captured
    handler.addFilter(RedactingFilter(Sanitizer(audit=_FullDiskAudit())))
    try:
        logger.warning("key is %s", OPENAI)  # raised OSError into the caller before
        try:
            raise RuntimeError(f"token {OPENAI}")
        except RuntimeError:
            logger.warning("health sample not recorded", exc_info=True)
    finally:
        handler.filters.clear()
    written = stream.getvalue()
    assert OPENAI not in written
    assert written.count("[log text withheld: redaction failed: OSError]") >= 2
