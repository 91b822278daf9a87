"""The dependency ranges pyproject.toml declares, and the lock files (`make lock`) that pin versions in them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"  # what `make setup` and CI install
LOWEST_LOCK = ROOT / "requirements-lowest.lock"  # each declared dependency at its lower bound: `make test-lowest`


def declared(extras: tuple[str, ...] = ()) -> list[Requirement]:
    """The core's requirements and those of ``extras``, an extra's ``olb[...]`` (the others it includes) expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]
    requirements, seen, pending = [Requirement(r) for r in project["dependencies"]], set(), list(extras)
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in optional[extra]:
            requirement = Requirement(line)
            if requirement.name == project["name"]:
                pending.extend(requirement.extras)
            else:
                requirements.append(requirement)
    return requirements


def locked(lock: Path) -> dict[str, str]:
    """The version a lock file pins for each package on this platform and Python (lines whose marker holds)."""
    pins = {}
    for line in lock.read_text().splitlines():
        if not line or line[0] in "# ":
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate():
            (pin,) = requirement.specifier
            pins[normal_name(requirement.name)] = pin.version
    return pins


def lock_extras(lock: Path) -> tuple[str, ...]:
    """The extras a lock file was compiled for, read from the command uv writes at its top."""
    command = next(line for line in lock.read_text().splitlines() if "uv pip compile" in line)
    return tuple(re.findall(r"--extra (\S+)", command))


def lower_bound(requirement: Requirement) -> str | None:
    """The version of the requirement's ``>=`` clause: its lower bound."""
    return next((s.version for s in requirement.specifier if s.operator == ">="), None)


def normal_name(name: str) -> str:
    """A package's name as lock files and ``pip freeze`` are compared (PEP 503: lower case, runs of -_. as -)."""
    return re.sub(r"[-_.]+", "-", name).lower()
