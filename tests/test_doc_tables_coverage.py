"""A paper's coverage as tables in the docs (olb/ops/doc_tables.py ``summary=counts``, ``misses``,
``not-run``), from the ALT paper's exported run (results/alt_table2), and the cells a grid leaves to another run
listed as not run with their planned CPU (olb/grid/reporting/coverage.py)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from olb.grid.reporting.coverage import cover, planned_cpu_s, summary_line
from olb.ops.doc_tables import main
from olb.grid.reporting.table import TABLE_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "results/alt_table2/table.csv"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(ROOT / SOURCE, dtype={"note": str, "selected": str}).fillna({"note": "", "selected": ""})


def _generated(tmp_path: Path, options: str) -> list[str]:
    doc = tmp_path / "doc.md"
    doc.write_text(f"<!-- olb:table {SOURCE} {options} -->\n<!-- /olb:table -->\n")
    assert main(["--root", str(ROOT), str(doc)]) == 0
    assert main(["--check", "--root", str(ROOT), str(doc)]) == 0
    return doc.read_text().splitlines()[1:-1]


def test_the_counts_per_data_set_add_up_to_the_summary_line(tmp_path, table):
    lines = _generated(tmp_path, "summary=counts")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == "dataset" and header[-1] == "within / (within + missed)"
    total = dict(zip(header, (c.strip() for c in lines[-1].strip("|").split("|"))))
    counted = table[table["coverage"].fillna("") != ""]
    assert int(total["within"]) == (counted["coverage"] == "within").sum()
    assert f"{total['within']} within tolerance, {total['missed']} missed" in summary_line(table)
    assert len(lines) == 2 + counted["dataset"].nunique() + 1  # header, rule, a row per data set, the total
    yeast = next(line for line in lines if line.startswith("| yeast |"))
    mine = counted[counted["dataset"] == "yeast"]
    within, missed = (mine["coverage"] == "within").sum(), (mine["coverage"] == "missed").sum()
    assert yeast.endswith(f"| {100 * within / (within + missed):.0f}% |")


def test_every_missed_cell_is_listed_with_its_difference(tmp_path, table):
    lines = _generated(tmp_path, "summary=misses metric=hamming_loss decimals=3")
    missed = table[(table["coverage"] == "missed") & (table["metric"] == "hamming_loss")]
    assert len(lines) == 2 + len(missed) and len(missed) > 0
    first = missed.iloc[0]
    assert (
        f"| {first['dataset']} | {first['algorithm']} | hamming_loss | {first['mean']:.3f} | {first['paper']:.3f} "
        f"| {first['mean'] - first['paper']:+.3f} |"
    ) in lines


def test_a_pair_outside_the_grids_cells_is_not_run_at_its_planned_cost(tmp_path):
    """flags is in the grid and mlhat_ht is, but not that pair (left to another run): not run, with its cost."""
    columns = list(TABLE_COLUMNS)
    ran = dict(zip(columns, ["emotions", "river HT", "mlhat_micro_f1", 0.57, math.nan, 1, 0.573, -0.003, 1, 1, 1]))
    ran.update(partial=False, selected="", n_failed=0, note="", best=False)
    path = tmp_path / "ref.csv"
    path.write_text(
        "paper,table,dataset,algorithm,metric,value,std,note\nP,T,Emotions,HT,micro_f1,0.573,,\n"
        "P,T,Flags,HT,micro_f1,0.71,,\n"
    )
    ref = SimpleNamespace(
        file=str(path),
        paper="P",
        table="T",
        metrics={"mlhat_micro_f1": "micro_f1"},
        datasets={"emotions": "Emotions", "flags": "Flags"},
        scale=1.0,
        tolerance={"mlhat_micro_f1": 0.02},
    )
    entries = {"mlhat_ht": {"label": "river HT", "algorithm": "mlhat_ht", "paper_name": "HT"}}
    out = cover(pd.DataFrame([ran]), ref, entries, ["emotions", "flags"], {}, {"mlhat_micro_f1": False})
    flags = out[out["dataset"] == "flags"].iloc[0]
    hours = planned_cpu_s("mlhat_ht", "flags") / 3600
    assert flags["coverage"] == "not run"
    assert flags["note"] == f"not run: not in this grid's cells (planned {hours:.2g} CPU-hours)"
    assert summary_line(out).endswith(
        f"1 not run: outside this grid's cells (planned {float(f'{hours:.2g}'):.1f} CPU-hours)."
    )


def test_the_stream_benchmarks_table_shows_published_columns_and_cells_not_run(tmp_path):
    """results/stream_benchmark: a published-only column gives the table's figure alone, a river column's cell
    not run gives "not run / the table's figure", and the not-run list names its planned CPU."""
    source = "results/stream_benchmark/table.csv"
    table = pd.read_csv(ROOT / source, dtype={"note": str}).fillna({"note": ""})
    cells = table[table["metric"] == "mlhat_micro_f1"].set_index(["dataset", "algorithm"])
    published = cells.loc[("flags", "MLHAT (published)")]
    not_run = cells[cells["coverage"] == "not run"].reset_index().iloc[0]
    doc = tmp_path / "doc.md"
    markers = (
        f'metric=mlhat_micro_f1 datasets={not_run["dataset"]} algorithms="MLHAT (published),{not_run["algorithm"]}" '
        "rows=algorithm columns=dataset cell=mean/paper decimals=3",
        f'summary=not-run metric=mlhat_micro_f1 datasets={not_run["dataset"]} algorithms="{not_run["algorithm"]}"',
    )
    doc.write_text("".join(f"<!-- olb:table {source} {m} -->\n<!-- /olb:table -->\n" for m in markers))
    assert main(["--root", str(ROOT), str(doc)]) == 0
    text = doc.read_text()
    assert f"| MLHAT (published) | {cells.loc[(not_run['dataset'], 'MLHAT (published)'), 'paper']:.3f} |" in text
    assert f"| {not_run['algorithm']} | not run / {not_run['paper']:.3f} |" in text
    assert f"| {not_run['dataset']} | {not_run['algorithm']} | {not_run['note']} |" in text
    assert "planned" in not_run["note"] and published["coverage"] == "published"


def test_a_run_beside_another_counts_each_cell_once_its_measured_row_first(tmp_path):
    # the union-order run lists emotions' cells as absent (not in its grid) and the published columns as the main
    # run does: beside it, emotions' counts are the main run's and flags-union's the union run's
    main_run, union_run = "results/stream_benchmark/table.csv", "results/stream_benchmark_union/table.csv"
    rule = "metric=mlhat_example_f1,mlhat_micro_f1"

    def counts(sources: str, datasets: str) -> dict[str, str]:
        doc = tmp_path / "counts.md"
        doc.write_text(f"<!-- olb:table {sources} summary=counts {rule} datasets={datasets} -->\n<!-- /olb:table -->\n")
        assert main(["--root", str(ROOT), str(doc)]) == 0
        return {line.split(" | ")[0]: line for line in doc.read_text().splitlines()[3:-2]}

    together = counts(f"{main_run},{union_run}", "flags-union,emotions")
    assert together["| emotions"] == counts(main_run, "emotions")["| emotions"]
    assert together["| flags-union"] == counts(union_run, "flags-union")["| flags-union"]
