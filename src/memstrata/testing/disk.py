"""What the files under a directory and the keys of a Valkey hold: the proof a deletion
reached the disk, and that a secret never did."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def files_holding(root: Path, needle: str, *, attempts: int = 5) -> list[str]:
    """Every file under ``root`` whose bytes hold ``needle`` (UTF-8), as paths relative
    to it; sockets are skipped. A server may move its own files while the walk runs (a
    forget's rebuilt shard swapped into place): a file or folder that vanished restarts
    the walk, so a moved file is read where it went."""
    raw = needle.encode()
    for _ in range(attempts):
        vanished: list[OSError] = []
        found = []
        for folder, _, names in os.walk(root, onerror=_noting_vanished(vanished)):
            for name in names:
                path = Path(folder) / name
                try:
                    if not path.is_socket() and raw in path.read_bytes():
                        found.append(str(path.relative_to(root)))
                except FileNotFoundError as exc:
                    vanished.append(exc)
        if not vanished:
            return sorted(found)
        time.sleep(0.2)
    raise AssertionError(f"{root} kept changing during {attempts} walks")


def _noting_vanished(vanished: list[OSError]) -> Callable[[OSError], None]:
    def note(exc: OSError) -> None:
        if isinstance(exc, FileNotFoundError):
            vanished.append(exc)

    return note


def valkey_entries(client: Any) -> dict[str, str]:
    """Every key of a Valkey/Redis (a client with decoded responses) with its value read
    by its type, as JSON text: what a leak check searches."""
    entries = {}
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        value: Any
        if kind == "string":
            value = client.get(key)
        elif kind == "hash":
            value = client.hgetall(key)
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        elif kind == "set":
            value = sorted(client.smembers(key))
        elif kind == "list":
            value = client.lrange(key, 0, -1)
        elif kind == "stream":
            value = client.xrange(key)
        else:
            value = f"<{kind}>"
        entries[key] = json.dumps(value, default=str, ensure_ascii=False)
    return entries


def keys_holding(client: Any, needle: str) -> list[str]:
    """Keys whose name or value (read by type) holds ``needle``."""
    return sorted(k for k, v in valkey_entries(client).items() if needle in f"{k} {v}")
