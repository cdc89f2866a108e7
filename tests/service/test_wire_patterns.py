"""The wire's patterns are the server checks' own: a value the schema's pattern allows
passes the check, and one it refuses fails it, in Python's regex and pydantic's alike."""

from __future__ import annotations

import sys
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from memstrata.errors import ValidationError
from memstrata.health.report import parse_duration
from memstrata.knowledge.documents import check_document_name
from memstrata.service.auth import check_name
from memstrata.service.wire import Id, Label, Name, Text, Uuid
from memstrata.sharing.items import check_namespace
from memstrata.validation import (
    DOCUMENT_NAME_PATTERN,
    DURATION_PATTERN,
    ID_PATTERN,
    NAME_PATTERN,
    NONBLANK_PATTERN,
    STORE_LABEL_PATTERN,
    UUID_PATTERN,
    check_id,
    check_text,
    is_blank,
)

IDS = TypeAdapter(Id)


def _accepted(adapter: TypeAdapter[str], value: str) -> bool:
    try:
        adapter.validate_python(value)
    except PydanticValidationError:
        return False
    return True


def test_blank_is_what_str_isspace_calls_whitespace() -> None:
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert is_blank(char) == char.isspace(), hex(code)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=140) | st.from_regex(ID_PATTERN, fullmatch=True))
def test_an_id_the_wire_accepts_is_one_check_id_accepts(value: str) -> None:
    try:
        check_id("id", value)
        checked = True
    except ValidationError:
        checked = False
    assert _accepted(IDS, value) == checked


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=50) | st.from_regex(NAME_PATTERN, fullmatch=True))
def test_a_name_the_wire_accepts_is_one_check_name_accepts(value: str) -> None:
    try:
        check_name("agent", value)
        checked = True
    except ValidationError:
        checked = False
    assert _accepted(TypeAdapter(Name), value) == checked


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_text_the_wire_accepts_is_text_check_text_accepts(value: str) -> None:
    try:
        check_text("text", value)
        checked = True
    except ValidationError:
        checked = False
    assert _accepted(TypeAdapter(Text), value) == checked


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20) | st.from_regex(STORE_LABEL_PATTERN, fullmatch=True))
def test_a_label_the_wire_accepts_is_one_the_store_accepts(value: str) -> None:
    try:
        check_namespace("namespace", [value])
        checked = True
    except ValidationError:
        checked = False
    assert _accepted(TypeAdapter(Label), value) == checked


@settings(max_examples=200, deadline=None)
@given(st.from_regex(UUID_PATTERN, fullmatch=True) | st.uuids().map(str))
def test_a_uuid_the_wire_accepts_is_a_uuid(value: str) -> None:
    assert _accepted(TypeAdapter(Uuid), value)
    uuid.UUID(value)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(DOCUMENT_NAME_PATTERN, fullmatch=True).filter(lambda v: len(v) <= 512))
def test_a_document_name_the_pattern_allows_is_accepted(value: str) -> None:
    if ".." not in value.replace("\\", "/").split("/"):  # the one rule it cannot state
        check_document_name("name", value)


def test_the_patterns_read_alike_in_python_and_pydantic() -> None:
    assert NONBLANK_PATTERN.startswith("[^") and ID_PATTERN.startswith("^")
    for value in ["a", "a b", "a@b", "a\n", "\u3000", "x" * 128, "x" * 129, "-a", "Ω"]:
        assert _accepted(IDS, value) == (value != "" and _python_id(value)), value


def _python_id(value: str) -> bool:
    try:
        check_id("id", value)
    except ValidationError:
        return False
    return True


@settings(max_examples=100, deadline=None)
@given(st.from_regex(DURATION_PATTERN, fullmatch=True))
def test_a_duration_the_pattern_allows_is_one_the_report_reads(value: str) -> None:
    assert parse_duration(value).total_seconds() > 0
