"""The memory browser in headless Chromium against a real ``memstrata serve``: every
page walked as a person would, a wrong key refused, a low-clearance key seeing less,
a form without its CSRF token refused, and another tenant's user giving nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from tests.service.support import RunningServer, create_key, read_timeout_s, rest_call
from tests.service.ui.browser import shot
from tests.service.ui.support import seed, unique

from memstrata.testing.chromium import CHROMIUM_FLAGS, find_chromium

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMSTRATA_SKIP_BROWSER") == "1", reason="MEMSTRATA_SKIP_BROWSER=1"
)
WAIT_MS = read_timeout_s() * 1000  # a busy machine's server (support.py's LOAD_FACTOR)
expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=find_chromium(), args=list(CHROMIUM_FLAGS)
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(WAIT_MS)
    yield context.new_page()
    context.close()


def sign_in(page: Page, server: RunningServer, key: str) -> None:
    page.goto(f"{server.url}/ui/")
    expect(page).to_have_url(f"{server.url}/ui/sign-in?next=%2Fui%2F")
    page.fill("input[name=key]", key)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Memory browser")


def test_every_page_walked_in_chromium(page: Page, server: RunningServer) -> None:
    key = server.admin_keys["acme"]
    user = unique("walk")
    seeded = seed(server, key, user)

    page.goto(f"{server.url}/")
    expect(page.locator("input[name=key]")).to_be_visible()
    shot(page, "sign-in")
    page.fill("input[name=key]", key)
    page.click("button[type=submit]")
    expect(page.get_by_test_id("who")).to_contain_text("tenant acme")
    shot(page, "home")

    # Users, then the user's memories: episodes and facts, the older city marked.
    page.click("nav >> text=Users")
    page.get_by_test_id("users").get_by_role("link", name=user).click()
    expect(page.get_by_test_id("user-id")).to_have_text(user)
    memories = page.get_by_test_id("memories")
    expect(memories.locator(f"#m-{seeded.porto_episode}")).to_contain_text("I moved to Porto.")
    expect(memories.locator(f"#m-{seeded.lisbon} .mark.superseded")).to_be_visible()
    expect(memories.locator(f"#m-{seeded.porto}")).to_contain_text("Porto")
    shot(page, "user")
    page.goto(f"{server.url}/ui/users")
    expect(page.get_by_test_id("users")).to_contain_text(user)
    shot(page, "users")

    # A fact's history: both versions, the first superseded, each linked to its episode.
    page.goto(f"{server.url}/ui/users/{user}")
    page.locator(f"#m-{seeded.lisbon} a.text").click()
    versions = page.get_by_test_id("versions")
    expect(versions.locator("li")).to_have_count(2)
    expect(versions.locator(f"#v-{seeded.lisbon} .mark.superseded")).to_be_visible()
    expect(versions.locator(f"#v-{seeded.porto}")).to_contain_text("Porto")
    versions.locator(f"#v-{seeded.lisbon} a.link").click()
    expect(page.locator(f"#m-{seeded.lisbon_episode}")).to_contain_text("I live in Lisbon.")

    # Search: the current city, and the older one marked superseded.
    page.click("nav >> text=Search")
    page.fill("input[name=q]", "where do I live")
    page.fill("input[name=user]", user)
    page.click("form[role=search] button")
    results = page.get_by_test_id("results")
    expect(results).to_contain_text("Porto")
    lisbon = results.locator("li.memory", has_text="I live in Lisbon.")
    expect(lisbon.locator(".mark.superseded")).to_be_visible()
    shot(page, "search")

    # Trace cards: the decision and the context it used.
    page.click("nav >> text=Trace cards")
    expect(page.get_by_test_id("cards")).to_contain_text("Where do I live?")
    shot(page, "cards")
    page.click("text=Where do I live?")
    expect(page.get_by_test_id("context")).to_contain_text(seeded.card_memory)
    expect(page.locator(f"#c-{seeded.card_memory}")).to_contain_text("Porto")
    shot(page, "card")

    # Correct the fact the decision used, through its feedback; then see the correction.
    page.click(f"a:text('{seeded.card_memory}')")
    expect(page.locator("h1")).to_contain_text("Fact history")
    expect(page.get_by_test_id("versions")).to_contain_text("Porto")
    shot(page, "fact")
    form = page.get_by_test_id("correct")
    form.locator("input[name=correction]").fill("I live in Braga.")
    form.locator("button").click()
    expect(page.locator(".notice")).to_contain_text("correction queued")
    rest_call(server, key)("flush", {})
    page.goto(f"{server.url}/ui/search?q=where+do+I+live&user={user}")
    results = page.get_by_test_id("results")
    expect(results).to_contain_text("Braga")
    porto = results.locator("li.memory", has_text="I moved to Porto.")
    expect(porto.locator(".mark.superseded").first).to_be_visible()
    page.goto(f"{server.url}/ui/users/{user}/facts/{seeded.porto}")
    versions = page.get_by_test_id("versions")
    expect(versions).to_contain_text("Braga")
    expect(versions.locator(f"#v-{seeded.porto} .mark.superseded")).to_be_visible()
    shot(page, "corrected")

    # Forget, with its confirmation step; then the user's memories are gone.
    page.goto(f"{server.url}/ui/users/{user}")
    page.click("text=Forget this user…")
    expect(page.get_by_test_id("confirm-forget")).to_be_visible()
    shot(page, "forget-confirm")
    page.click("text=Yes, forget")
    expect(page.get_by_test_id("job")).to_have_attribute("data-state", "done")
    shot(page, "forget-done")
    page.goto(f"{server.url}/ui/search?q=where+do+I+live&user={user}")
    expect(page.get_by_test_id("empty")).to_be_visible()
    page.goto(f"{server.url}/ui/users/{user}")
    expect(page.get_by_test_id("empty")).to_be_visible()

    # The health report is the operator's: this tenant's key is told why not.
    page.click("nav >> text=Health")
    expect(page.get_by_test_id("refused")).to_contain_text("tenant 'default'")

    # Sign out: back to the sign-in page, and the pages need it again.
    page.click("text=Sign out")
    expect(page.locator("input[name=key]")).to_be_visible()
    page.goto(f"{server.url}/ui/cards")
    expect(page.locator("input[name=key]")).to_be_visible()


def test_the_health_report_live_for_the_operator(page: Page, server: RunningServer) -> None:
    sign_in(page, server, server.admin_keys["default"])
    page.click("nav >> text=Health")
    frame = page.frame_locator("#health-report")
    expect(frame.locator("h1")).to_have_text("Context health report")
    with page.expect_response(lambda r: "/ui/health/report" in r.url) as reloaded:
        page.click("#refresh-report")
    assert reloaded.value.status == 200
    expect(frame.locator("h1")).to_have_text("Context health report")
    shot(page, "health")


def test_a_wrong_key_is_refused(page: Page, server: RunningServer) -> None:
    page.goto(f"{server.url}/ui/sign-in")
    page.fill("input[name=key]", "msk_0123abcdef0123ab_wrong")
    page.click("button[type=submit]")
    expect(page.get_by_test_id("error")).to_contain_text("not valid")
    shot(page, "sign-in-refused")
    page.goto(f"{server.url}/ui/cards")
    expect(page.locator("input[name=key]")).to_be_visible()


def test_a_low_clearance_key_sees_less(page: Page, server: RunningServer) -> None:
    admin = server.admin_keys["acme"]
    user = unique("lowb")
    seed(server, admin, user)
    sign_in(page, server, create_key(server, admin, agent="lowb", role="reader", clearance="low"))
    expect(page.get_by_test_id("who")).to_contain_text("clearance low")
    page.goto(f"{server.url}/ui/search?q=where+do+I+live&user={user}")
    expect(page.get_by_test_id("empty")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("Porto")
    page.goto(f"{server.url}/ui/users/{user}")
    expect(page.get_by_test_id("empty")).to_be_visible()
    page.click("nav >> text=Users")
    expect(page.get_by_test_id("users")).not_to_contain_text(user)
    page.click("nav >> text=Trace cards")
    expect(page.get_by_test_id("refused")).to_contain_text("clearance is low")
    shot(page, "low-clearance")


def test_a_form_without_its_csrf_token_is_refused(page: Page, server: RunningServer) -> None:
    key = server.admin_keys["acme"]
    user = unique("csrfb")
    seed(server, key, user)
    sign_in(page, server, key)
    page.goto(f"{server.url}/ui/users/{user}/forget")
    page.eval_on_selector("[data-testid=confirm-forget] input[name=csrf]", "e => e.remove()")
    page.click("text=Yes, forget")
    expect(page.get_by_test_id("error")).to_contain_text("csrf")
    page.goto(f"{server.url}/ui/search?q=where+do+I+live&user={user}")
    expect(page.get_by_test_id("results")).to_contain_text("Porto")


def test_another_tenants_user_gives_nothing(page: Page, server: RunningServer) -> None:
    user = unique("isob")
    seeded = seed(server, server.admin_keys["acme"], user)
    sign_in(page, server, server.admin_keys["globex"])
    page.goto(f"{server.url}/ui/search?q=where+do+I+live&user={user}")
    expect(page.get_by_test_id("empty")).to_be_visible()
    page.goto(f"{server.url}/ui/cards/{seeded.card_id}")
    expect(page.get_by_test_id("error")).to_contain_text("not among this tenant's")
    page.goto(f"{server.url}/ui/users/{user}")
    expect(page.get_by_test_id("empty")).to_be_visible()
    page.goto(f"{server.url}/ui/users/{user}/facts/{seeded.porto}")
    expect(page.get_by_test_id("error")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("Porto")
    page.click("nav >> text=Users")
    expect(page.get_by_test_id("users")).not_to_contain_text(user)
