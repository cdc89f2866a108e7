"""What the files under a directory and the keys of a Valkey hold: the proof a deletion
reached the disk, and that a secret never did."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


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
