"""A local fake of an OpenAI-compatible ``/v1/chat/completions`` (whole and streamed),
recording what it received: the upstream of the proxy's tests and of ``memstrata bench
proxy``. No network beyond loopback, no model.

The request's ``model`` picks the behaviour: ``error-<status>`` answers that status with
an OpenAI-shaped error body; ``slow`` waits ``slow_s`` first; ``gated`` (streamed) sends
its first chunk, then waits for :attr:`FakeUpstream.gate` before the rest; anything
else answers :attr:`FakeUpstream.reply`, streamed in :attr:`FakeUpstream.chunks` pieces
when the request says ``stream: true``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_REPLY = "Noted: your flight is on the 14th, gate B7 — have a good trip! ✈"


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    """Lower-case names."""
    body: dict[str, Any]


def error_body(status: int) -> bytes:
    return json.dumps(
        {
            "error": {
                "message": f"fake upstream error {status}",
                "type": "invalid_request_error" if status < 500 else "server_error",
                "param": None,
                "code": f"fake_{status}",
            }
        }
    ).encode()


def completion(model: str, reply: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def stream_events(model: str, reply: str, pieces: int) -> list[bytes]:
    """The SSE events of ``reply`` in ``pieces`` deltas, then ``[DONE]``."""
    size = max(1, -(-len(reply) // max(1, pieces)))
    parts = [reply[i : i + size] for i in range(0, len(reply), size)] or [""]
    events = []
    for index, part in enumerate(parts):
        delta: dict[str, Any] = {"content": part}
        if index == 0:
            delta["role"] = "assistant"
        chunk = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }
        events.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    last = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    events.append(b"data: " + json.dumps(last).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its keep-alive connection (at the end of a run) is no error.
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakeUpstream:
    """The fake on 127.0.0.1 (a free port); ``url`` is its OpenAI base URL (``.../v1``)."""

    def __init__(
        self, reply: str = DEFAULT_REPLY, *, chunks: int = 4, slow_s: float = 5.0, port: int = 0
    ) -> None:
        self.reply = reply
        self.chunks = chunks
        self.slow_s = slow_s
        self.gate = threading.Event()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a pooled client reuses connections
            disable_nagle_algorithm = True  # each streamed chunk leaves at once

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    body = {}
                with fake._lock:
                    fake.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                with contextlib.suppress(OSError):  # the client went away (a timeout test)
                    fake._answer(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _Server(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def last(self) -> Received:
        with self._lock:
            return self.received[-1]

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        if handler.path != "/v1/chat/completions":
            self._send(handler, 404, error_body(404))
            return
        if model.startswith("error-"):
            self._send(handler, int(model.removeprefix("error-")), error_body(int(model[6:])))
            return
        if model == "slow":
            time.sleep(self.slow_s)
        if body.get("stream") is True:
            self._stream(handler, model)
            return
        self._send(handler, 200, json.dumps(completion(model, self.reply)).encode())

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.send_header("X-Request-Id", "req-fake")
        handler.end_headers()
        handler.wfile.write(payload)

    def _stream(self, handler: BaseHTTPRequestHandler, model: str) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("X-Request-Id", "req-fake")
        handler.end_headers()
        for index, event in enumerate(stream_events(model, self.reply, self.chunks)):
            handler.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            handler.wfile.flush()
            if index == 0 and model == "gated":
                self.gate.wait(timeout=30)
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def main(argv: list[str] | None = None) -> None:
    """``python -m memstrata.testing.fake_openai --port N``: the fake until SIGTERM (a
    stand-in upstream for the README's proxy example)."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible chat endpoint.")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    fake = FakeUpstream(port=args.port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with fake:
        print(f"fake upstream at {fake.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


if __name__ == "__main__":  # pragma: no cover - the README's example
    main()
