"""Disk-full cases run twice: on a real tmpfs when this process may mount one (root),
and with an injected free-space probe and injected write refusals everywhere (the
variant every machine runs). The test id says which: ``[tmpfs]`` or ``[injected]``."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.faults.support import can_mount_tmpfs


@pytest.fixture(scope="session")
def mountable(tmp_path_factory: pytest.TempPathFactory) -> bool:
    return can_mount_tmpfs(tmp_path_factory.mktemp("mount-check"))


@pytest.fixture(params=["tmpfs", "injected"])
def disk_mode(request: pytest.FixtureRequest, mountable: bool) -> str:
    if request.param == "tmpfs" and not mountable:
        pytest.skip("mounting a tmpfs is not permitted here: the [injected] variant covers it")
    return str(request.param)


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    """Where a tmpfs variant mounts its volume."""
    return tmp_path / "volume"
