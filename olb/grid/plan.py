"""Expansion of an experiment config into cells, and every check that must pass before any work starts.

Order of the checks (the first problem stops the grid, with a message naming the key and the allowed
values): modules in ``imports``; seeds; algorithm entries and names (olb.registry); data set names
(olb.data registry) and tasks; protocols and metrics; every expanded cell's hyperparameters through the
algorithm's ``validate`` (its declared ``Param`` ranges); table settings. Data availability is checked
separately by :func:`check_availability` (it may download).
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from olb.grid.config import SPEC_AXES, AlgorithmEntry, hyperparameter_names
from olb.registry import algorithm_names, get_algorithm

CELL_ID_VERSION = 1
RUNTIME_COLUMNS = ("runtime_s", "cpu_s", "peak_rss_mb")


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

    @property
    def measured(self) -> tuple[str, ...]:
        """Everything the cell records besides runtimes: its metrics, then the learner's end-of-stream figures
        (``OnlineLearner.report_metrics``)."""
        return (*self.metrics, *get_algorithm(self.algorithm).report_metrics)

    def spec_dict(self, data_dir: str | None = None) -> dict:
        """Keyword arguments of :class:`olb.run.CellSpec`."""
        return {"algorithm": self.algorithm, "dataset": self.dataset, "seed": self.seed, "params": dict(self.params),
                "protocol": self.protocol, "loops": self.loops, "metrics": tuple(self.metrics),
                "curve_every": self.curve_every, "data_dir": data_dir}

    @property
    def config_label(self) -> str:
        """The table label: entry label plus the varying hyperparameters that are not selected over."""
        extra = [f"{k}={_fmt(v)}" for k, v in self.varying if k not in self.best_of]
        return f"{self.label} ({', '.join(extra)})" if extra else self.label

    @property
    def run_name(self) -> str:
        extra = "".join(f" {k}={_fmt(v)}" for k, v in self.varying)
        return f"{self.label}{extra} {self.dataset} s{self.seed}"

    def record(self) -> dict:
        """Flat description for cells.csv."""
        row = {"cell_id": self.cell_id, "label": self.label, "algorithm": self.algorithm, "dataset": self.dataset}
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


def _plain(value: Any) -> Any:
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value


def cell_id(algorithm: str, dataset: str, seed: int, params: dict, protocol: str, loops: int,
            metrics: tuple[str, ...], curve_every: int) -> str:
    """Stable id of a cell: sha1 of the canonical JSON of everything that determines its result.

    ``data_dir`` (where the files are) and the entry's label are not part of it.
    """
    payload = {"v": CELL_ID_VERSION, "algorithm": algorithm, "dataset": dataset, "seed": int(seed),
               "params": {k: params[k] for k in sorted(params)}, "protocol": protocol, "loops": int(loops),
               "metrics": list(metrics), "curve_every": int(curve_every)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def check_keys(cfg: DictConfig) -> None:
    """Reject keys the schema does not know (Hydra's ``+key=value`` adds them even to a structured config)."""
    import dataclasses

    from olb.grid.config import make_schema

    def walk(node: DictConfig, schema: type, where: str) -> None:
        fields = {f.name: f for f in dataclasses.fields(schema)}
        for key in node:
            if key not in fields:
                raise GridConfigError(f"{where}{key}: unknown key; allowed: {', '.join(fields)}")
            sub = fields[key].type
            if dataclasses.is_dataclass(sub) and isinstance(node[key], DictConfig):
                walk(node[key], sub, f"{where}{key}.")

    import typing

    schema = make_schema()
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        f.type = hints.get(f.name, f.type)
    walk(cfg, schema, "")


def import_plugins(modules) -> None:
    for name in modules or ():
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise GridConfigError(f"imports: cannot import {name!r}: {err}") from None


def expand_seeds(seeds: Any) -> list[int]:
    seeds = _plain(seeds)
    if isinstance(seeds, bool) or seeds is None:
        raise GridConfigError(f"seeds={seeds!r}: allowed: a positive integer n (seeds 0..n-1) or a list of integers >= 0")
    if isinstance(seeds, int):
        if seeds < 1:
            raise GridConfigError(f"seeds={seeds}: allowed: a positive integer n (seeds 0..n-1) or a list of integers >= 0")
        return list(range(seeds))
    if isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        if len(set(seeds)) != len(seeds):
            raise GridConfigError(f"seeds={seeds}: repeated seed; allowed: distinct integers >= 0")
        return list(seeds)
    raise GridConfigError(f"seeds={seeds!r}: allowed: a positive integer n (seeds 0..n-1) or a non-empty list of integers >= 0")


def _as_list(key: str, value: Any) -> list:
    value = _plain(value)
    if isinstance(value, dict):
        raise GridConfigError(f"{key}: a hyperparameter takes a value or a list of values, got a mapping {value!r}")
    values = value if isinstance(value, list) else [value]
    if not values:
        raise GridConfigError(f"{key}: empty list of values; allowed: a value or a non-empty list")
    return values


def _metric_info() -> dict:
    from olb.metrics import METRICS

    return METRICS


def plan_grid(cfg: DictConfig) -> Plan:
    """Expand ``cfg`` into cells; raise GridConfigError on the first problem (before any work)."""
    from olb.data import UnknownDatasetError, dataset_names, dataset_spec
    from olb.protocol import DEFAULT_METRICS, PROTOCOLS

    check_keys(cfg)
    import_plugins(cfg.imports)
    seeds = expand_seeds(cfg.seeds)
    METRICS = _metric_info()
    warnings: list[str] = []

    datasets = list(_plain(cfg.datasets) or [])
    if not datasets:
        raise GridConfigError("datasets: empty; allowed: " + ", ".join(dataset_names()))
    if len(set(datasets)) != len(datasets):
        raise GridConfigError(f"datasets={datasets}: repeated data set")
    tasks = {}
    for name in datasets:
        try:
            tasks[name] = dataset_spec(name).task
        except UnknownDatasetError:
            raise GridConfigError(f"datasets: unknown data set {name!r}; allowed: {', '.join(dataset_names())}") from None

    entries_cfg = {}
    for key in cfg.algorithm:
        raw = cfg.algorithm[key]
        if not isinstance(raw, DictConfig):
            raise GridConfigError(f"algorithm.{key}: expected a mapping with keys "
                                  f"{', '.join(AlgorithmEntry.__dataclass_fields__)}, got {_plain(raw)!r}")
        try:
            entries_cfg[key] = OmegaConf.merge(OmegaConf.structured(AlgorithmEntry), raw)
        except Exception as err:  # noqa: BLE001 - OmegaConf's ValidationError / ConfigKeyError
            first = str(err).splitlines()[0]
            raise GridConfigError(f"algorithm.{key}: {first}; allowed keys: "
                                  f"{', '.join(AlgorithmEntry.__dataclass_fields__)}") from None
    selected = list(_plain(cfg.algorithms) or [])
    if not selected:
        raise GridConfigError("algorithms: empty; allowed: " + ", ".join(sorted(set(entries_cfg) | set(algorithm_names()))))
    if len(set(selected)) != len(selected):
        raise GridConfigError(f"algorithms={selected}: repeated entry")

    shorthand = {name: _plain(cfg[name]) for name in hyperparameter_names() if name in cfg and cfg[name] is not None}
    used_shorthand: set[str] = set()

    if cfg.protocol is not None and cfg.protocol not in PROTOCOLS:
        raise GridConfigError(f"protocol={cfg.protocol!r} is not allowed; allowed: {', '.join(PROTOCOLS)}")
    if cfg.metrics is not None:
        for m in cfg.metrics:
            if m not in METRICS:
                raise GridConfigError(f"metrics: unknown metric {m!r}; allowed: {', '.join(sorted(METRICS))}")
    if cfg.backend.name not in ("ray", "serial"):
        raise GridConfigError(f"backend.name={cfg.backend.name!r} is not allowed; allowed: ray, serial")
    if cfg.backend.num_cpus is not None and cfg.backend.num_cpus < 1:
        raise GridConfigError(f"backend.num_cpus={cfg.backend.num_cpus} is out of range; allowed: null or an integer >= 1")
    if cfg.backend.max_retries < 0:
        raise GridConfigError(f"backend.max_retries={cfg.backend.max_retries} is out of range; allowed: an integer >= 0")
    if cfg.curve_every < 1:
        raise GridConfigError(f"curve_every={cfg.curve_every} is out of range; allowed: an integer >= 1")

    cells: list[Cell] = []
    entries: dict[str, dict] = {}
    for key in selected:
        entry = entries_cfg[key] if key in entries_cfg else None
        algo = (entry.name if entry is not None and entry.name else key)
        if algo not in algorithm_names():
            allowed = sorted(set(algorithm_names()) | {k for k in entries_cfg if entries_cfg[k].name})
            raise GridConfigError(f"algorithms: unknown algorithm {key!r}; allowed: {', '.join(allowed)}")
        cls = get_algorithm(algo)
        label = (entry.label if entry is not None and entry.label else key)
        best_of = tuple(_plain(entry.best_of) if entry is not None else ())
        allowed_hp = sorted(set(cls.params) | set(SPEC_AXES))
        for hp in best_of:
            if hp not in allowed_hp:
                raise GridConfigError(f"algorithm.{key}.best_of: {hp!r} is not a hyperparameter of {algo}; allowed: {allowed_hp}")
        protocol = (entry.protocol if entry is not None and entry.protocol else None) or cfg.protocol or cls.default_protocol
        if protocol not in PROTOCOLS:
            raise GridConfigError(f"algorithm.{key}.protocol={protocol!r} is not allowed; allowed: {', '.join(PROTOCOLS)}")
        base = dict(_plain(entry.params) if entry is not None else {})
        per_dataset = dict(_plain(entry.per_dataset) if entry is not None else {})
        for ds in per_dataset:
            if ds not in dataset_names():
                raise GridConfigError(f"algorithm.{key}.per_dataset: unknown data set {ds!r}; allowed: {', '.join(dataset_names())}")
        only = _plain(entry.datasets) if entry is not None and entry.datasets is not None else None
        for ds in only or ():
            if ds not in dataset_names():
                raise GridConfigError(f"algorithm.{key}.datasets: unknown data set {ds!r}; allowed: {', '.join(dataset_names())}")
        entries[key] = {"label": label, "algorithm": algo, "paper_name": entry.paper_name if entry is not None else None,
                        "best_of": best_of}
        for ds in datasets:
            if only is not None and ds not in only:
                continue
            if tasks[ds] != cls.task:
                raise GridConfigError(f"algorithm {key!r} ({algo}) solves {cls.task} tasks, data set {ds!r} is {tasks[ds]}; "
                                      f"restrict it with algorithm.{key}.datasets=[...]")
            grid = dict(base)
            grid.update(per_dataset.get(ds, {}))
            for hp, value in shorthand.items():
                if hp in cls.params or hp in SPEC_AXES:
                    grid[hp] = value
                    used_shorthand.add(hp)
            for hp in grid:
                if hp not in allowed_hp:
                    raise GridConfigError(f"algorithm.{key}.params: {algo}: unknown hyperparameter {hp!r}; allowed: {allowed_hp}")
            axes = {hp: _as_list(f"algorithm.{key}.params.{hp}", v) for hp, v in grid.items()}
            varying_keys = [hp for hp, vs in axes.items() if len(vs) > 1]
            metrics = tuple(_plain(cfg.metrics) or DEFAULT_METRICS[cls.task])
            for combo in itertools.product(*axes.values()):
                raw = dict(zip(axes, combo))
                loops = raw.pop("loops", 1)
                if isinstance(loops, bool) or not isinstance(loops, int) or loops < 1:
                    raise GridConfigError(f"algorithm.{key}: loops={loops!r} is not allowed; allowed: an integer >= 1")
                try:
                    params = cls.validate(raw)
                except ValueError as err:
                    raise GridConfigError(f"algorithm.{key} on {ds}: {err}") from None
                varying = tuple((hp, loops if hp == "loops" else params[hp]) for hp in varying_keys)
                for seed in seeds:
                    cid = cell_id(algo, ds, seed, params, protocol, loops, metrics, cfg.curve_every)
                    cells.append(Cell(cid, key, label, algo, ds, seed, params, protocol, loops, metrics,
                                      cfg.curve_every, varying, best_of, entries[key]["paper_name"]))
    for hp in sorted(set(shorthand) - used_shorthand):
        warnings.append(f"{hp}={shorthand[hp]!r} applies to none of the selected algorithms ({', '.join(selected)})")
    if not cells:
        raise GridConfigError("the grid is empty: no (algorithm, data set) pair to run")

    cell_metrics = sorted({m for c in cells for m in c.measured}, key=lambda m: min(
        c.measured.index(m) for c in cells if m in c.measured))
    table_metrics = list(_plain(cfg.table.metrics) or [*cell_metrics, "runtime_s"])
    for m in table_metrics:
        if m not in cell_metrics and m not in RUNTIME_COLUMNS:
            raise GridConfigError(f"table.metrics: {m!r} is not measured by the cells; allowed: "
                                  f"{', '.join([*cell_metrics, *RUNTIME_COLUMNS])}")
    select_by = cfg.table.select_by or table_metrics[0]
    if select_by not in table_metrics:
        raise GridConfigError(f"table.select_by={select_by!r}; allowed: one of table.metrics {table_metrics}")
    axes_allowed = ("dataset", "algorithm", "metric")
    for where in ("rows", "columns"):
        for axis in cfg.table[where]:
            if axis not in axes_allowed:
                raise GridConfigError(f"table.{where}: {axis!r} is not allowed; allowed: {', '.join(axes_allowed)}")
    if set(cfg.table.rows) & set(cfg.table.columns):
        raise GridConfigError(f"table.rows {list(cfg.table.rows)} and table.columns {list(cfg.table.columns)} overlap")
    reported = {m: lower for algo in {c.algorithm for c in cells}
                for m, lower in get_algorithm(algo).report_metrics.items()}
    lower = {m: METRICS[m].lower_is_better if m in METRICS else reported.get(m, True) for m in table_metrics}
    return Plan(cells, datasets, entries, table_metrics, select_by, lower, warnings)


@dataclass
class Availability:
    available: list[str]
    unavailable: dict[str, str]  # name -> message (says where to put the files)


def check_availability(datasets: list[str], data_dir: str | None) -> Availability:
    """Find (or download, once, in the driver) every data set's files before the fan-out."""
    from olb.data import DatasetUnavailable, dataset_spec
    from olb.data.files import locate

    ok, missing = [], {}
    for name in datasets:
        spec = dataset_spec(name)
        if spec.format == "synthetic":
            ok.append(name)
            continue
        try:
            locate(spec, data_dir)
            ok.append(name)
        except DatasetUnavailable as err:
            missing[name] = str(err)
    return Availability(ok, missing)


def describe(plan: Plan) -> str:
    """One line per (entry, data set): number of configurations and seeds."""
    lines = []
    for key, info in plan.entries.items():
        for ds in plan.datasets:
            cs = [c for c in plan.cells if c.entry == key and c.dataset == ds]
            if cs:
                configs = {(tuple(sorted(c.params.items(), key=lambda kv: kv[0])), c.loops) for c in cs}
                lines.append(f"  {info['label']:<22} {ds:<14} {len(configs)} config(s) x {len({c.seed for c in cs})} seed(s)")
    return "\n".join(lines)
