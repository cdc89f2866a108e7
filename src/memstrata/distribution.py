"""The installed distribution: its name, its version, and the one it must not meet.

memstrata is published as the ``ctxstrata`` distribution; the import package and the
command keep the name ``memstrata``. An unrelated vendor publishes a distribution named
``memstrata`` whose wheel installs an import package of that same name: installed in
one environment, the two overwrite each other's files. :func:`check_distribution`
finds that case before the engine opens a data directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import metadata

from memstrata.errors import ConfigError

DISTRIBUTION = "ctxstrata"
"""The name this project is installed under (``pip install ctxstrata``)."""
FOREIGN_DISTRIBUTION = "memstrata"
"""The other vendor's distribution, which installs an import package named like ours."""
SUMMARY = "A layered context engine for long-running LLM agents"
"""The start of pyproject's description: this project installed under its former
distribution name (``memstrata`` 0.1.0, before the rename) carries it, the other
vendor's package does not."""


def installed_metadata(name: str) -> Mapping[str, object]:
    """The metadata of an installed distribution, keys lowercased (``summary``,
    ``version``); raises ``PackageNotFoundError`` when it is not installed."""
    return metadata.metadata(name).json


Lookup = Callable[[str], Mapping[str, object]]
"""How :func:`foreign_distribution` reads a distribution's metadata (a test injects
its own): :func:`installed_metadata` by default."""


def version(lookup: Callable[[str], str] = metadata.version) -> str:
    """The installed version of ``ctxstrata``; ``0+unknown`` when it runs from a
    source tree without being installed under that name."""
    try:
        return lookup(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def foreign_distribution(lookup: Lookup = installed_metadata) -> str | None:
    """The version of the unrelated ``memstrata`` distribution when it is installed
    here, else None. This project's own install under its former name (same summary)
    is not foreign: ``make install`` replaces it."""
    try:
        found = lookup(FOREIGN_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    if str(found.get("summary", "")).startswith(SUMMARY):
        return None
    return str(found.get("version", "unknown"))


def check_distribution(lookup: Lookup = installed_metadata) -> None:
    """Raise ConfigError when the unrelated ``memstrata`` distribution is installed
    beside this one: both install the import package ``memstrata``, so either may
    have overwritten the other's files and the code that runs is not what was
    installed."""
    other = foreign_distribution(lookup)
    if other is not None:
        raise ConfigError(
            f"an unrelated package named {FOREIGN_DISTRIBUTION!r} (version {other}) is "
            "installed in this environment and shares the import name 'memstrata': "
            f"run `pip uninstall {FOREIGN_DISTRIBUTION}` then "
            f"`pip install --force-reinstall {DISTRIBUTION}` (or use a separate virtualenv)"
        )
