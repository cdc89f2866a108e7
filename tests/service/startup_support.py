"""A Valkey the test lets through when it chooses: holds a service's start-up still.

:class:`HeldValkey` is a TCP front of a real embedded Valkey (its own, so the first
start writes ``admin.key``) that accepts connections and forwards nothing until
:meth:`HeldValkey.release`: the service under test is then observably *starting*
for as long as the test needs, with no timing assumption.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path
from types import TracebackType

from memstrata.working import EmbeddedValkey


class HeldValkey:
    def __init__(self, directory: Path) -> None:
        self._valkey = EmbeddedValkey(directory)
        self._released = threading.Event()
        self._closed = threading.Event()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.connections = 0
        self._sockets: list[socket.socket] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> HeldValkey:
        self._valkey.start()
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closed.set()
        self._released.set()
        self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()
        self._valkey.stop()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        self._released.wait()
        if self._closed.is_set():
            client.close()
            return
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect(str(self._valkey.socket_path))
        self._sockets += [client, upstream]
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
