"""Private files: the data directory is 0700 and every file memstrata makes in it 0600.

A data directory holds what users said, the audit log, the hashes of the API keys and
the append-only file of the working memory: on a shared machine none of it is anyone
else's business, whatever the process umask says. Files memstrata writes itself are
created 0600; the embedded Valkey runs with umask 077; qdrant-edge (which writes from
inside this process with the process umask) has its directory tree restricted when it
opens, optimizes, purges and closes, and lives in a 0700 directory meanwhile.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Any

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
PRIVATE_UMASK = 0o077
"""The umask of a process memstrata starts (the embedded Valkey)."""


def private_dir(path: Path) -> Path:
    """``path`` created if missing (its parents too) and made 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    os.chmod(path, PRIVATE_DIR_MODE)  # mkdir's mode passes the umask; an old dir keeps its own
    return path


def private_file(path: Path) -> Path:
    """``path`` created empty if missing, and made 0600 either way."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE))
    os.chmod(path, PRIVATE_FILE_MODE)
    return path


def open_private(path: Path, mode: str, **kwargs: Any) -> IO[Any]:
    """``open(path, mode)`` for appending (``a``, ``ab``, ``a+``), creating the file
    0600 when it does not exist."""
    if not mode.startswith("a"):
        raise ValueError(f"open_private appends only, not mode {mode!r}")
    flags = os.O_CREAT | os.O_APPEND | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    return os.fdopen(os.open(path, flags, PRIVATE_FILE_MODE), mode, **kwargs)


def restrict_tree(root: Path) -> None:
    """Every directory under ``root`` (itself included) 0700, every file 0600.

    Symbolic links are left alone; a file that disappears during the walk (a library
    replacing its own) is skipped.
    """
    if not root.is_dir() or root.is_symlink():
        return
    with contextlib.suppress(FileNotFoundError):
        os.chmod(root, PRIVATE_DIR_MODE)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with contextlib.suppress(FileNotFoundError):
                    os.chmod(path, PRIVATE_DIR_MODE)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with contextlib.suppress(FileNotFoundError):
                    os.chmod(path, PRIVATE_FILE_MODE)
