"""What the files under a directory hold: the proof a deletion reached the disk."""

from __future__ import annotations

import os
from pathlib import Path


def files_holding(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` whose bytes hold ``needle`` (UTF-8), as paths relative
    to it; sockets are skipped, and a file removed while the walk runs (a server
    replacing its own) is not there to hold anything."""
    raw = needle.encode()
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            try:
                if not path.is_socket() and raw in path.read_bytes():
                    found.append(str(path.relative_to(root)))
            except FileNotFoundError:
                continue
    return sorted(found)
