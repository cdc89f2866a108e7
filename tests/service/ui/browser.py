"""Headless Chromium for the browser tests, through Playwright's Python API.

The browser is Debian's ``chromium`` (``make install`` installs it where missing);
Playwright only drives it and never downloads one, with the flags of
``memstrata.testing.chromium``. ``MEMSTRATA_UI_SCREENSHOTS=DIR`` saves a screenshot of
every page the walk visits into DIR (docs/ui/ is made that way, see docs/ui.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Page

SCREENSHOTS_VARIABLE = "MEMSTRATA_UI_SCREENSHOTS"


def shot(page: Page, name: str) -> None:
    """A screenshot of ``page`` as ``<name>.png`` when screenshots are asked for."""
    folder = os.environ.get(SCREENSHOTS_VARIABLE)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)
