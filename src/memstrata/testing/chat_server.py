"""A scripted OpenAI-compatible chat endpoint on loopback, for tests of every model
client (extraction, decision judgments, agents)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: status, body, headers, and how long to wait first."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def completion(content: str) -> Reply:
    """A 200 chat completion whose assistant message is ``content``."""
    payload = {
        "id": "c1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }
    return Reply(body=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})


class ScriptedServer:
    """ThreadingHTTPServer on 127.0.0.1:0 answering POSTs from a script, in order."""

    def __init__(self, replies: list[Reply]) -> None:
        self._replies = list(replies)
        self._lock = threading.Lock()
        self.received: list[Received] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    server.received.append(Received(self.path, dict(self.headers), body))
                    reply = (
                        server._replies.pop(0) if server._replies else Reply(599, b"script over")
                    )
                time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval keeps shutdown (and so each test) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
