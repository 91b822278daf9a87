"""Coverage of a paper's table: every (data set, method) row the paper reports, produced, absent or stood in for.

With ``reference.tolerance`` set (metric -> the largest gap that counts as agreement, in the table's units),
:func:`cover` adds to the long table (:func:`olb.grid.reporting.table.build_table`) the paper's rows the grid did not
produce, one per metric with the reason, and gives every cell that has a paper value a ``coverage`` class:

- ``within``: ours within the tolerance of the paper's (a loss: at most the tolerance above it, any amount
  below; any other metric: at most the tolerance either side); ``coverage_symmetric`` classifies the same cells
  with the tolerance either side for every metric, and the summary gives both counts;
- ``missed``: further away (``better``: of those, the ones on the better side of the paper's);
- ``absent``: no figure (the data is not available offline, or the method or data set is not in the grid);
- ``stand-in``: produced by a labelled stand-in (a label ending in ``*``, e.g. ELM-OMLL*), not the paper's method;
- ``not run``: the grid has not computed it yet (an interrupted run; rerunning the command resumes), or its learner
  and data set are in the grid but not that pair (an experiment's part left to another run: the note gives the
  CPU the cell is planned at, :func:`olb.grid.planning.cost.planned_stream` at the learner's defaults);
- ``published``: a method the reference file marks as published only (its ``note`` starts with
  ``published only``: no olb run can rebuild it), listed with its figure as "METHOD (published)", never as a run.

:func:`summary_line` counts them; :func:`with_summary` puts that line into table.md above the long table.
"""

from __future__ import annotations

import math

import pandas as pd
from olb.grid.planning.config import ReferenceConfig

from olb.grid.reporting.references import load_reference

CLASSES = ("within", "missed", "absent", "stand-in", "not run", "published")
_ABSENT_DATA = "data not available offline"
PUBLISHED_ONLY = "published only"  # a reference note's start marking a method no run rebuilds


def _source(dataset: str) -> str:
    from olb.data import dataset_spec

    try:
        return dataset_spec(dataset).source or ""
    except Exception:  # noqa: BLE001 - an unregistered name has no source to cite
        return ""


def _source_text(dataset: str) -> str:
    source = _source(dataset)
    return f" ({source})" if source else ""


def absent_reason(dataset: str, in_grid: bool, unavailable: dict[str, str], has_method: bool) -> str:
    """Why a row of the paper has no figure of ours: the data (with its source), the data set or the method."""
    if dataset in unavailable:
        source = _source(dataset)
        return f"{_ABSENT_DATA} (source: {source})" if source else _ABSENT_DATA
    if not has_method:
        return "the method is not in this grid"
    if not in_grid:
        return "the data set is not in this grid"
    return "not run"


def planned_cpu_s(algorithm: str, dataset: str) -> float:
    """The CPU seconds a grid plans for ``algorithm`` at its registered defaults on ``dataset`` (one pass over
    its rows, as a whole-stream protocol makes)."""
    from olb.grid.planning.cost import planned_stream
    from olb.learners.registry import get_algorithm

    defaults = {name: param.default for name, param in get_algorithm(algorithm).params.items()}
    cost, _, rows = planned_stream(algorithm, defaults, dataset)
    return cost * rows


def _not_run_note(algorithms: list[str], dataset: str) -> str:
    """Why a pair of the grid's learner and data set has no cell: not in this grid's cells, at its planned CPU."""
    try:
        planned = sum(planned_cpu_s(name, dataset) for name in algorithms)
    except Exception:  # noqa: BLE001 - a learner without a cost model: the reason without its cost
        return "not run: not in this grid's cells"
    return f"not run: not in this grid's cells (planned {planned / 3600:.2g} CPU-hours)"


def _classify(
    row: pd.Series, tolerance: dict[str, float], lower_is_better: dict[str, bool], symmetric: bool = False
) -> str:
    if math.isnan(row["paper"]) or row["metric"] not in tolerance:
        return ""
    if row["n_seeds"] == 0 or math.isnan(row["mean"]):
        if row["note"].startswith("published"):
            return "published"
        return "not run" if row["note"].startswith("not run") else "absent"
    if str(row["algorithm"]).split(" (")[0].endswith("*"):
        return "stand-in"
    gap = row["mean"] - row["paper"]
    if lower_is_better.get(row["metric"], False) and not symmetric:
        return "within" if gap <= tolerance[row["metric"]] + 1e-12 else "missed"
    return "within" if abs(gap) <= tolerance[row["metric"]] + 1e-12 else "missed"


def _better(row: pd.Series, lower_is_better: dict[str, bool]) -> bool:
    gap = row["mean"] - row["paper"]
    return gap < 0 if lower_is_better.get(row["metric"], False) else gap > 0


def cover(
    table: pd.DataFrame,
    ref_cfg: ReferenceConfig,
    entries: dict[str, dict],
    datasets: list[str],
    unavailable: dict[str, str],
    lower_is_better: dict[str, bool],
) -> pd.DataFrame:
    """``table`` with every row of the paper's table (``ref_cfg``'s rows of the reference file) and a
    ``coverage`` column; unchanged when ``ref_cfg.tolerance`` is empty or the file has no rows for it.

    ``entries``: the plan's entries (their ``label`` and ``paper_name``), ``datasets``: the grid's data sets,
    ``unavailable``: data set -> why it could not be read.
    """
    tolerance = dict(getattr(ref_cfg, "tolerance", None) or {})
    ref = load_reference(ref_cfg)
    if not tolerance or ref is None or ref.empty:
        return table
    labels: dict[str, list[str]] = {}
    algorithms: dict[str, list[str]] = {}  # label -> its entries' registry names
    for info in entries.values():
        if info.get("paper_name"):
            labels.setdefault(info["paper_name"], []).append(info["label"])
            if info.get("algorithm"):
                algorithms.setdefault(info["label"], []).append(info["algorithm"])
    table = table.copy()
    for i, row in table.iterrows():  # the reason beside "unavailable"
        if row["dataset"] in unavailable and row["note"].startswith("unavailable"):
            reason = absent_reason(row["dataset"], True, unavailable, True)
            table.at[i, "note"] = "unavailable: " + reason + row["note"][len("unavailable") :]
    extra = _absent_rows(table, ref, ref_cfg, labels, datasets, unavailable, algorithms)
    if extra:
        table = pd.concat([table, pd.DataFrame(extra, columns=table.columns)], ignore_index=True)
    table["coverage"] = [_classify(row, tolerance, lower_is_better) for _, row in table.iterrows()]
    table["coverage_symmetric"] = [
        _classify(row, tolerance, lower_is_better, symmetric=True) for _, row in table.iterrows()
    ]
    table["better"] = [row["coverage"] == "missed" and _better(row, lower_is_better) for _, row in table.iterrows()]
    return table


def _absent_rows(
    table: pd.DataFrame,
    ref: pd.DataFrame,
    ref_cfg: ReferenceConfig,
    labels: dict[str, list[str]],
    datasets: list[str],
    unavailable: dict[str, str],
    algorithms: dict[str, list[str]],
) -> list[dict]:
    """The rows of the paper's table that ``table`` lacks, each with the paper's value and why it is absent;
    ``labels``: paper name -> the labels of the entries that reproduce it, ``algorithms``: label -> their
    registry names (for a cell not run: its planned CPU)."""
    scale = float(getattr(ref_cfg, "scale", 1.0) or 1.0)
    to_ours_data = {v: k for k, v in (ref_cfg.datasets or {}).items()}
    to_ours_metric = {v: k for k, v in (ref_cfg.metrics or {}).items()}
    # a row's algorithm is its entry's label, or the label and its best-of choice: "label (gamma=0.1)"
    produced = {
        (r.dataset, name, r.metric) for r in table.itertuples() for name in (r.algorithm, r.algorithm.split(" (")[0])
    }
    extra = []
    for r in ref.itertuples():
        dataset, metric = to_ours_data.get(r.dataset, r.dataset), to_ours_metric.get(r.metric)
        if metric is None:
            continue
        ours = labels.get(r.algorithm, [])
        if any((dataset, label, metric) in produced for label in ours):
            continue
        try:
            paper = float(r.value) / scale
        except ValueError:
            continue
        algorithm, note = _absent_note(r.algorithm, str(r.note or ""), ours, dataset, datasets, unavailable, algorithms)
        extra.append(_absent_row(dataset, algorithm, metric, paper, note))
    return extra


def _absent_note(
    paper_algorithm: str,
    note: str,
    ours: list[str],
    dataset: str,
    datasets: list[str],
    unavailable: dict[str, str],
    algorithms: dict[str, list[str]],
) -> tuple[str, str]:
    """An absent row's algorithm and note: a method published only, as "METHOD (published)" with its note; else
    our label for the paper's method (the paper's name without one) and why the grid has no figure of it."""
    if note.startswith(PUBLISHED_ONLY):
        return f"{paper_algorithm} (published)", "published" + note[len(PUBLISHED_ONLY) :]
    reason = absent_reason(dataset, dataset in datasets, unavailable, bool(ours))
    algorithm = ours[0] if ours else paper_algorithm
    if reason == "not run":
        return algorithm, _not_run_note(algorithms.get(algorithm, []), dataset)
    return algorithm, ("unavailable: " if dataset in unavailable else "absent: ") + reason


def _absent_row(dataset: str, algorithm: str, metric: str, paper: float, note: str) -> dict:
    """A long table's row of the paper's value alone: no figure of ours, nothing planned or run."""
    return {
        "dataset": dataset,
        "algorithm": algorithm,
        "metric": metric,
        "mean": math.nan,
        "std": math.nan,
        "n_seeds": 0,
        "paper": paper,
        "diff": math.nan,
        "n_planned": 0,
        "n_values": 0,
        "n_values_planned": 0,
        "partial": False,
        "selected": "",
        "n_failed": 0,
        "note": note,
        "best": False,
    }


def summary_line(table: pd.DataFrame) -> str:
    """One line: the paper's cells and rows, how many are within tolerance, missed, absent, by a stand-in."""
    if "coverage" not in table.columns:
        return ""
    counted = table[table["coverage"] != ""]
    n = {c: int((counted["coverage"] == c).sum()) for c in CLASSES}
    n_better = int(counted["better"].sum())
    n_symmetric = {c: int((counted["coverage_symmetric"] == c).sum()) for c in ("within", "missed")}
    n_rows = len(counted.drop_duplicates(["dataset", "algorithm"]))
    absent = counted[counted["coverage"] == "absent"]
    offline = absent[absent["note"].str.contains(_ABSENT_DATA, regex=False)]
    why = sorted({f"{r.dataset}{_source_text(r.dataset)}" for r in offline.itertuples()})
    why_text = f"; data not available offline: {', '.join(why)}" if why else ""
    return (
        f"Coverage of the paper's table: {len(counted)} cells ({n_rows} rows): {n['within']} within tolerance, "
        f"{n['missed']} missed ({n_better} of them on the better side; a loss counts as within at any distance "
        f"below the paper's; with the tolerance either side: {n_symmetric['within']} within, "
        f"{n_symmetric['missed']} missed), {n['absent']} absent{why_text}, "
        f"{n['stand-in']} produced by a stand-in"
        + (f", {n['published']} published only (no run rebuilds them)" if n["published"] else "")
        + (f", {_not_run_text(counted)}." if n["not run"] else ".")
    )


def _not_run_text(counted: pd.DataFrame) -> str:
    """The cells not run: those an interrupted run left, and those outside the grid's cells with their planned CPU
    (once per data set and learner: a cell's metrics share it)."""
    not_run = counted[counted["coverage"] == "not run"]
    outside = not_run["note"].str.startswith("not run: not in this grid")
    parts = []
    if (~outside).any():
        parts.append(f"{int((~outside).sum())} not run yet (rerun the command to complete)")
    if outside.any():
        pairs = not_run[outside].drop_duplicates(["dataset", "algorithm"])
        hours = pairs["note"].str.extract(r"planned ([0-9.e+-]+) CPU-hours")[0].astype(float).sum()
        parts.append(f"{int(outside.sum())} not run: outside this grid's cells (planned {hours:.1f} CPU-hours)")
    return ", ".join(parts)


def with_summary(markdown: str, table: pd.DataFrame, ref_cfg: ReferenceConfig) -> str:
    """table.md with the summary line and the tolerances above its long table (and so in the printed part)."""
    line = summary_line(table)
    if not line:
        return markdown
    tolerance = ", ".join(f"{m} {v:g}" for m, v in dict(ref_cfg.tolerance).items())
    text = f"{line} Tolerances (the table's units; a loss may be any amount lower): {tolerance}.\n\n"
    head, sep, tail = markdown.partition("## All values")
    return head + text + sep + tail
