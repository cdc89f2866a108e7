"""Every ```bash and ```python block of README.md and docs/service.md runs as written
(issue 34, "Why": the README's service block failed when pasted - `admin.key` read
before it existed, `memstrata` not on PATH, `build_context` right after `observe`
showing no memory).

Each document becomes one bash script, its blocks in order (a python block through
``python - <<EOF``, so what a bash block exported reaches it), run with ``set -e``
from a clean temporary directory holding only ``.venv``, a link to this interpreter's
environment (what ``make install`` leaves), with its ``bin`` on PATH. Background jobs
(``memstrata serve &``) are stopped at the end. A block that cannot run in CI is
marked with ``<!-- not-run: reason -->`` on the line before it; the reasons are listed
and each must say something.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "docs/service.md")
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
BLOCK_MARK = "::memstrata-doc-block "
PY_END = "MEMSTRATA_DOC_PYTHON_BLOCK"


@dataclass(frozen=True)
class Block:
    where: str
    lang: str
    text: str
    not_run: str | None


def blocks(document: str) -> list[Block]:
    """The ```bash and ```python blocks of ``document``, in order, with their marks."""
    found: list[Block] = []
    lines = (ROOT / document).read_text().splitlines()
    previous = ""
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            if lines[index].strip():
                previous = lines[index].strip()
            index += 1
            continue
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and not lines[index].startswith("```"):
            body.append(lines[index])
            index += 1
        index += 1
        if fence["lang"] in ("bash", "python"):
            mark = NOT_RUN.match(previous)
            found.append(
                Block(
                    f"{document}:{start + 1}",
                    fence["lang"],
                    "\n".join(body),
                    mark["reason"] if mark else None,
                )
            )
        previous = ""
    return found


DOCUMENTED_PORTS = ("8080", "50051", "8090", "8091")
"""The ports the documents serve on; the test serves on free ones instead, so a machine
with something on 8080 (a common development port) still passes."""


def script(document: str, ports: dict[str, str] | None = None) -> str:
    """One bash script running the document's blocks in order, each documented port
    replaced by ``ports``' (nothing else of the text changes)."""
    parts = [
        "set -eo pipefail",
        # Stop what the blocks left running (serve &): SIGTERM, its clean stop (the
        # test then waits for the process group, and kills what is left).
        "trap 'kill $(jobs -p) 2>/dev/null' EXIT",
    ]
    for block in blocks(document):
        if block.not_run is not None:
            continue
        parts.append(f'echo "{BLOCK_MARK}{block.where}" >&2')
        text = block.text
        for documented, free in (ports or {}).items():
            text = re.sub(rf"(?<![0-9]){documented}(?![0-9])", free, text)
        if block.lang == "bash":
            parts.append(text)
        else:
            parts.append(f"python - <<'{PY_END}'\n{text}\n{PY_END}")
    return "\n".join(parts) + "\n"


def test_every_not_run_mark_says_why() -> None:
    reasons = {
        block.where: block.not_run
        for document in DOCUMENTS
        for block in blocks(document)
        if block.not_run is not None
    }
    assert reasons, "no block is marked not-run: the test would not list them"
    for where, reason in reasons.items():
        assert reason and len(reason.split()) >= 3, f"{where}: say why it cannot run"
    print("\n".join(f"not run: {where}: {reason}" for where, reason in reasons.items()))


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_document_runs_as_written(document: str, tmp_path: Path) -> None:
    runnable = [b for b in blocks(document) if b.not_run is None]
    assert runnable, f"{document} has no runnable block"
    work = tmp_path / "clean"
    work.mkdir()
    (work / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    ports = {documented: str(_free_port()) for documented in DOCUMENTED_PORTS}
    (tmp_path / "script.sh").write_text(script(document, ports))
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),  # nothing of the user's (~/.memstrata) is touched
        "MEMSTRATA_MODEL_CACHE": os.environ.get(
            "MEMSTRATA_MODEL_CACHE", str(Path.home() / ".cache" / "memstrata" / "models")
        ),
    }
    for variable in ("MEMSTRATA_URL", "MEMSTRATA_API_KEY", "MEMSTRATA_DATA_DIR", "VIRTUAL_ENV"):
        env.pop(variable, None)
    (tmp_path / "home").mkdir()
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with out_path.open("w") as out_file, err_path.open("w") as err_file:
        process = subprocess.Popen(
            ["bash", str(tmp_path / "script.sh")],
            cwd=work,
            env=env,
            stdout=out_file,
            stderr=err_file,
            text=True,
            start_new_session=True,  # its own process group: nothing outlives the test
        )
        try:
            process.wait(timeout=900)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _stop_group(process.pid)
    out, err = out_path.read_text(), err_path.read_text()
    reached = [line for line in err.splitlines() if line.startswith(BLOCK_MARK)]
    failed_at = reached[-1][len(BLOCK_MARK) :] if reached else "before the first block"
    assert process.returncode == 0, (
        f"{document}: the block at {failed_at} failed (exit {process.returncode})\n"
        f"--- stdout (tail)\n{out[-3000:]}\n--- stderr (tail)\n{err[-3000:]}"
    )
    assert len(reached) == len(runnable)
    if document == "README.md":
        # The service block's build_context, after flush: the observed allergy is among
        # the user's long-term memories (L3), not only in the session's own state.
        built = _built_context(out)
        layers = [item["layer"] for item in built["admitted"]]
        assert "L3" in layers, built["admitted"]
        assert "peanuts" in json.dumps(built["messages"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop_group(group: int) -> None:
    """SIGTERM the script's process group, wait for it to be gone, then SIGKILL it."""
    for sig, patience in ((signal.SIGTERM, 60.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def _built_context(out: str) -> dict[str, Any]:
    """The first build_context answer in ``out`` (curl prints it without a newline)."""
    start = out.find('{"messages"')
    assert start >= 0, out[-3000:]
    document, _ = json.JSONDecoder().raw_decode(out[start:])
    assert isinstance(document, dict)
    return document
