"""The command line and composition: Hydra overrides -> the typed grid config (plugins imported first), ``main``.

From Python (tests, notebooks)::

    from olb.grid import compose, run_grid
    cfg = compose(["datasets=[emotions]", "seeds=2", "num_learners=3", "backend=serial"])
    outcome = run_grid(cfg, "outputs/try")
    outcome.table  # pandas DataFrame of table.csv
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import NoReturn

from omegaconf import DictConfig, OmegaConf

import olb
from olb.grid.planning.config import PRIMARY_CONFIG, GridBase, register_configs, typed_config
from olb.grid.planning.plan import GridConfigError
from olb.grid.planning.configcheck import confined_name
from olb.grid.driver.app import run_grid
from olb.grid.lost import InfrastructureLost
from olb.grid.messages import EXIT_CONFIG, EXIT_LOST
from olb.grid.running.backends.ray_head import exit_if_left_behind
from olb.grid.writing import DiskFull
from olb.trust import conf_problems


def compose(overrides: list[str] | None = None) -> GridBase:
    """The typed grid config for ``overrides`` (as on the command line), through Hydra's compose API."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    problems = conf_problems(config_folders(list(overrides or [])))
    if problems:
        raise GridConfigError("; ".join(problems))
    overrides = with_search_path(with_default_experiment(list(overrides or [])))
    import_plugins(overrides)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(olb.conf_dirs()[0]), version_base="1.3", job_name="olb.grid"):
        return typed_config(hydra_compose(config_name=PRIMARY_CONFIG, overrides=overrides))


_CONFIG_DIR_FLAGS = ("--config-dir", "-cd", "--config-path", "-cp")


def config_folders(args: list[str]) -> list[Path]:
    """Every folder Hydra would read configs from for the command line ``args``: :func:`olb.conf_dirs`, and the
    folders ``args`` add (``--config-dir``/``-cd``, ``--config-path``/``-cp``, ``file://`` entries of
    ``hydra.searchpath=[...]``); ``pkg://`` entries are installed packages, as trusted as olb's own code."""
    folders = list(olb.conf_dirs())
    for i, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag in _CONFIG_DIR_FLAGS:
            folders.append(Path(value if equals else args[i + 1] if i + 1 < len(args) else ""))
        elif flag.lstrip("+~") == "hydra.searchpath":
            entries = value.strip().strip("[]").split(",")
            folders += [Path(e.strip()[len("file://") :]) for e in entries if e.strip().startswith("file://")]
    return folders


_PLUGIN_KEYS = ("experiment", "imports", "hydra.searchpath")


def import_plugins(overrides: list[str]) -> None:
    """Import the modules the grid's ``imports`` names, then build the config schema (:func:`register_configs`),
    so that a plugin's hyperparameters have their top-level shorthand (``fail_at=3``) like olb's own. The modules
    come from a first composition with only the experiment choice, ``imports`` and the search path. A module that
    cannot be imported, or a config that does not compose, is left to the real composition and the planner, which
    report it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_configs()
    kept = [o for o in overrides if o.lstrip("+~").split("=", 1)[0].split("@", 1)[0] in _PLUGIN_KEYS]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(olb.conf_dirs()[0]), version_base="1.3", job_name="olb.grid"):
            modules = list(hydra_compose(config_name=PRIMARY_CONFIG, overrides=kept).imports)
    except Exception:  # noqa: BLE001 -- the real composition reports it, with the user's full overrides
        modules = []
    finally:
        GlobalHydra.instance().clear()
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # configcheck.import_plugins names it among the config's problems
    register_configs()


def with_search_path(overrides: list[str]) -> list[str]:
    """Hydra reads the first config dir of :func:`olb.conf_dirs` (one's own, ``$OLB_CONF_DIR``, when set), then
    the others (olb's own last): a config dir of one's own adds to olb's configs instead of replacing them.
    The primary config comes from the config store (:func:`olb.grid.planning.config.register_configs`): Hydra looks for
    it in the first dir only."""
    rest = olb.conf_dirs()[1:]
    if not rest or any(o.lstrip("+~").startswith("hydra.searchpath=") for o in overrides):
        return overrides
    return [f"hydra.searchpath=[{','.join(f'file://{d}' for d in rest)}]", *overrides]


def with_default_experiment(overrides: list[str]) -> list[str]:
    """Put ``+experiment=default`` first unless an experiment is chosen."""
    chosen = any(o.lstrip("+~").startswith("experiment=") or o.lstrip("~") == "experiment" for o in overrides)
    return overrides if chosen else ["+experiment=default", *overrides]


# -- command line ----------------------------------------------------------------------------------------
def _sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


_TASK_STARTED = False


def _hydra_task(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    global _TASK_STARTED
    _TASK_STARTED = True
    hc = HydraConfig.get()
    # Hydra logs INFO to the console: not matplotlib's "generated new fontManager" on its first use in an account
    logging.getLogger("matplotlib.font_manager").setLevel(logging.WARNING)
    try:
        signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread
        pass
    try:
        grid = typed_config(cfg)
        outcome = run_grid(grid, hc.runtime.output_dir, list(hc.overrides.task))
    except GridConfigError as err:
        _remove_hydra_run_dir(Path(hc.runtime.output_dir))
        print(f"olb.grid: error: {err}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    except DiskFull:  # said in one line (olb.grid.driver.finish), the parent run closed
        sys.exit(EXIT_LOST)
    except InfrastructureLost as err:  # before any cell ran (a Ray head that does not answer at the start)
        _remove_hydra_run_dir(Path(hc.runtime.output_dir))
        print(f"olb.grid: error: {err}; nothing was run", file=sys.stderr)
        sys.exit(EXIT_LOST)
    if grid.dry_run:  # wrote nothing: leave no run folder either
        _remove_hydra_run_dir(Path(hc.runtime.output_dir))
    if outcome.exit_code:
        sys.exit(outcome.exit_code)


def _remove_hydra_run_dir(run_dir: Path) -> None:
    """A refused grid (or a dry run) leaves nothing behind: Hydra creates the run dir (and its log file) before the task
    starts, so remove it, and its parents up to the working directory, if nothing else is in them."""
    for handler in logging.getLogger().handlers[:]:
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == run_dir:
            handler.close()
            logging.getLogger().removeHandler(handler)
    if not run_dir.is_dir() or any(p.name != "olb.grid.log" for p in run_dir.iterdir()):
        return
    for p in run_dir.iterdir():
        p.unlink()
    cwd = Path.cwd().resolve()
    for directory in [run_dir.resolve(), *run_dir.resolve().parents]:
        if directory == cwd or cwd not in directory.parents:
            break
        try:
            directory.rmdir()
        except OSError:  # not empty: another run's outputs
            break


def run_folder_name(name: str) -> str:
    """The grid's ``name`` as its run folder's (conf/config.yaml: ``outputs/${olb_name:${name}}/...``), resolved
    before Hydra makes the folder: a name that would leave ``outputs/`` ends the command line with one line, exit 2
    (the planner refuses it too, for :func:`compose`)."""
    try:
        return confined_name(name)
    except GridConfigError as err:
        print(f"olb.grid: error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG) from None


def unknown_override_keys(args: list[str]) -> list[str]:
    """One message per command-line override naming a key the grid's schema does not know, with "did you
    mean" (Hydra would only answer "Could not override" and suggest ``+key``, which the planner refuses)."""
    import dataclasses
    import typing

    from olb.grid.planning.config import make_schema
    from olb.text import did_you_mean

    schema = make_schema()
    groups = {p.name for d in olb.conf_dirs() if d.is_dir() for p in d.iterdir() if p.is_dir()}
    problems = []
    for arg in args:
        if arg.startswith("-") or "=" not in arg:
            continue
        key = arg.lstrip("+~").split("=", 1)[0].split("@", 1)[0]
        level: object = schema
        where = ""
        for part in key.split("."):
            if not dataclasses.is_dataclass(level):
                break  # a mapping or a free value (algorithm entries, hyperparameter shorthands)
            fields = {f.name for f in dataclasses.fields(level)}
            if not where and (part == "hydra" or (part in groups and "." not in key)):  # Hydra's own, backend=serial
                break
            if part not in fields:
                problems.append(
                    f"{where}{part}: unknown key{did_you_mean(part, fields)} (in {arg!r}); "
                    f"allowed: {', '.join(sorted(fields))}"
                )
                break
            level, where = typing.get_type_hints(level).get(part), f"{where}{part}."
    return problems


def unknown_choices(args: list[str]) -> list[str]:
    """One message per ``group=NAME`` override (``+experiment=table3``, ``backend=ray``) naming no file of that
    config group in the config dirs (olb's and ``$OLB_CONF_DIR``'s), with "did you mean" and the known names
    (Hydra's message adds its search path)."""
    from olb.text import did_you_mean

    problems = []
    for arg in args:
        key, sep, name = arg.lstrip("+~").partition("=")
        group = key.split("@", 1)[0]
        dirs = [d / group for d in olb.conf_dirs() if (d / group).is_dir()]
        if not sep or not dirs or "." in group or any(c in name for c in ",[]$"):  # not a choice, or a sweep
            continue
        known = sorted({str(f.relative_to(d).with_suffix("")) for d in dirs for f in d.glob("**/*.yaml")})
        if name not in known:
            where = " and ".join(map(str, dirs))
            problems.append(
                f"{group}: unknown {group} {name!r}{did_you_mean(name, known)} in {where}; known: {', '.join(known)}"
            )
    return problems


def unwritable_run_dir(overrides: list[str]) -> str | None:
    """Why Hydra could not create the grid's output folder (``hydra.run.dir``, under the working directory unless
    set), else None: Hydra would answer with a traceback. None too when the config does not compose (Hydra's own
    message follows)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from olb.paths import unwritable

    register_configs()
    OmegaConf.register_new_resolver("olb_name", run_folder_name, replace=True)  # conf/config.yaml's hydra.run.dir
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(olb.conf_dirs()[0]), version_base="1.3", job_name="olb.grid"):
            run_dir = str(hydra_compose(PRIMARY_CONFIG, overrides, return_hydra_config=True).hydra.run.dir)
    except Exception:  # noqa: BLE001 -- the real composition reports it
        return None
    finally:
        GlobalHydra.instance().clear()
    problem = unwritable(Path(run_dir))
    return (
        f"hydra.run.dir={run_dir}: {problem} (start from a folder of one's own, or set hydra.run.dir)"
        if problem
        else None
    )


def main() -> None:
    import hydra

    refused = conf_problems(config_folders(sys.argv[1:]))  # before Hydra, which calls callbacks as it composes
    if refused:
        for problem in refused:
            print(f"olb.grid: error: {problem}", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG)
    overrides = with_search_path(with_default_experiment(sys.argv[1:]))
    import_plugins(overrides)
    problems = unknown_choices(sys.argv[1:]) + unknown_override_keys(sys.argv[1:])
    problems += [p for p in [None if problems else unwritable_run_dir(overrides)] if p]
    if problems:
        for problem in problems:
            print(f"olb.grid: error: {problem}", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG)
    sys.argv[1:] = overrides
    app = hydra.main(config_path=str(olb.conf_dirs()[0]), config_name=PRIMARY_CONFIG, version_base="1.3")(_hydra_task)
    try:
        app()
    except SystemExit as exit_:
        if exit_.code == 1 and not _TASK_STARTED:  # Hydra could not compose the config (message printed above)
            raise SystemExit(EXIT_CONFIG) from None
        exit_if_left_behind(exit_.code)
        raise
    exit_if_left_behind(0)
