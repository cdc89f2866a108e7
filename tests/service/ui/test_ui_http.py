"""The memory browser's rules, over plain HTTP against a real ``memstrata serve``:
sign-in with a key checked as REST checks it, an opaque session cookie, CSRF on every
POST, sign-out, and every page under the key's tenant, role and clearance."""

from __future__ import annotations

from tests.service.support import RunningServer, create_key, rest_call
from tests.service.ui.support import client, csrf_of, seed, sign_in, unique

from memstrata.service.auth import KeyStore


def test_the_root_leads_to_the_browser_and_its_pages_need_a_session(
    server: RunningServer,
) -> None:
    anonymous = client(server)
    root = anonymous.get("/")
    assert root.status_code in (302, 303, 307) and root.headers["location"] == "/ui/"
    for path in ("/ui/", "/ui/users", "/ui/search?q=x", "/ui/cards", "/ui/health"):
        answer = anonymous.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"].startswith("/ui/sign-in?next=")
    page = anonymous.get("/ui/sign-in")
    assert page.status_code == 200 and 'name="key"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]


def test_a_wrong_key_is_refused_and_gets_no_session(server: RunningServer) -> None:
    browser = client(server)
    form = browser.get("/ui/sign-in").text
    for key in ("msk_0123abcdef0123ab_not-the-secret", "not a key at all"):
        answer = browser.post("/ui/sign-in", data={"csrf": csrf_of(form), "key": key})
        assert answer.status_code == 401, answer.text[-1000:]
        assert "not valid" in answer.text
        assert "memstrata_ui=" not in answer.headers.get("set-cookie", "")
        form = answer.text  # the refusal's form carries a fresh token
    assert browser.get("/ui/cards").status_code == 303


def test_the_session_cookie_is_opaque_http_only_strict_and_expires(
    server: RunningServer,
) -> None:
    key = server.admin_keys["acme"]
    browser = client(server)
    form = browser.get("/ui/sign-in").text
    answer = browser.post("/ui/sign-in", data={"csrf": csrf_of(form), "key": key})
    assert answer.status_code == 303
    cookie = next(c for c in answer.headers.get_list("set-cookie") if c.startswith("memstrata_ui="))
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert {"httponly", "max-age", "path"} <= attributes
    assert "samesite=strict" in cookie.lower()
    value = cookie.split(";")[0].split("=", 1)[1]
    key_id = KeyStore.key_id_of(key)
    assert key_id is not None
    assert key not in cookie and key_id not in value and key.split("_")[-1] not in cookie
    # Neither any page nor the server's log ever shows the key.
    for path in ("/ui/", "/ui/users", "/ui/cards", "/ui/search?q=city", "/ui/health"):
        assert key not in browser.get(path).text
    log = server.data_dir.parent / f"{server.data_dir.name}.log"
    assert key not in log.read_text(errors="replace")


def test_a_sign_in_without_its_csrf_token_is_refused(server: RunningServer) -> None:
    browser = client(server)
    browser.get("/ui/sign-in")
    key = server.admin_keys["acme"]
    for data in ({"key": key}, {"key": key, "csrf": "forged"}):
        answer = browser.post("/ui/sign-in", data=data)
        assert answer.status_code == 403 and "csrf" in answer.text
        assert "memstrata_ui=" not in answer.headers.get("set-cookie", "")


def test_a_post_without_the_sessions_csrf_token_is_refused(server: RunningServer) -> None:
    key = server.admin_keys["acme"]
    user = unique("csrf")
    seeded = seed(server, key, user)
    browser = sign_in(server, key)
    other = sign_in(server, key)
    foreign = csrf_of(other.get("/ui/").text)  # another session's token
    for token in (None, "", foreign):
        extra = {} if token is None else {"csrf": token}
        forget = browser.post("/ui/forget", data={"user_id": user, **extra})
        correct = browser.post(
            "/ui/correct",
            data={
                "card_id": seeded.card_id,
                "memory_id": seeded.card_memory,
                "correction": "I live in Faro.",
                **extra,
            },
        )
        assert forget.status_code == 403 and correct.status_code == 403
        assert "csrf" in forget.text
    # Nothing was forgotten and nothing corrected.
    call = rest_call(server, key)
    call("flush", {})
    texts = [
        i["text"]
        for i in call("retrieve", {"query": "where do I live", "user_id": user, "k": 20})["items"]
    ]
    assert any("Porto" in t for t in texts) and not any("Faro" in t for t in texts)


def test_sign_out_ends_the_session_for_every_copy_of_the_cookie(server: RunningServer) -> None:
    browser = sign_in(server, server.admin_keys["acme"])
    copy = client(server)
    copy.cookies.update(browser.cookies)
    assert copy.get("/ui/cards").status_code == 200
    home = browser.get("/ui/").text
    assert browser.post("/ui/sign-out", data={"csrf": csrf_of(home)}).status_code == 303
    assert copy.get("/ui/cards").status_code == 303
    assert browser.get("/ui/cards").status_code == 303


def test_a_key_revoked_after_sign_in_ends_its_session(server: RunningServer) -> None:
    admin = server.admin_keys["acme"]
    key = create_key(server, admin, agent="revoked", role="reader")
    browser = sign_in(server, key)
    assert browser.get("/ui/cards").status_code == 200
    rest_call(server, admin)("revoke_key", {"key_id": KeyStore.key_id_of(key)})
    answer = browser.get("/ui/cards")
    assert answer.status_code == 401 and "revoked" in answer.text
    assert browser.get("/ui/cards").status_code == 303  # signed out with it


def test_another_tenants_user_in_the_url_gives_nothing(server: RunningServer) -> None:
    user = unique("iso")
    seeded = seed(server, server.admin_keys["acme"], user)
    globex = sign_in(server, server.admin_keys["globex"])
    found = globex.get("/ui/search", params={"q": "where do I live", "user": user})
    assert found.status_code == 200
    assert "Porto" not in found.text and "Lisbon" not in found.text
    assert 'data-testid="empty"' in found.text
    card = globex.get(f"/ui/cards/{seeded.card_id}")
    assert card.status_code == 404 and "Where do I live" not in card.text
    fact = globex.get(f"/ui/users/{user}/facts/{seeded.porto}")
    assert fact.status_code == 404
    assert "Porto" not in fact.text and seeded.card_id not in fact.text
    memories = globex.get(f"/ui/users/{user}")
    assert memories.status_code == 200 and 'data-testid="empty"' in memories.text
    assert "Porto" not in memories.text and user not in globex.get("/ui/users").text
    # The owner's tenant sees them.
    acme = sign_in(server, server.admin_keys["acme"])
    mine = acme.get("/ui/search", params={"q": "where do I live", "user": user})
    assert "Porto" in mine.text
    assert "Porto" in acme.get(f"/ui/users/{user}").text and user in acme.get("/ui/users").text


def test_a_low_clearance_key_sees_less(server: RunningServer) -> None:
    admin = server.admin_keys["acme"]
    user = unique("low")
    seed(server, admin, user)
    low = sign_in(server, create_key(server, admin, agent="low", role="admin", clearance="low"))
    high = sign_in(server, admin)
    query = {"q": "where do I live", "user": user}
    assert "Porto" in high.get("/ui/search", params=query).text
    seen = low.get("/ui/search", params=query)
    assert seen.status_code == 200 and "Porto" not in seen.text and "Lisbon" not in seen.text
    assert "clearance low" in seen.text
    assert "Porto" in high.get(f"/ui/users/{user}").text
    listed = low.get(f"/ui/users/{user}")
    assert listed.status_code == 200 and "Porto" not in listed.text and "Lisbon" not in listed.text
    assert user in high.get("/ui/users").text and user not in low.get("/ui/users").text
    cards = low.get("/ui/cards")
    assert cards.status_code == 200 and 'data-testid="refused"' in cards.text
    assert "clearance" in cards.text and "Where do I live" not in cards.text
    assert "Where do I live" in high.get("/ui/cards").text


def test_a_reader_key_cannot_forget(server: RunningServer) -> None:
    admin = server.admin_keys["acme"]
    user = unique("reader")
    seed(server, admin, user)
    reader = sign_in(server, create_key(server, admin, agent="reader", role="reader"))
    page = reader.get(f"/ui/users/{user}/forget").text
    answer = reader.post("/ui/forget", data={"csrf": csrf_of(page), "user_id": user})
    assert answer.status_code == 403 and "admin role" in answer.text
    found = rest_call(server, admin)("retrieve", {"query": "where do I live", "user_id": user})
    assert found["items"]


def test_a_disputed_fact_is_marked_on_the_users_page_and_in_its_history(
    server: RunningServer,
) -> None:
    key = server.admin_keys["acme"]
    user = unique("dispute")
    call = rest_call(server, key)
    stated = call("remember", {"user_id": user, "text": "I work as a teacher.", "wait": True})
    call("remember", {"user_id": user, "text": "I changed jobs.", "wait": True})
    fact = stated["facts"][0]["id"]
    browser = sign_in(server, key)
    page = browser.get(f"/ui/users/{user}").text
    row = page[page.index(f'id="m-{fact}"') :].split("</li>")[0]
    assert "teacher" in row and 'class="mark disputed"' in row
    history = browser.get(f"/ui/users/{user}/facts/{fact}").text
    version = history[history.index(f'id="v-{fact}"') :].split("</li>")[0]
    assert 'class="mark disputed"' in version and "I changed jobs." in history
