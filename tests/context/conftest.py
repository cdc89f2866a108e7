"""Counters shared by the context tests (each encoding is built once per process)."""

from __future__ import annotations

import pytest

from memstrata.context import TiktokenCounter


@pytest.fixture(scope="session")
def o200k() -> TiktokenCounter:
    return TiktokenCounter("o200k_base")


@pytest.fixture(scope="session")
def cl100k() -> TiktokenCounter:
    return TiktokenCounter("cl100k_base")


@pytest.fixture(params=["o200k_base", "cl100k_base"])
def exact(
    request: pytest.FixtureRequest, o200k: TiktokenCounter, cl100k: TiktokenCounter
) -> TiktokenCounter:
    return o200k if request.param == "o200k_base" else cl100k
