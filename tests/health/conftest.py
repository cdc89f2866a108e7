"""Fixtures of the health report tests."""

from __future__ import annotations

import pytest
from tests.health.scripted import Script, build_script


@pytest.fixture(scope="session")
def script() -> Script:
    """The scripted 14 days (built once: 20,162 samples)."""
    return build_script()
