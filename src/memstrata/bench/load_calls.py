"""The callers of ``memstrata bench load``: agent sessions sent over REST in an open loop.

A *stream* is a group of callers running one kind of session (:data:`SCRIPTS`) through a
sequence of phases, each with its own total request rate. Each caller sends its requests
at evenly spaced scheduled times (offset among the callers), the steps of its current
session one after the other, and starts the next session when one ends. Latency is
measured from the scheduled time, so a stall is charged to every request it delays (no
coordinated omission); a request still unsent when its phase ends is counted as
``missed``. The callers run in spawned client processes with lean load generators (the
standard library's keep-alive HTTP, orjson), as ``bench serve``'s do: on a small host
they share the CPU with the server, and a heavy client would be charged to it.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

OK = "ok"
ALLOWED_STATUSES = frozenset({429, 503})
"""The only failures a load may meet: typed ``resource_exhausted`` / ``unavailable``."""
HTTP_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0
PARSED = frozenset({"route", "decide"})
"""Operations whose reply the caller reads (the bundle's L3 flags, the card id)."""
SHORT_API_TTL_S = 60.0
"""A short session's cached sensor reading lives a minute, so keys expire in the run."""
LONG_CYCLES = 50
"""Step cycles of one long session before it ends and another starts."""

CITIES = ("Hangzhou", "Chengdu", "Shanghai", "Shenzhen", "Beijing", "Xi'an", "Wuhan", "Nanjing")
FOODS = ("peanuts", "shellfish", "milk", "gluten", "eggs", "soy", "sesame", "mango")
JOBS = ("nurse", "teacher", "engineer", "driver", "chef", "designer", "lawyer", "farmer")
SEATS = ("window", "aisle")
QUESTIONS = (
    "what am I allergic to?",
    "where do I live?",
    "what is my budget for the trip?",
    "which seats do I prefer?",
    "what is my job?",
)


def user_facts(user: int) -> tuple[str, ...]:
    """What user ``user`` has told the agent (seeded before a run, repeated in it)."""
    return (
        f"I live in {CITIES[user % len(CITIES)]} and work as a {JOBS[user // 3 % len(JOBS)]}.",
        f"I'm allergic to {FOODS[user // 2 % len(FOODS)]}.",
        f"My budget for the trip is {1000 + 500 * (user % 9)} yuan.",
        f"I prefer {SEATS[user % 2]} seats on trains.",
    )


@dataclass(frozen=True, slots=True)
class Phase:
    """``seconds`` at ``rate`` requests per second over all callers of a stream."""

    name: str
    seconds: float
    rate: float


@dataclass(frozen=True, slots=True)
class Stream:
    """``callers`` concurrent sessions of kind ``script`` through ``phases``."""

    name: str
    script: str
    callers: int
    phases: tuple[Phase, ...]
    users: int

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)


class Reply(NamedTuple):
    ok: bool
    data: dict[str, Any] | None


Request = tuple[str, dict[str, Any]]
Session = Generator[Request, Reply, None]


class Ctx:
    """One caller's state that outlives a session: its names, numbers, open session."""

    def __init__(self, stream: Stream, index: int) -> None:
        self.stream = stream
        self.index = index
        self.rng = random.Random(f"{stream.name}:{index}")
        self.sessions = 0
        self.completed = 0
        self.open: str | None = None

    def new_session(self) -> str:
        self.sessions += 1
        return f"{self.stream.name}-{self.index}-{self.sessions}"


def _start(ctx: Ctx, user: str, query: str) -> Generator[Request, Reply, str | None]:
    sid = ctx.new_session()
    reply = yield ("start_session", {"user_id": user, "initial_query": query, "session_id": sid})
    if not reply.ok:
        return None
    ctx.open = sid
    return sid


def _end(ctx: Ctx, sid: str, finished: bool) -> Generator[Request, Reply, None]:
    yield ("end_session", {"session_id": sid})
    ctx.open = None
    if finished:
        ctx.completed += 1


def short_session(ctx: Ctx) -> Session:
    """Many short sessions (seed 000 §5.2, the first scenario): open, cache a sensor
    reading in L2, one user turn, route, read the reading back, the reply, build the
    model call, close: eight requests."""
    number = ctx.rng.randrange(ctx.stream.users)
    user = f"user-{number}"
    device = f"D{ctx.rng.randrange(1000):03d}"
    question = ctx.rng.choice(QUESTIONS)
    sid = yield from _start(ctx, user, question)
    if sid is None:
        return
    api = {"session_id": sid, "endpoint": "sensor_api", "params": {"device_id": device}}
    steps: list[Request] = [
        ("put_api_response", api | {"value": {"temp_c": 41.5}, "ttl_s": SHORT_API_TTL_S}),
        (
            "observe",
            {"session_id": sid, "role": "user", "text": ctx.rng.choice(user_facts(number))},
        ),
        ("route", {"session_id": sid, "step_intent": "respond", "query": question}),
        ("get_api_response", api),
        (
            "observe",
            {"session_id": sid, "role": "assistant", "text": "Noted, I will plan around it."},
        ),
        (
            "build_context",
            {
                "session_id": sid,
                "step_intent": "respond",
                "user_input": question,
                "system_prompt": "You are a travel assistant.",
            },
        ),
    ]
    for step in steps:
        reply = yield step
        if not reply.ok:
            yield from _end(ctx, sid, finished=False)
            return
    yield from _end(ctx, sid, finished=True)


def long_session(ctx: Ctx) -> Session:
    """Few long sessions over many steps (the second scenario): each cycle observes a
    turn, routes, writes and reads a step result, decides, gives feedback on the
    decision, builds the model call, observes the reply, appends to and reads a sensor
    series, caches and reads an API response, and remembers a fact: 13 requests."""
    number = ctx.index % ctx.stream.users
    user = f"user-{number}"
    facts = user_facts(number)
    sid = yield from _start(ctx, user, "plan my trip")
    if sid is None:
        return
    device = f"D{ctx.index:03d}"
    for cycle in range(LONG_CYCLES):
        question = QUESTIONS[cycle % len(QUESTIONS)]
        step_id = f"step{cycle % 7}"
        api = {"session_id": sid, "endpoint": "sensor_api", "params": {"device_id": device}}
        first: list[Request] = [
            (
                "observe",
                {"session_id": sid, "role": "user", "text": f"{facts[cycle % 4]} {question}"},
            ),
            ("route", {"session_id": sid, "step_intent": "respond", "query": question}),
            (
                "put_step_result",
                {"session_id": sid, "step_id": step_id, "fields": {"device": device, "n": cycle}},
            ),
            ("get_step_result", {"session_id": sid, "step_id": step_id}),
            ("decide", {"session_id": sid, "step_intent": "respond", "query": question}),
        ]
        card = ""
        for step in first:
            reply = yield step
            if not reply.ok:
                yield from _end(ctx, sid, finished=False)
                return
            if step[0] == "decide" and reply.data is not None:
                card = str(reply.data.get("card_id") or "")
        feedback: dict[str, Any] = (
            {"card_id": card, "kind": "confirmed"}
            if cycle % 3
            else {"card_id": card, "kind": "rating", "rating": 4}
        )
        point = {"timestamp": float(cycle), "value": 20.0 + cycle % 10}
        rest: list[Request] = [
            *([("feedback", feedback)] if card else []),
            (
                "build_context",
                {
                    "session_id": sid,
                    "step_intent": "respond",
                    "user_input": question,
                    "system_prompt": "You are a travel assistant.",
                },
            ),
            ("observe", {"session_id": sid, "role": "assistant", "text": f"Noted ({cycle})."}),
            ("append_series", {"session_id": sid, "metric": "temperature", "points": [point]}),
            ("read_series", {"session_id": sid, "metric": "temperature"}),
            ("put_api_response", api | {"value": {"cycle": cycle}}),
            ("get_api_response", api),
            ("remember", {"user_id": user, "text": f"{facts[(cycle + 1) % 4]} (noted {cycle})"}),
        ]
        for step in rest:
            reply = yield step
            if not reply.ok:
                yield from _end(ctx, sid, finished=False)
                return
    yield from _end(ctx, sid, finished=True)


SCRIPTS: dict[str, Callable[[Ctx], Session]] = {"short": short_session, "long": long_session}


class Http:
    """One keep-alive connection (reopened after a transport error)."""

    def __init__(self, host: str, port: int, key: str) -> None:
        self._address = (host, port)
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self._conn: http.client.HTTPConnection | None = None

    def post(self, name: str, payload: dict[str, Any]) -> tuple[int, bytes]:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(*self._address, timeout=HTTP_TIMEOUT_S)
        try:
            self._conn.request("POST", f"/v1/{name}", orjson.dumps(payload), self._headers)
            response = self._conn.getresponse()
            return response.status, response.read()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None


def outcome_of(status: int, body: bytes) -> str:
    """``ok``, or ``"<status> <code>/<type>"`` from the error body (``untyped`` without one)."""
    if status < 400:
        return OK
    try:
        error = orjson.loads(body)["error"]
        return f"{status} {error['code']}/{error['type']}"
    except (ValueError, KeyError, TypeError):
        return f"{status} untyped"


def allowed(outcome: str) -> bool:
    """A typed 429 or 503: what a service under load may answer."""
    status, _, kind = outcome.partition(" ")
    return status.isdigit() and int(status) in ALLOWED_STATUSES and kind != "untyped"


@dataclass
class CallerResult:
    """What one caller measured: ``records`` are (phase, operation, scheduled second
    from the start, latency s, outcome)."""

    stream: str
    records: list[tuple[int, str, float, float, str]]
    missed: list[int]
    sessions: int
    completed: int
    l3_skips: Counter[str]
    l2_cache_items: int


def run_caller(
    stream: Stream, index: int, t0: float, http: Http, stop: threading.Event | None = None
) -> CallerResult:
    """Caller ``index`` of ``stream`` from ``t0`` (``time.monotonic``) to its last phase's end."""
    ctx = Ctx(stream, index)
    script = SCRIPTS[stream.script]
    records: list[tuple[int, str, float, float, str]] = []
    missed = [0] * len(stream.phases)
    skips: Counter[str] = Counter()
    cached = 0
    session: Session | None = None
    reply: Reply | None = None

    def next_request() -> Request:
        nonlocal session, reply
        while True:
            if session is None:
                session, reply = script(ctx), None
                return next(session)
            try:
                assert reply is not None
                return session.send(reply)
            except StopIteration:
                session = None

    begin = t0
    for p, phase in enumerate(stream.phases):
        end = begin + phase.seconds
        if phase.rate > 0:
            interval = stream.callers / phase.rate
            scheduled = begin + interval * index / stream.callers
            while scheduled < end:
                now = time.monotonic()
                if now >= end or (stop is not None and stop.is_set()):
                    missed[p] += math.ceil((end - scheduled) / interval)
                    break
                if now < scheduled:
                    time.sleep(scheduled - now)
                name, payload = next_request()
                try:
                    status, body = http.post(name, payload)
                    outcome = outcome_of(status, body)
                except Exception as exc:  # counted: a transport failure is an error too
                    outcome, body = f"transport {type(exc).__name__}", b""
                latency = time.monotonic() - scheduled
                data = None
                if outcome == OK and name in PARSED:
                    data = orjson.loads(body)
                    bundle = data.get("bundle", data)
                    if bundle.get("l3_skip_reason"):
                        skips[bundle["l3_skip_reason"]] += 1
                    cached += sum(
                        1 for i in bundle.get("items", ()) if i.get("source") == "l2_cache"
                    )
                reply = Reply(outcome == OK, data)
                records.append((p, name, scheduled - t0, latency, outcome))
                scheduled += interval
        begin = end
    if ctx.open is not None:  # a session the run cut short: closed, untimed
        with contextlib.suppress(Exception):
            http.post("end_session", {"session_id": ctx.open})
    http.close()
    return CallerResult(stream.name, records, missed, ctx.sessions, ctx.completed, skips, cached)


Work = list[tuple[Stream, tuple[int, ...]]]
"""One client process's share of a run: each stream with the indices of its callers."""


def _run_work(port: int, key: str, work: Work, t0: float) -> list[CallerResult]:
    out: list[CallerResult] = []
    lock = threading.Lock()

    def one(stream: Stream, index: int) -> None:
        result = run_caller(stream, index, t0, Http("127.0.0.1", port, key))
        with lock:
            out.append(result)

    threads = [
        threading.Thread(target=one, args=(stream, i), daemon=True)
        for stream, indices in work
        for i in indices
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def client_process(tasks: Any, start: Any, go: Any, results: Any) -> None:
    """A spawned process serving runs until it gets None: for each ``(port, key, work)``
    it says it is ready, waits for ``go``, reads the start time from ``start`` and runs
    one thread per caller of ``work``."""
    while True:
        task = tasks.get()
        if task is None:
            return
        port, key, work = task
        try:
            results.put({"ready": True})
            if not go.wait(START_TIMEOUT_S):
                raise TimeoutError("the run was never started")
            results.put({"callers": _run_work(port, key, work, float(start.value))})
        except Exception as exc:  # reported to the parent, which fails the run
            results.put({"crash": f"{type(exc).__name__}: {exc}"})


class ClientPool:
    """``processes`` spawned client processes, started once and reused by every run (a
    spawn costs seconds: it imports what the parent's main module imports)."""

    def __init__(self, processes: int) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._start = ctx.Value("d", 0.0)
        self._go = ctx.Event()
        self._results: Any = ctx.Queue()
        self._tasks: list[Any] = [ctx.Queue() for _ in range(processes)]
        self._children = [
            ctx.Process(
                target=client_process,
                args=(tasks, self._start, self._go, self._results),
                daemon=True,
            )
            for tasks in self._tasks
        ]
        for child in self._children:
            child.start()

    @property
    def processes(self) -> int:
        return len(self._children)

    def _get(self, timeout_s: float) -> dict[str, Any]:
        message: dict[str, Any] = self._results.get(timeout=timeout_s)
        if "crash" in message:
            raise RuntimeError(f"a bench client process failed: {message['crash']}")
        return message

    def run(
        self,
        port: int,
        key: str,
        streams: Sequence[Stream],
        at: Sequence[tuple[float, Callable[[], None]]] = (),
    ) -> tuple[float, list[CallerResult]]:
        """Every caller of ``streams``, spread over the processes and started together;
        ``at`` are actions run at offsets from the start (the L3 switch). Returns the
        start (``time.monotonic``) and each caller's result."""
        n = self.processes
        self._go.clear()
        for p, tasks in enumerate(self._tasks):
            work = [(s, tuple(range(p, s.callers, n))) for s in streams if p < s.callers]
            tasks.put((port, key, work))
        for _ in range(n):
            self._get(START_TIMEOUT_S)
        t0 = time.monotonic() + 0.2
        self._start.value = t0
        self._go.set()
        timers = [threading.Timer(max(0.0, t0 + dt - time.monotonic()), act) for dt, act in at]
        for timer in timers:
            timer.daemon = True
            timer.start()
        try:
            longest = max(s.seconds for s in streams)
            done = [self._get(longest * 2 + START_TIMEOUT_S) for _ in range(n)]
        finally:
            for timer in timers:
                timer.cancel()
        return t0, [c for message in done for c in message["callers"]]

    def close(self) -> None:
        for tasks in self._tasks:
            with contextlib.suppress(Exception):
                tasks.put(None)
        for child in self._children:
            child.join(timeout=30)
            if child.is_alive():
                child.kill()
