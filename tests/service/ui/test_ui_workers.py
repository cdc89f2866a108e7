"""The memory browser behind ``memstrata serve --workers 2``: a tenant's memory lives in
its worker, so the front must bring each browser's pages to the worker of the tenant
it signed in with (the pages carry a session cookie, not the key)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.service.support import RunningServer, running_server
from tests.service.ui.support import seed, sign_in, unique

from memstrata.service.workers import WORKER_HEADER, worker_of

TENANTS = ("acme", "globex")  # on different workers of two


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-sharded"), "--workers", "2") as running:
        yield running


def test_each_tenants_pages_reach_its_worker(sharded: RunningServer) -> None:
    assert {worker_of(t, 2) for t in TENANTS} == {0, 1}
    for tenant in TENANTS:
        key = sharded.admin_keys[tenant]
        user = unique(tenant)
        seeded = seed(sharded, key, user)
        browser = sign_in(sharded, key)
        page = browser.get(f"/ui/users/{user}")
        assert page.status_code == 200, page.text[-1000:]
        assert page.headers[WORKER_HEADER] == str(worker_of(tenant, 2))
        assert "Porto" in page.text and user in browser.get("/ui/users").text
        card = browser.get(f"/ui/cards/{seeded.card_id}")
        assert card.status_code == 200 and "Where do I live?" in card.text
        assert 'data-testid="who"' in page.text and f"<b>{tenant}</b>" in page.text
