"""Headless Chromium for the browser tests, through Playwright's Python API.

The browser is Debian's ``chromium`` (``make install`` installs it where missing);
Playwright only drives it and never downloads one. The flags are those of
tests/health/test_browser.py. ``MEMSTRATA_UI_SCREENSHOTS=DIR`` saves a screenshot of
every page the walk visits into DIR (docs/ui/ is made that way, see docs/ui.md).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.sync_api import Page

FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
SCREENSHOTS_VARIABLE = "MEMSTRATA_UI_SCREENSHOTS"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "chromium is missing: run `make install` (or set MEMSTRATA_SKIP_BROWSER=1)"
    return found


def shot(page: Page, name: str) -> None:
    """A screenshot of ``page`` as ``<name>.png`` when screenshots are asked for."""
    folder = os.environ.get(SCREENSHOTS_VARIABLE)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)
