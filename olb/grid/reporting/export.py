"""A finished grid's results as data in the repository (``export=results/NAME``): table.csv, cells.csv, table.md
and meta.json (the command that reproduces them, olb's version, the date and the machine), and with
``leaderboard=true`` the leaderboard folder (its ranks and runtimes as CSV, its figures:
:func:`olb.grid.reporting.leaderboard.write_report`).

The result tables of README.md and docs/*.md are generated from these files (:mod:`olb.ops.doc_tables`), so
every published number can be traced to the command and the cells that produced it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import shutil
from pathlib import Path

import pandas as pd

from olb.grid.writing import write_csv, write_text

# Columns of cells.csv that say where and under which tracking run a cell ran, not what it computed: they differ
# between machines and stores (and name private hosts), so the exported copy leaves them out.
_LOCAL_COLUMNS = ("host", "node_ip", "run_id", "source")
# Overrides that only say where this run wrote its files or recorded its cells (private paths): not part of the
# command that reproduces the results.
_LOCAL_OVERRIDES = ("export", "hydra.run.dir", "hydra.sweep.dir", "tracking.uri", "data_dir")


def _shaping(overrides: list[str]) -> list[str]:
    """The overrides that shape the results (those naming paths of this machine left out)."""
    return [o for o in overrides if o.lstrip("+~").split("=", 1)[0] not in _LOCAL_OVERRIDES]


def reproducing_command(overrides: list[str]) -> str:
    """``python -m olb.grid`` with the overrides that shape the results, quoted as a shell takes them (a label
    with spaces, a list's brackets)."""
    return shlex.join(["python", "-m", "olb.grid", *_shaping(overrides)])


def _local_folders(data_dirs: list[Path]) -> dict[str, str]:
    """This machine's folders a message may name -> what the exported copy writes instead."""
    import olb

    folders = {str(folder): "$OLB_DATA_DIR" for folder in data_dirs}
    folders[str(Path(olb.__file__).resolve().parent.parent) + os.sep] = ""  # olb/conf/dataset/x.yaml
    folders.setdefault(str(Path.home()), "~")
    return folders


def _without_folders(text: object, folders: dict[str, str]) -> object:
    """``text`` with each of ``folders`` written as it says (anything but a string as it is)."""
    if not isinstance(text, str):
        return text
    for folder in sorted(folders, key=len, reverse=True):  # the longest first: one may hold another
        text = text.replace(folder, folders[folder])
    return text


def machine() -> dict[str, object]:
    """The CPU model, its vector extensions that change the last bits or the speed, cores, memory, OS."""
    model, flags = platform.processor() or "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    memory_gib = None
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory_gib = round(pages * page_size / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "cpu": model,
        "avx512": "avx512f" in flags,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
    }


def export_results(
    dest: Path,
    table: pd.DataFrame,
    cells: pd.DataFrame,
    markdown: str,
    overrides: list[str],
    version: str,
    data_dirs: list[Path],
    leaderboard: Path | None = None,
) -> Path:
    """Write ``dest``/table.csv, cells.csv, table.md and meta.json, and a copy of the ``leaderboard`` folder as
    ``dest``/leaderboard (where table.md's links to its figures point); ``dest`` is created (and its files
    replaced). A cell's message (an unavailable data set's) names no folder of this machine: the ``data_dirs`` are
    written ``$OLB_DATA_DIR``, olb's own files relative to the package (``olb/conf/...``), the home folder ``~``."""
    dest.mkdir(parents=True, exist_ok=True)
    if (dest / "leaderboard").is_dir() and not (dest / "leaderboard").is_symlink():
        shutil.rmtree(dest / "leaderboard")  # an earlier export's figures of metrics this run may not rank
    if leaderboard is not None:
        shutil.copytree(leaderboard, dest / "leaderboard")
    write_csv(dest / "table.csv", table)
    exported = cells.drop(columns=[c for c in _LOCAL_COLUMNS if c in cells.columns])
    if "error" in exported.columns:
        folders = _local_folders(data_dirs)
        exported = exported.assign(error=exported["error"].map(lambda text: _without_folders(text, folders)))
    write_csv(dest / "cells.csv", exported)
    shown = f"Command-line overrides: `{' '.join(overrides)}`"  # as olb.grid.reporting.markdown.grid_title writes them
    write_text(dest / "table.md", markdown.replace(shown, f"Command-line overrides: `{' '.join(_shaping(overrides))}`"))
    finished = cells.drop_duplicates("cell_id")
    meta = {
        "command": reproducing_command(overrides),
        "olb_version": version,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
        "machine": machine(),
        "cells": int(len(finished)),
        "cells_finished": int((finished["status"] == "FINISHED").sum()),
        "cpu_s": round(float(finished["cpu_s"].sum()), 1) if "cpu_s" in finished else None,
    }
    write_text(dest / "meta.json", json.dumps(meta, indent=2) + "\n")
    return dest
