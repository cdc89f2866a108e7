"""The HTML report in headless Chromium: every chart drawn, the page not blank.

Chromium comes with the project's setup (``make install`` installs the Debian
package where it is missing); the test is skipped only with MEMSTRATA_SKIP_BROWSER=1.
"""

from __future__ import annotations

import os
import struct
import subprocess
import zlib
from collections import Counter
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from tests.health.scripted import Script

from memstrata.health import build_report, render_html
from memstrata.testing.chromium import CHROMIUM_FLAGS, find_chromium

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMSTRATA_SKIP_BROWSER") == "1", reason="MEMSTRATA_SKIP_BROWSER=1"
)

FLAGS = ("--headless", *CHROMIUM_FLAGS)
CHARTS = {
    "l1.sessions",
    "l1.bytes",
    "l2.keys",
    "l2.expired_per_minute",
    "l2.hot_keys",
    "l3.points",
    "l3.low_confidence_queries",
    "decisions.cer_daily",
    "decisions.rates",
}


def _run(tmp: Path, *args: str) -> str:
    done = subprocess.run(
        [find_chromium(), *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class _Charts(HTMLParser):
    """Per chart (data-series): its data marks, i.e. drawn paths and bars."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: dict[str, list[dict[str, str]]] = {}
        self._current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg" and "chart" in a.get("class", "").split():
            self._current = a["data-series"]
            self.marks[self._current] = []
        elif self._current and tag in ("path", "rect") and a.get("class") in ("series", "bar"):
            self.marks[self._current].append({"tag": tag, **a})

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._current = None


def _drawn(mark: dict[str, str]) -> bool:
    if mark["tag"] == "path":
        return len(mark.get("d", "").split()) >= 2 or "L" in mark.get("d", "")
    return float(mark["width"]) > 0 and float(mark["height"]) > 0


def _png_pixels(path: Path) -> np.ndarray:
    """A tiny PNG decoder (8-bit RGB/RGBA, not interlaced): what Chromium writes."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, chunk = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0
    bpp = 3 if color == 2 else 4
    stride = width * bpp
    raw = zlib.decompress(idat)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        kind_byte = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if kind_byte == 0:
            row = line
        elif kind_byte == 1:  # Sub: a running sum per channel
            row = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) % 256
        elif kind_byte == 2:  # Up
            row = (line + prev) % 256
        else:  # Average, Paeth: each byte depends on the one just decoded
            cur = [0] * stride
            up = prev.tolist()
            filt = line.tolist()
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                if kind_byte == 3:
                    cur[i] = (filt[i] + (left + up[i]) // 2) % 256
                else:
                    upleft = up[i - bpp] if i >= bpp else 0
                    p = left + up[i] - upleft
                    pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - upleft)
                    pred = left if pa <= pb and pa <= pc else up[i] if pb <= pc else upleft
                    cur[i] = (filt[i] + pred) % 256
            row = np.array(cur, dtype=np.int64)
        out[y] = row
        prev = row
    return out.reshape(height, width, bpp)[:, :, :3]


def test_every_chart_is_drawn_and_the_page_is_not_blank(script: Script, tmp_path: Path) -> None:
    report = build_report(script.samples, script.now, timedelta(days=7))
    page = tmp_path / "context_health_report.html"
    page.write_text(render_html(report), encoding="utf-8")
    url = page.as_uri()

    charts = _Charts()
    charts.feed(_run(tmp_path, "--dump-dom", url))
    assert set(charts.marks) == CHARTS
    for name, marks in charts.marks.items():
        assert any(_drawn(m) for m in marks), f"chart {name} has no drawn path or bar"
    assert len(charts.marks["l2.hot_keys"]) == 10
    assert len(charts.marks["l3.low_confidence_queries"]) == 5
    assert len(charts.marks["decisions.cer_daily"]) == 14
    assert {m["data-name"] for m in charts.marks["l3.points"]} == {"knowledge", "memories"}

    shot = tmp_path / "report.png"
    _run(tmp_path, f"--screenshot={shot}", "--window-size=1200,2000", url)
    pixels = _png_pixels(shot)
    assert pixels.shape == (2000, 1200, 3)
    colors = Counter(map(tuple, pixels.reshape(-1, 3)[::7].tolist()))
    background, _ = colors.most_common(1)[0]
    ink = np.any(np.abs(pixels.astype(int) - np.array(background)) > 24, axis=2).mean()
    assert ink > 0.03, f"only {ink:.1%} of the page differs from the background"
    blue = np.array([0x25, 0x63, 0xEB])  # the first series' colour: lines and bars drawn
    assert (np.abs(pixels.astype(int) - blue).max(axis=2) < 40).sum() > 500
