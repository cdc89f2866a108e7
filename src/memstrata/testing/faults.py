"""TEST DOUBLES that inject faults into L3 and the embedder (docs/service.md, "When L3
is slow or down"): an index whose reads are slow or fail, an embedder that raises or
hangs, and network endpoints a Qdrant client cannot get an answer from.

Each wraps the real thing and counts the calls that reach it, so a test can check
from the user's side that a read answered within its deadline, and from the
backend's side that an open breaker stopped calling it. A hang waits on an event
that :meth:`release` (or leaving a ``with`` block) sets, so no test leaves a thread
sleeping behind it.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.protocol import Embedder
from memstrata.errors import BackendError, BackendUnavailableError
from memstrata.longterm.points import (
    DENSE_VECTOR,
    Filter,
    Point,
    Record,
    ScoredPoint,
    SparseVector,
)
from memstrata.longterm.protocol import VectorIndex

T = TypeVar("T")


class _Fault:
    """What a double does with each call: pass it on, wait ``delay_s`` first, or
    raise; counts the calls that reached it."""

    def __init__(self) -> None:
        self.delay_s = 0.0
        self.failing = False
        self.calls = 0
        self._lock = threading.Lock()
        self._released = threading.Event()

    def slow(self, seconds: float) -> None:
        """Every call waits ``seconds`` (or until :meth:`release`) before it runs."""
        self._released.clear()
        self.delay_s, self.failing = seconds, False

    def fail(self) -> None:
        """Every call raises at once."""
        self.delay_s, self.failing = 0.0, True

    def heal(self) -> None:
        """Calls pass through again (waiting ones are released)."""
        self.delay_s, self.failing = 0.0, False
        self._released.set()

    def release(self) -> None:
        """Let every waiting call go on now (a test's teardown)."""
        self._released.set()

    def __enter__(self) -> _Fault:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.heal()

    def run(self, call: Callable[[], T], error: Callable[[], BaseException]) -> T:
        with self._lock:
            self.calls += 1
        if self.failing:
            raise error()
        if self.delay_s > 0:
            self._released.wait(self.delay_s)
        return call()


class FaultyIndex(_Fault):
    """TEST DOUBLE: a :class:`~memstrata.longterm.protocol.VectorIndex` around a real
    one whose reads (searches, retrieves, scrolls, counts) can be made slow
    (:meth:`slow`) or failing (:meth:`fail`, ``BackendUnavailableError`` as an
    unreachable server gives); writes always pass. ``calls`` counts the reads that
    reached it. It never lets an answer be reused (``answer_generation`` None): each
    search must reach it to be counted."""

    def __init__(self, inner: VectorIndex) -> None:
        super().__init__()
        self.inner = inner

    def _read(self, call: Callable[[], T]) -> T:
        return self.run(call, lambda: BackendUnavailableError("injected: L3 unreachable"))

    # -- reads (faulty) ---------------------------------------------------------------

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        tenant: str,
        *,
        with_vectors: bool = False,
        using: str = DENSE_VECTOR,
    ) -> list[Record]:
        return self._read(
            lambda: self.inner.retrieve(
                collection, ids, tenant, with_vectors=with_vectors, using=using
            )
        )

    def search_dense(
        self,
        collection: str,
        vector: NDArray[np.float32],
        filter: Filter,
        limit: int,
        ef: int | None = None,
        *,
        with_payload: bool = True,
        reuse: bool = True,
        using: str = DENSE_VECTOR,
    ) -> list[ScoredPoint]:
        return self._read(
            lambda: self.inner.search_dense(
                collection,
                vector,
                filter,
                limit,
                ef,
                with_payload=with_payload,
                reuse=reuse,
                using=using,
            )
        )

    def search_sparse(
        self,
        collection: str,
        sparse: SparseVector,
        filter: Filter,
        limit: int,
        *,
        with_payload: bool = True,
        reuse: bool = True,
    ) -> list[ScoredPoint]:
        return self._read(
            lambda: self.inner.search_sparse(
                collection, sparse, filter, limit, with_payload=with_payload, reuse=reuse
            )
        )

    def search_fused(
        self,
        collection: str,
        vector: NDArray[np.float32],
        sparse: SparseVector,
        filter: Filter,
        *,
        dense_limit: int,
        sparse_limit: int,
        limit: int,
        ef: int | None = None,
        reuse: bool = True,
        using: str = DENSE_VECTOR,
    ) -> list[ScoredPoint]:
        return self._read(
            lambda: self.inner.search_fused(
                collection,
                vector,
                sparse,
                filter,
                dense_limit=dense_limit,
                sparse_limit=sparse_limit,
                limit=limit,
                ef=ef,
                reuse=reuse,
                using=using,
            )
        )

    def scroll(
        self, collection: str, filter: Filter, *, limit: int, offset: str | None = None
    ) -> tuple[list[Record], str | None]:
        return self._read(lambda: self.inner.scroll(collection, filter, limit=limit, offset=offset))

    def count(self, collection: str, filter: Filter) -> int:
        return self._read(lambda: self.inner.count(collection, filter))

    def answer_generation(self, collection: str) -> int | None:
        return None

    # -- everything else (passes) -----------------------------------------------------

    def ensure_collections(self, dim: int, vectors: Mapping[str, int] | None = None) -> None:
        self.inner.ensure_collections(dim, vectors)

    def named_vectors(self) -> dict[str, int]:
        return self.inner.named_vectors()

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        self.inner.upsert(collection, points)

    def update_vectors(
        self,
        collection: str,
        tenant: str,
        using: str,
        vectors: Mapping[str, NDArray[np.float32]],
    ) -> None:
        self.inner.update_vectors(collection, tenant, using, vectors)

    def delete(self, collection: str, ids: Sequence[str], tenant: str) -> None:
        self.inner.delete(collection, ids, tenant)

    def delete_where(self, collection: str, filter: Filter) -> int:
        return self.inner.delete_where(collection, filter)

    def purge(self, tenants: Collection[str] | None = None) -> None:
        self.inner.purge(tenants)

    def point_count(self, collection: str) -> int:
        return self.inner.point_count(collection)

    @property
    def shared(self) -> bool:
        return self.inner.shared

    @property
    def remote(self) -> bool:
        """True: it stands for a server that is slow or unreachable, whatever it
        wraps, so the read deadlines apply to it."""
        return True

    def optimize(self) -> None:
        self.inner.optimize()

    def close(self) -> None:
        self.release()
        self.inner.close()


class FaultyEmbedder(_Fault):
    """TEST DOUBLE: an :class:`~memstrata.embed.protocol.Embedder` around a real one
    that can be made to hang (:meth:`slow`) or raise (:meth:`fail`: a
    ``BackendError``, as a model endpoint that fails gives)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__()
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self.run(
            lambda: self.inner.embed(texts), lambda: BackendError("injected: the embedder failed")
        )

    def clear(self) -> None:
        clear: Any = getattr(self.inner, "clear", None)
        if callable(clear):
            clear()


def unused_port() -> int:
    """A loopback port nobody listens on (a connection is refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class SilentServer:
    """TEST DOUBLE: a loopback TCP server that accepts every connection and never
    answers (a Qdrant whose process hangs, a black-holing proxy). ``url`` is its HTTP
    address; use it in a ``with`` block."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port = int(self._socket.getsockname()[1])
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._socket.accept()
            except OSError:
                return
            self.accepted += 1
            self._held.append(conn)  # held open, never read from or written to

    def close(self) -> None:
        """Stop accepting and drop every held connection."""
        self._closed.set()
        self._socket.close()
        for conn in self._held:
            conn.close()

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class UnreachableClient:
    """TEST DOUBLE: a ``qdrant_client.QdrantClient`` (local mode, say) that answers
    every call as an unreachable server does (connection refused) while ``down``;
    set ``down = False`` and it is the wrapped client again (the server came back).
    ``calls`` counts the calls refused."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.down = True
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute) or name == "close":
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                from qdrant_client.http.exceptions import ResponseHandlingException

                self.calls += 1
                raise ResponseHandlingException(ConnectionRefusedError("injected: refused"))
            return attribute(*args, **kwargs)

        return call
