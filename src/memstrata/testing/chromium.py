"""Debian's Chromium for the browser tests (the health report's charts, the memory
browser): where it is and the flags it runs with on a machine with no network.

Without the background-networking flags Chromium keeps reaching for Google's hosts,
which this closed network refuses; ``make install-dev`` installs the Debian package."""

from __future__ import annotations

import shutil

CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Every run's flags but ``--headless`` (Playwright adds its own)."""


def find_chromium() -> str:
    """The Chromium binary; an assertion naming the install step when it is missing."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "chromium is missing: run `make install-dev` (or set MEMSTRATA_SKIP_BROWSER=1)"
    return found
