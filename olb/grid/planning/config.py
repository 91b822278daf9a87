"""The grid's structured config: dataclasses that Hydra merges every YAML file and override onto, and the typed
object the grid runs on (:func:`typed_config`).

Hydra rejects an unknown key or a value of the wrong type while it composes the config (before any work
starts); :func:`typed_config` then turns the composed config into an instance of the schema, once: past the
command line (:mod:`olb.grid.cli`) every module reads these dataclasses, plain Python values only.
:mod:`olb.grid.planning.configcheck` then checks what a schema cannot: algorithm and data set names against the
registries and every hyperparameter value against the algorithm's declared :class:`~olb.learners.base.Param`.

Besides the fields below, the top level has one field per hyperparameter name declared by any registered
algorithm (``num_learners``, ``gamma``, ...) and ``loops``: ``None`` unless set, and when set (a value or a
list) it replaces that hyperparameter's values for every algorithm of the experiment that has it.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

import olb
from olb.grid.planning.plan import Problems
from olb.learners.registry import ALGORITHMS, choices_text
from olb.text import did_you_mean

PAPER_TABLES = olb.conf_file("reference/paper_tables.csv")
PAPER_SETTINGS = olb.conf_file("reference/paper_settings.yaml")

BACKENDS = ("auto", "ray", "serial")

# Hyperparameter-like axes that are CellSpec fields rather than algorithm hyperparameters.
SPEC_AXES = ("loops",)


@dataclass
class AlgorithmEntry:
    """One column of the table: a registered algorithm with its hyperparameter grid.

    ``params`` maps a hyperparameter name to a value or a list of values (lists expand to a Cartesian
    product); ``loops`` may appear there too. ``per_dataset`` replaces some of them for one data set (the
    gamma grid of paper 000 depends on the number of labels). ``best_of`` names hyperparameters the table
    selects over: for each data set the value whose mean over seeds is best is reported.
    """

    name: Optional[str] = None  # registry name; default: the entry's key in ``algorithm``
    label: Optional[str] = None  # name in tables and plots; default: the entry's key
    paper_name: Optional[str] = None  # the algorithm's name in the reference table (paper_tables.csv)
    params: Dict[str, Any] = field(default_factory=dict)
    per_dataset: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    best_of: List[str] = field(default_factory=list)
    # cross-validated choice of the setting per data set (olb/grid/driver/crossval.py): {folds, rule, seed, metrics}
    select: Optional[Dict[str, Any]] = None
    protocol: Optional[str] = None  # default: the experiment's protocol
    datasets: Optional[List[str]] = None  # run this entry only on these data sets (default: all)


@dataclass
class BackendConfig:
    """Where cells run: ``ray`` (one task with one CPU per cell) or ``serial`` (in the driver process)."""

    name: str = "auto"  # auto: serial when the planned work is smaller than Ray's start-up cost, else ray
    ray_startup_s: float = 15.0  # what starting a local Ray costs here (backend=auto weighs it against the work)
    address: Optional[str] = (
        None  # Ray cluster address ("auto", "ray://host:10001", ...); None: $RAY_ADDRESS, else a local Ray
    )
    num_cpus: Optional[int] = None  # local Ray: CPUs to use (None: every core)
    # local Ray's session files, one folder per driver ({pid}: two grids on one machine never share a Ray's
    # files); keep it short: Unix sockets live there
    temp_dir: str = "/tmp/olb-ray-{pid}"
    object_store_memory_mb: int = 256  # local Ray: cells return small results, no need for a big store
    max_retries: int = 2  # re-runs of a cell whose worker process died (exceptions are not retried)
    # each Ray task asks for its cell's predicted peak memory (olb/grid/planning/cost.py) times this, so that a node runs
    # only as many cells as fit; raise it to rerun cells killed for memory; 0: no request (cells packed by CPUs)
    memory_factor: float = 1.0
    memory_mb: Optional[int] = None  # local Ray: memory it hands out to cells (None: Ray's default, ~70% of free)
    # cells whose request exceeds every node's memory are refused before any work; false: run them, each asking
    # for the largest node's whole memory
    refuse_oversized: bool = True
    queue_per_cpu: int = 1  # cells queued per CPU besides the running ones (keeps workers busy)
    fresh_worker_per_cell: bool = False  # one new worker process per cell (~1 s per cell; isolates cells fully)
    # a worker process per CPU started and warmed (learners and kernels loaded) before the first cell, in start-up
    prestart_workers: bool = True
    # a Ray worker still holding more than this after a cell (its freed heap returned to the system) ends, and Ray
    # starts a fresh one for its next cell; None: the process floor each cell's predicted memory assumes
    # (olb/grid/planning/cost.py, PROCESS_FLOOR_MB); 0: workers keep what they hold
    worker_memory_mb: Optional[float] = None
    log_to_driver: bool = False  # forward workers' stdout/stderr
    # a Ray head that does not answer this long ends the grid (Ray's own limit: 60 s), also at the start; and
    # ray.shutdown() is left behind after it
    head_timeout_s: float = 15.0


def cluster_address(backend: BackendConfig) -> str | None:
    """The Ray cluster the grid joins, or None (a local Ray)."""
    return backend.address or os.environ.get("RAY_ADDRESS") or None  # Ray's own variable, set by `ray job submit`


@dataclass
class TrackingConfig:
    """MLflow: one experiment per olb experiment, one parent run per invocation, one child run per cell."""

    enabled: bool = True
    uri: Optional[str] = None  # None: MLflow's default, sqlite:///mlflow.db in the working directory
    experiment: Optional[str] = None  # MLflow experiment name; None: "olb/<name>"
    # per cell, besides its curve as metric history: the curve as CSV and a PNG drawn by the worker (~0.1 s a cell)
    cell_artifacts: bool = False
    retries: int = 8  # attempts of a write that fails with "database is locked" or a connection error
    batch_cells: int = 500  # cells written at most in one batch (a SQL store: one transaction)
    queue_cells: int = 10000  # results waiting for the writer thread at most (beyond, the driver waits)
    write_threads: int = 4  # tracking server: cells written at once (each is three requests)
    # a tracking store that does not answer this long ends the grid (a SQL store: every call, + 5 s; PostgreSQL:
    # also its connect, statement and TCP user time-outs)
    timeout_s: float = 30.0
    credentials: Optional[str] = (
        None  # a tracking server's MLflow credentials file (olb.grid.recording.tracking_server)
    )


@dataclass
class ReferenceConfig:
    """Where the paper's numbers come from and how olb's names map to the file's."""

    file: Optional[str] = str(PAPER_TABLES)
    # the settings each paper's values were reported at (a value is shown only beside cells run at them)
    settings: Optional[str] = str(PAPER_SETTINGS)
    paper: Optional[str] = None  # value of the "paper" column, e.g. 000_01d5ef94a9aabcf3
    table: Optional[str] = None  # value of the "table" column, e.g. "Table 3"
    metrics: Dict[str, str] = field(default_factory=dict)  # olb metric -> the file's metric name
    datasets: Dict[str, str] = field(default_factory=dict)  # olb data set -> the file's data set name
    scale: float = 1.0  # the file's numbers are ours times this (paper 002 reports every metric x100)
    # metric -> the gap (our units) that counts as agreement; set: the table lists all the paper's rows and counts
    # them within / missed / absent / stand-in (olb/grid/reporting/coverage.py)
    tolerance: Dict[str, float] = field(default_factory=dict)


@dataclass
class TableConfig:
    """Layout of table.md: ``rows`` and ``columns`` are taken from dataset, algorithm and metric; an axis
    used in neither splits the table into sections. ``metrics`` lists the reported metrics (cell metrics
    and runtime_s, cpu_s, compile_s, peak_rss_mb); None: the cells' metrics then runtime_s."""

    metrics: Optional[List[str]] = None
    rows: List[str] = field(default_factory=lambda: ["dataset"])
    columns: List[str] = field(default_factory=lambda: ["algorithm"])
    select_by: Optional[str] = None  # metric deciding ``best_of`` (default: the first table metric)
    decimals: int = 4
    bold_best: bool = False  # bold the best mean per data set and metric, and those not significantly worse


@dataclass
class GridBase:
    """An experiment: which cells to run, how, where to record them and how to report them."""

    name: str = "default"
    description: str = ""
    algorithms: List[str] = field(default_factory=lambda: ["adaolmr"])  # keys of ``algorithm`` (or registry names)
    datasets: List[str] = field(default_factory=lambda: ["emotions"])
    seeds: Any = 3  # a number n (seeds 0..n-1) or a list of seeds
    # a grid of more cells is refused before it is expanded (planning holds ~0.35 kB a cell, a run several kB)
    max_cells: int = 1_000_000
    protocol: Optional[str] = None  # None: each algorithm's default protocol
    metrics: Optional[List[str]] = None  # None: the task's default metrics
    curve_every: int = 50
    window: int = 0  # > 0: each cell's curve also holds the primary metric over its last ``window`` examples
    data_dir: Any = None  # a dir, several joined by os.pathsep, or a list (searched in order); None: $OLB_DATA_DIR
    verify_checksums: bool = True  # false: read edited files of a registered data set (fingerprint: their content)
    # entry key -> AlgorithmEntry. Typed Dict[str, Any] so that new entries can be added from the command line
    # (+algorithm.NAME.params.KEY=...); plan_grid checks every entry against AlgorithmEntry.
    algorithm: Dict[str, Any] = field(default_factory=dict)
    table: TableConfig = field(default_factory=TableConfig)
    reference: ReferenceConfig = field(default_factory=ReferenceConfig)
    backend: BackendConfig = field(default_factory=BackendConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    resume: bool = True  # skip cells already finished in the tracking store
    # print what would run and resume, the planned CPU and memory, and refuse what a run refuses; run, download
    # and record nothing (olb/grid/driver/dryrun.py)
    dry_run: bool = False
    allow_unavailable: bool = False  # run the rest when a data set has no local copy and cannot be downloaded
    plots: bool = True
    imports: List[str] = field(default_factory=list)  # modules to import (driver and workers) before planning
    selection_store: str = "olb_cv.jsonl"  # cross-validation tasks of earlier versions: moved into the tracker
    leaderboard: bool = (
        False  # also rank the learners across data sets (olb/grid/reporting/leaderboard.py) next to table.md
    )
    export: Optional[str] = (
        None  # a folder (e.g. results/NAME): the results as data for the docs (olb/grid/reporting/export.py)
    )


def hyperparameter_names() -> list[str]:
    """Every hyperparameter name of a registered algorithm, plus the spec axes (``loops``)."""
    names = {key for cls in ALGORITHMS.values() for key in cls.params}
    reserved = {f.name for f in dataclasses.fields(GridBase)}
    return sorted((names | set(SPEC_AXES)) - reserved)


def make_schema() -> type:
    """GridBase plus one ``Any = None`` field per hyperparameter name (the command-line shorthand)."""
    extra = [(name, Any, field(default=None)) for name in hyperparameter_names()]
    return dataclasses.make_dataclass("GridConfig", extra, bases=(GridBase,))


PRIMARY_CONFIG = "olb_grid"


def register_configs() -> None:
    """Store the schema as ``grid_schema`` (conf/config.yaml names it first in its defaults list), and the first
    ``config.yaml`` of the config search path (:func:`olb.conf_dirs`) as the primary config ``olb_grid``."""
    cs = ConfigStore.instance()
    cs.store(name="grid_schema", node=make_schema())
    cs.store(name=PRIMARY_CONFIG, node=OmegaConf.load(olb.conf_file("config.yaml")))
    OmegaConf.register_new_resolver("olb_choices", choices_text, replace=True)
    # ${olb_conf:reference/x.csv}: a file of the config search path, e.g. an experiment's reference file
    OmegaConf.register_new_resolver("olb_conf", lambda relative: str(olb.conf_file(relative)), replace=True)


def typed_config(cfg: DictConfig) -> GridBase:
    """The composed config as an instance of its schema (a :func:`make_schema` class): interpolations resolved,
    every value plain Python, each ``algorithm`` entry still a mapping (:func:`algorithm_entry` checks it).
    GridConfigError naming every key the schema does not know (Hydra's ``+key=value`` adds them even to a
    structured config)."""
    problems = Problems()
    _unknown_keys(cfg, make_schema(), "", problems)
    problems.raise_if_any()
    return typing.cast(GridBase, OmegaConf.to_object(cfg))


def _unknown_keys(node: DictConfig, schema: type, where: str, problems: Problems) -> None:
    fields = [f.name for f in dataclasses.fields(schema)]
    types = typing.get_type_hints(schema)
    for key in map(str, node):
        if key not in fields:
            problems.add(f"{where}{key}: unknown key{did_you_mean(key, fields)}; allowed: {', '.join(fields)}")
            continue
        sub = types.get(key)
        if isinstance(sub, type) and dataclasses.is_dataclass(sub) and isinstance(node[key], DictConfig):
            _unknown_keys(node[key], sub, f"{where}{key}.", problems)


def algorithm_entry(raw: Dict[str, Any]) -> AlgorithmEntry:
    """One ``algorithm`` entry checked against :class:`AlgorithmEntry`; ValueError naming the first key or value
    that does not fit."""
    try:
        return typing.cast(
            AlgorithmEntry, OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(AlgorithmEntry), raw))
        )
    except Exception as err:  # noqa: BLE001 - OmegaConf's ValidationError / ConfigKeyError
        bad = [str(k) for k in raw if k not in AlgorithmEntry.__dataclass_fields__]
        hint = did_you_mean(bad[0], AlgorithmEntry.__dataclass_fields__) if bad else ""
        raise ValueError(f"{str(err).splitlines()[0]}{hint}") from None


def config_yaml(cfg: GridBase) -> str:
    """``cfg`` as YAML (what a grid's parent run keeps)."""
    return OmegaConf.to_yaml(cfg)
