"""A publishable name (issue 34, "The name is taken"): the distribution is ``ctxstrata``;
nothing tells a user to install ``memstrata``, which is another vendor's package; and
the engine refuses to open beside that package, which installs the same import name."""

from __future__ import annotations

import functools
import json
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import ContextEngine, Settings, wiring
from memstrata.distribution import (
    DISTRIBUTION,
    SUMMARY,
    Lookup,
    check_distribution,
    foreign_distribution,
    version,
)
from memstrata.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _installed(**dists: dict[str, str]) -> Lookup:
    """A fake ``importlib.metadata.metadata``: the named distributions' fields."""

    def lookup(name: str) -> dict[str, str]:
        if name not in dists:
            raise metadata.PackageNotFoundError(name)
        return dists[name]

    return lookup


FOREIGN = _installed(
    memstrata={"name": "memstrata", "version": "0.6.3", "summary": "Memory for AI apps"}
)


def test_the_distribution_is_ctxstrata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "ctxstrata"
    assert project["scripts"] == {"memstrata": "memstrata.cli:app"}  # the command keeps its name
    assert project["description"].startswith(SUMMARY)


def _shipped_texts() -> list[Path]:
    """What a user reads or runs: README, docs, pyproject, Makefile, CI, the source."""
    found = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "Makefile"]
    found += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / ".ci").rglob("*"))
    found += sorted((ROOT / "src").rglob("*.py"))
    return [p for p in found if p.is_file()]


# `pip install memstrata`, `pip install 'memstrata[torch]'`, `memstrata[langgraph]`, ...:
# each would fetch the other vendor's package.
_FOREIGN_INSTALL = re.compile(
    r"pip3?\s+install\s+(?:-[-\w]+\s+)*['\"]?memstrata\b(?![-./\w])|\bmemstrata\[\w"
)


def test_no_install_line_names_the_other_vendors_package() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _shipped_texts()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if _FOREIGN_INSTALL.search(line)
    ]
    assert found == []
    readme = (ROOT / "README.md").read_text()
    assert "pip install ctxstrata" in readme and "never install both" in readme


def test_the_pattern_finds_what_it_is_meant_to() -> None:
    for line in (
        "pip install memstrata",
        "pip install 'memstrata[torch]'",
        "(``pip install memstrata[langgraph]``)",
        "pip install -U memstrata==0.1",
    ):
        assert _FOREIGN_INSTALL.search(line), line
    for line in ("pip install ctxstrata", "pip install 'ctxstrata[torch]'", "memstrata serve"):
        assert not _FOREIGN_INSTALL.search(line), line


def test_a_foreign_memstrata_distribution_is_found() -> None:
    assert foreign_distribution(_installed()) is None
    assert foreign_distribution(FOREIGN) == "0.6.3"
    # This project installed under its former name (before the rename) is not foreign.
    own = _installed(memstrata={"version": "0.1.0", "summary": f"{SUMMARY}: session state"})
    assert foreign_distribution(own) is None
    check_distribution(own)
    with pytest.raises(ConfigError) as caught:
        check_distribution(FOREIGN)
    message = str(caught.value)
    assert "\n" not in message and "0.6.3" in message
    assert "pip uninstall memstrata" in message and "ctxstrata" in message


def test_the_version_is_the_installed_distributions() -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    assert version(lambda name: {"ctxstrata": "1.2.3"}[name]) == "1.2.3"
    assert version(missing) == "0+unknown"


def test_the_engine_and_the_cli_refuse_to_open_beside_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    refusing = functools.partial(check_distribution, FOREIGN)
    monkeypatch.setattr(wiring, "check_distribution", refusing)
    with pytest.raises(ConfigError, match="unrelated package named 'memstrata'"):
        ContextEngine.open(Settings(data_dir=tmp_path / "data"))
    assert not (tmp_path / "data").exists()  # refused before anything was written
    with pytest.raises(ConfigError, match="unrelated package named 'memstrata'"):
        wiring.worker_handler(data_dir=str(tmp_path / "worker"), redis_url="redis://h:1")
    assert not (tmp_path / "worker").exists()

    from memstrata.cli import app

    monkeypatch.delenv("MEMSTRATA_URL", raising=False)
    runner = CliRunner()
    command = ["search", "--user", "u", "--query", "q", "--data-dir", str(tmp_path / "cli")]
    result = runner.invoke(app, command)
    # One error (the console wraps it to its width), no traceback, a failing exit.
    assert result.exit_code == 2 and "Traceback" not in result.output
    said = " ".join(result.output.split())
    assert said.startswith("error (ConfigError): an unrelated package named 'memstrata'")
    assert "pip uninstall memstrata" in said
    result = runner.invoke(app, [*command, "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["type"] == "ConfigError"
    assert not (tmp_path / "cli").exists()
