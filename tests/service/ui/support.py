"""What the memory browser's tests share: a user with history and a decision that
used it, and a browser-like client signed in with a key."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import httpx
from tests.service.support import RunningServer, read_timeout_s, rest_call

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass(frozen=True)
class Seeded:
    """A user of a tenant: Lisbon then Porto (the first superseded), and a decision
    whose context held the current fact."""

    user: str
    lisbon: str
    porto: str
    lisbon_episode: str
    porto_episode: str
    card_id: str
    card_memory: str


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def seed(server: RunningServer, key: str, user: str) -> Seeded:
    """Through the REST API (what an application would have written)."""
    call = rest_call(server, key)
    first = call("remember", {"user_id": user, "text": "I live in Lisbon.", "wait": True})
    second = call("remember", {"user_id": user, "text": "I moved to Porto.", "wait": True})
    session = call("start_session", {"user_id": user, "initial_query": "where do I live"})
    decision = call(
        "decide",
        {
            "session_id": session["session_id"],
            "step_intent": "respond",
            "query": "where do I live",
            "question": "Where do I live?",
        },
    )
    used = decision["used"]["memory_ids"]
    assert used, decision  # the decision's context held the user's city
    return Seeded(
        user=user,
        lisbon=first["facts"][0]["id"],
        porto=second["facts"][0]["id"],
        lisbon_episode=first["episodes"][0]["id"],
        porto_episode=second["episodes"][0]["id"],
        card_id=decision["card_id"],
        card_memory=used[0],
    )


def csrf_of(page: str) -> str:
    found = CSRF_RE.search(page)
    assert found, page[-2000:]
    return found.group(1)


def client(server: RunningServer) -> httpx.Client:
    """A client that keeps cookies and does not follow redirects (the tests read them)."""
    return httpx.Client(base_url=server.url, follow_redirects=False, timeout=read_timeout_s())


def sign_in(server: RunningServer, key: str) -> httpx.Client:
    """A client signed in with ``key`` (the sign-in form, its CSRF token, the cookie)."""
    browser = client(server)
    form = browser.get("/ui/sign-in")
    answer = browser.post(
        "/ui/sign-in", data={"csrf": csrf_of(form.text), "key": key, "next": "/ui/"}
    )
    assert answer.status_code == 303, answer.text[-2000:]
    return browser
