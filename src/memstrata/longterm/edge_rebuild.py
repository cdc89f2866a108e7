"""The child process that builds the purged copies of embedded shards.

Run as ``python -m memstrata.longterm.edge_rebuild <dims> <search threads>`` by
:class:`memstrata.longterm.edge_purge.CopyProcess`, never by hand. It obeys the
messages its parent sends on stdin (:func:`memstrata.longterm.edge_purge.send`
frames), each naming the copy it is about by the live shard's path: ``create`` (an
empty shard of the live shard's layout, its named vectors as stored, in the staging
directory), points to upsert, ids
to delete, ``optimize``, ``flush``, and ``seal`` (flush, count, close). ``optimize``,
``flush`` and ``seal`` are answered when done, ``seal`` with the count. A failure
is answered as ``("error", "<type>: <message>")`` and ends the process; so does the
end of stdin (the parent has what it needed, or gave up).

Why a process: qdrant-edge's ``optimize()``, ``flush()``, ``close()`` and ``load()``,
even creating a shard's payload indexes, hold Python's GIL until they return - an
optimize of a large copy for minutes (docs/benchmarks.md, "Forget"). Run in the
serving process they would stop every thread, every tenant's reads, for that long;
here they stop only this one. The parent's GIL is still held by the swap's
``close()`` and ``load()`` of the part, which is why a collection is split into
parts (:mod:`memstrata.longterm.edge_parts`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from memstrata.longterm.edge_purge import WirePoint, engine_point, receive, send
from memstrata.longterm.edge_shards import create_shard, stored_vectors
from memstrata.longterm.points import DENSE_VECTOR

NICENESS = 19
"""How far the copy's priority is lowered: its CPU time must not come from reads."""


def _apply(
    shards: dict[str, qe.EdgeShard], message: tuple[Any, ...], dim: int, threads: int
) -> Any:
    """Carry out one message; what to answer (None: no answer)."""
    op, key = message[0], message[1]
    if op == "create":
        # The copy gets the live shard's named vectors, as stored (a store created
        # before the multilingual vector keeps its layout).
        extra = {n: size for n, size in stored_vectors(Path(key)).items() if n != DENSE_VECTOR}
        shards[key] = create_shard(Path(message[2]), dim, threads, extra)
        return None
    shard = shards[key]
    if op == "upsert":
        points: Sequence[WirePoint] = message[2]
        shard.update(qe.UpdateOperation.upsert_points([engine_point(p) for p in points]))
    elif op == "delete":
        shard.update(qe.UpdateOperation.delete_points(list(message[2])))
    elif op == "optimize":
        shard.optimize()
        return ("ok", None)
    elif op == "flush":
        shard.flush()
        return ("ok", None)
    elif op == "seal":
        shard.flush()
        count = int(shard.count(qe.CountRequest(exact=True)))
        shard.close()
        del shards[key]
        return ("ok", count)
    else:
        raise ValueError(f"unknown message {op!r}")
    return None


def main(argv: Sequence[str]) -> int:
    """Build the copies (see the module docstring); the process's exit status."""
    dim, threads = int(argv[0]), int(argv[1])
    os.nice(NICENESS)
    # The protocol owns the original stdout; anything printed goes to stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    source = sys.stdin.buffer
    shards: dict[str, qe.EdgeShard] = {}
    try:
        while True:
            answer = _apply(shards, receive(source), dim, threads)
            if answer is not None:
                send(out, answer)
    except EOFError:
        return 0  # the parent has what it needed, or gave up (it removes the copies)
    except BaseException as exc:
        send(out, ("error", f"{type(exc).__name__}: {exc}"))
        return 1
    finally:
        out.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
