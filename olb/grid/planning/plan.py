"""The plan's types: a :class:`Cell` (one run of the grid), the :class:`Plan` (every cell plus the table's
settings), the stable :func:`cell_id` of a cell, and :class:`Problems`, which collects every config problem
into one :class:`GridConfigError`.

The config becomes a plan in :mod:`olb.grid.planning.expand`; the checks it runs are in :mod:`olb.grid.planning.configcheck`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from olb.data import DataDirs
from olb.learners.registry import get_algorithm
from olb.run import CellSpec

CELL_ID_VERSION = 1
RUNTIME_COLUMNS = ("runtime_s", "cpu_s", "compile_s", "train_us_per_example", "peak_rss_mb")


class GridConfigError(ValueError):
    """The experiment config is invalid; raised before any cell runs."""


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a fully resolved CellSpec plus where it sits in the table."""

    cell_id: str
    entry: str  # key of the algorithm entry in the experiment
    label: str  # entry label (table column), without the varying hyperparameters
    algorithm: str
    dataset: str
    seed: int
    params: dict  # resolved hyperparameters (defaults filled in)
    protocol: str
    loops: int
    metrics: tuple[str, ...]
    curve_every: int
    varying: tuple[tuple[str, Any], ...] = ()  # hyperparameters that vary within (entry, dataset), with values
    best_of: tuple[str, ...] = ()
    paper_name: str | None = None
    window: int = 0  # > 0: the windowed curve over the last ``window`` examples (olb.protocol.run_stream)

    @property
    def measured(self) -> tuple[str, ...]:
        """Everything the cell records besides runtimes: its metrics, then the learner's end-of-stream figures
        (``OnlineLearner.report_metrics``)."""
        return (*self.metrics, *get_algorithm(self.algorithm).report_metrics)

    def spec(self, data_dir: DataDirs = None, verify_checksums: bool = True) -> CellSpec:
        """The cell as :func:`olb.run.run_cell` runs it, ``checked``: its hyperparameters, protocol and metrics
        were checked when it was planned (:mod:`olb.grid.planning.expand`)."""
        return CellSpec(
            self.algorithm,
            self.dataset,
            self.seed,
            dict(self.params),
            self.protocol,
            self.loops,
            tuple(self.metrics),
            self.curve_every,
            data_dir,
            verify_checksums,
            checked=True,
            window=self.window,
        )

    @property
    def config_label(self) -> str:
        """The table label: entry label plus the varying hyperparameters that are not selected over."""
        extra = [f"{k}={_fmt(v)}" for k, v in self.varying if k not in self.best_of]
        return f"{self.label} ({', '.join(extra)})" if extra else self.label

    @property
    def run_name(self) -> str:
        """Short enough for the MLflow UI's runs table (entry, data set, seed first; the hyperparameters that vary
        after them, and in the run's parameters)."""
        extra = "".join(f" {k}={_fmt(v)}" for k, v in self.varying)
        return f"{self.entry} {self.dataset} s{self.seed}{extra}"

    def record(self) -> dict[str, object]:
        """Flat description for cells.csv."""
        row: dict[str, object] = {
            "cell_id": self.cell_id,
            "label": self.label,
            "algorithm": self.algorithm,
            "dataset": self.dataset,
        }
        row.update(self.params)
        row.update({"loops": self.loops, "protocol": self.protocol, "seed": self.seed})
        return row


@dataclass
class Plan:
    cells: list[Cell]
    datasets: list[str]
    entries: dict[str, dict]  # entry key -> {"label", "algorithm", "paper_name", "best_of"}
    table_metrics: list[str]
    select_by: str
    lower_is_better: dict[str, bool]
    warnings: list[str] = field(default_factory=list)

    @functools.cached_property
    def cells_by_pair(self) -> dict[tuple[str, str], list[Cell]]:
        """(entry, data set) -> its cells in plan order, grouped once (the report and the table ask per pair)."""
        pairs: dict[tuple[str, str], list[Cell]] = {}
        for c in self.cells:
            pairs.setdefault((c.entry, c.dataset), []).append(c)
        return pairs

    @property
    def unique_cells(self) -> list[Cell]:
        seen, out = set(), []
        for c in self.cells:
            if c.cell_id not in seen:
                seen.add(c.cell_id)
                out.append(c)
        return out


def _fmt(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


@dataclass(frozen=True)
class CellKey:
    """Everything that determines a cell's result; its :func:`cell_id` is the resume key."""

    algorithm: str
    dataset: str
    seed: int
    params: dict
    protocol: str
    loops: int
    metrics: tuple[str, ...]
    curve_every: int
    window: int = 0


def cell_id(key: CellKey) -> str:
    """Stable id of a cell: sha1 of the canonical JSON of everything that determines its result.

    ``data_dir`` (where the files are) and the entry's label are not part of it, nor is the data read: a
    cell's identity is (cell id, data fingerprint), see :mod:`olb.grid.datacheck`.
    """
    return _digest(_payload_text(key))


def seed_cell_ids(key: CellKey, seeds: list[int]) -> list[str]:
    """``cell_id`` of ``key`` with each of ``seeds``, its configuration written once (planning writes one per
    cell otherwise): ``seed`` and ``v`` are the payload's last keys, so only its end differs between seeds."""
    head, tail = _payload_text(dataclasses.replace(key, seed=0)).rsplit(',"seed":0,', 1)
    return [_digest(f'{head},"seed":{int(seed)},{tail}') for seed in seeds]


def _payload_text(key: CellKey) -> str:
    payload = {
        "v": CELL_ID_VERSION,
        "algorithm": key.algorithm,
        "dataset": key.dataset,
        "seed": int(key.seed),
        "params": {k: key.params[k] for k in sorted(key.params)},
        "protocol": key.protocol,
        "loops": int(key.loops),
        "metrics": list(key.metrics),
        "curve_every": int(key.curve_every),
        **({"window": int(key.window)} if key.window else {}),  # only when asked: the ids of cells without stay
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class Problems:
    """Every problem found before work starts; :meth:`raise_if_any` reports them all in one GridConfigError."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, message: str) -> None:
        if message not in self.items:
            self.items.append(message)

    def raise_if_any(self) -> None:
        if len(self.items) == 1:
            raise GridConfigError(self.items[0])
        if self.items:
            lines = "\n".join(f"  - {item}" for item in self.items)
            raise GridConfigError(f"{len(self.items)} problems, nothing was run:\n{lines}")


def describe(plan: Plan) -> str:
    """One line per (entry, data set): number of configurations and seeds."""
    lines = []
    for key, info in plan.entries.items():
        for ds in plan.datasets:
            cs = plan.cells_by_pair.get((key, ds))
            if cs:
                configs = {(tuple(sorted(c.params.items(), key=lambda kv: kv[0])), c.loops) for c in cs}
                lines.append(
                    f"  {info['label']:<22} {ds:<14} {len(configs)} config(s) x {len({c.seed for c in cs})} seed(s)"
                )
    return "\n".join(lines)
