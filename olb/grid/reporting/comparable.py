"""Whether a table's figure may stand beside the paper's value: the cells behind it ran at the settings the
paper reported that value at.

The papers' settings are data, ``conf/reference/paper_settings.yaml`` (``reference.settings``): per paper, the
number of seeds, the protocol, and per algorithm (its name in the reference file) the hyperparameters, the
candidates of a ``best_of``, the cross-validated selection. :func:`differences` compares each planned
(entry, data set) of a grid with them, from the cells' effective settings (whatever set them: the experiment
file, a shorthand, an entry override), and names every setting that differs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import yaml
from olb.grid.planning.config import ReferenceConfig

from olb.grid.planning.plan import Cell, Plan
from olb.learners.registry import get_algorithm


def load_settings(ref_cfg: ReferenceConfig) -> dict | None:
    """The paper's settings (``reference.settings`` file, entry ``reference.paper``), or None."""
    path = getattr(ref_cfg, "settings", None)
    if not path or not ref_cfg.paper or not Path(path).is_file():
        return None
    return (yaml.safe_load(Path(path).read_text()) or {}).get(ref_cfg.paper)


def differences(
    plan: Plan, ref_cfg: ReferenceConfig, verify_checksums: bool = True
) -> dict[tuple[str, str], list[str]]:
    """(entry, data set) -> the settings in which its cells differ from the paper's (empty: comparable), for
    every entry that names a paper algorithm (``paper_name``)."""
    paper = load_settings(ref_cfg)
    out: dict[tuple[str, str], list[str]] = {}
    for key, info in plan.entries.items():
        for ds in plan.datasets:
            cells = plan.cells_by_pair.get((key, ds), [])
            if cells and info.get("paper_name"):
                out[(key, ds)] = _differences(cells, info, paper, ds, verify_checksums)
    return out


def paper_summary(ref_cfg: ReferenceConfig) -> str:
    """How the table names the paper's settings, e.g. ``"100 trees, 10 seeds"``."""
    paper = load_settings(ref_cfg)
    return str(paper.get("summary", "")) if paper else ""


def _differences(cells: list[Cell], info: dict, paper: dict | None, dataset: str, verify: bool) -> list[str]:
    paper = paper or {}
    algo = paper.get("algorithms", {}).get(info["paper_name"])
    if algo is None:
        return [f"no settings declared for {info['paper_name']!r} (reference.settings)"]
    per_dataset = (algo.get("per_dataset") or {}).get(dataset, {})
    declared = {**(algo.get("params") or {}), **(per_dataset.get("params") or {})}
    best_of = {**(algo.get("best_of") or {}), **(per_dataset.get("best_of") or {})}
    free = set(algo.get("free") or ())
    found = []
    if not verify:
        found.append("verify_checksums=false (paper: verified data)")
    if cells[0].algorithm != algo["algorithm"]:
        found.append(f"algorithm {cells[0].algorithm} (paper: {algo['algorithm']})")
        return found
    seeds = len({c.seed for c in cells})
    want_seeds = algo.get("seeds", paper.get("seeds"))
    if want_seeds is not None and seeds != want_seeds:
        found.append(f"{seeds} seed(s) (paper: {want_seeds})")
    protocol = algo.get("protocol", paper.get("protocol"))
    protocols = sorted({c.protocol for c in cells})
    if protocol and protocols != [protocol]:
        found.append(f"protocol {'/'.join(protocols)} (paper: {protocol})")
    defaults = {name: p.default for name, p in get_algorithm(algo["algorithm"]).params.items()}
    values: dict[str, list] = {}
    for c in cells:
        for name, value in [*c.params.items(), ("loops", c.loops)]:
            if value not in values.setdefault(name, []):
                values[name].append(value)
    for name, seen in values.items():
        if name in free or name in best_of:
            continue
        want = declared.get(name, defaults.get(name, 1))
        if any(not _same(v, want) for v in seen):
            found.append(f"{name}={_text(seen)} (paper: {want})")
    for name, candidates in best_of.items():
        seen = values.get(name, [])
        if name not in info.get("best_of", ()):
            found.append(f"{name}={_text(seen)} not selected over (paper: best of {_text(candidates)})")
        elif len(seen) != len(candidates) or any(not any(_same(v, c) for c in candidates) for v in seen):
            found.append(f"best of {name}={_text(seen)} (paper: best of {_text(candidates)})")
    select = info.get("select") or {}
    for name, want in (algo.get("select") or {}).items():
        if select.get(name) != want:
            found.append(f"select.{name}={select.get(name)} (paper: {want})")
    return found


def _same(a: object, b: object) -> bool:
    numbers = not isinstance(a, bool) and not isinstance(b, bool)
    if numbers and isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


def _text(values: Iterable[object]) -> str:
    values = list(values)
    return str(values[0]) if len(values) == 1 else "{" + ", ".join(map(str, values)) + "}"
