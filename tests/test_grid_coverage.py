"""olb.grid.reporting.coverage: every row of a paper's table listed and counted (synthetic outcomes; alt_table2's plan)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from olb.grid import compose, plan_grid
from olb.grid.reporting.coverage import cover, summary_line, with_summary
from olb.grid.reporting.references import load_reference
from olb.grid.reporting.table import TABLE_COLUMNS

COLUMNS = list(TABLE_COLUMNS)
ENTRIES = {
    "falt": {"label": "FALT", "paper_name": "FALT", "algorithm": "falt"},
    "elm": {"label": "ELM*", "paper_name": "ELM", "algorithm": "elm_omll_star"},
}
LOWER = {"f1": False, "hl": True}


def _row(dataset, algorithm, metric, mean, paper):
    """A synthetic outcome as build_table reports it, without note and best."""
    n = 0 if math.isnan(mean) else 20
    return dict(zip(COLUMNS, [dataset, algorithm, metric, mean, 0.01, n, paper, mean - paper, 20, 1, 1, False, "", 0]))


def _table(rows):
    return pd.DataFrame([{**_row(*r[:5]), "note": r[5] if len(r) > 5 else "", "best": False} for r in rows])


@pytest.fixture
def ref_cfg(tmp_path):
    lines = ["paper,table,dataset,algorithm,metric,value,std,note"]
    for ds in ("small", "gone", "nogrid"):
        for alg in ("FALT", "ELM", "OTHER"):
            lines += [f"P,T2,{ds},{alg},f1_x100,50.00,1,", f"P,T2,{ds},{alg},hl_x100,10.00,1,"]
    lines.append("P,T2,small,FALT,time_s,3.0,,")  # a metric the table does not report: ignored
    lines.append("Q,T2,small,FALT,f1_x100,1.00,,")  # another paper: ignored
    (tmp_path / "ref.csv").write_text("\n".join(lines) + "\n")
    return SimpleNamespace(
        file=str(tmp_path / "ref.csv"),
        paper="P",
        table="T2",
        metrics={"f1": "f1_x100", "hl": "hl_x100"},
        datasets={},
        scale=100.0,
        tolerance={"f1": 0.02, "hl": 0.005},
    )


def test_every_paper_row_is_listed_and_counted(ref_cfg):
    table = _table(
        [
            ("small", "FALT", "f1", 0.515, 0.50),  # within (1.5 points)
            ("small", "FALT", "hl", 0.09, 0.10),  # a loss 1 point lower: within ("or better")
            ("small", "ELM*", "f1", 0.40, 0.50),  # a stand-in, whatever its distance
            ("small", "ELM*", "hl", 0.10, 0.10),
            ("gone", "FALT", "f1", math.nan, 0.50, "unavailable"),
            ("gone", "FALT", "hl", math.nan, 0.10, "unavailable"),
            ("gone", "ELM*", "f1", math.nan, 0.50, "unavailable"),
            ("gone", "ELM*", "hl", math.nan, 0.10, "unavailable"),
        ]
    )
    table.loc[len(table)] = {**_row("small", "FALT", "extra", 0.3, math.nan), "note": "", "best": False}
    table.loc[len(table)] = {**_row("nogrid", "ELM*", "f1", math.nan, 0.5), "note": "not run", "best": False}
    out = cover(table, ref_cfg, ENTRIES, ["small", "gone"], {"gone": "could not download"}, LOWER)
    by = {(r.dataset, r.algorithm, r.metric): r for r in out.itertuples()}
    assert by[("small", "FALT", "f1")].coverage == "within"
    assert by[("small", "FALT", "hl")].coverage == "within"
    assert by[("small", "FALT", "hl")].coverage_symmetric == "missed"  # 1 point below, tolerance 0.5 either side
    assert by[("small", "ELM*", "f1")].coverage == "stand-in"
    assert by[("small", "FALT", "extra")].coverage == ""  # no paper value: not counted
    assert by[("gone", "FALT", "f1")].coverage == "absent"
    assert by[("gone", "FALT", "f1")].note.startswith("unavailable: data not available offline")
    # rows the grid never produced: one per metric, with the reason
    assert by[("small", "OTHER", "f1")].note == "absent: the method is not in this grid"
    assert by[("nogrid", "FALT", "hl")].note == "absent: the data set is not in this grid"
    assert by[("nogrid", "FALT", "hl")].paper == pytest.approx(0.10)
    assert by[("nogrid", "ELM*", "f1")].coverage == "not run"
    assert len(out.drop_duplicates(["dataset", "algorithm"])) == 9 + 0  # 3 data sets x 3 paper methods
    line = summary_line(out)
    assert line.startswith("Coverage of the paper's table: 18 cells (9 rows): 2 within tolerance, 0 missed")
    assert "13 absent; data not available offline: gone, 2 produced by a stand-in, 1 not run yet" in line
    assert "with the tolerance either side: 1 within, 1 missed)" in line


def test_misses_on_either_side(ref_cfg):
    table = _table(
        [
            ("small", "FALT", "f1", 0.53, 0.50),  # 3 points above: missed, on the better side
            ("small", "FALT", "hl", 0.106, 0.10),  # 0.6 points above a loss: missed
        ]
    )
    out = cover(table, ref_cfg, {"falt": ENTRIES["falt"]}, ["small"], {}, LOWER)
    mine = out[out["algorithm"] == "FALT"].set_index(["dataset", "metric"])
    assert mine.loc[("small", "f1"), "coverage"] == "missed" and mine.loc[("small", "f1"), "better"]
    assert mine.loc[("small", "hl"), "coverage"] == "missed" and not mine.loc[("small", "hl"), "better"]
    assert "2 missed (1 of them on the better side;" in summary_line(out)
    md = with_summary("# t\n\npivot\n\n## All values\n\nlong\n", out, ref_cfg)
    assert md.index("Coverage of the paper's table") < md.index("## All values")


def test_a_label_with_a_parenthesis_is_the_row_it_produced(ref_cfg):
    entries = {"falt": {**ENTRIES["falt"], "label": "FALT (500 units)"}}
    table = _table([("small", "FALT (500 units)", "f1", 0.515, 0.50), ("small", "FALT (500 units)", "hl", 0.1, 0.1)])
    out = cover(table, ref_cfg, entries, ["small"], {}, LOWER)
    mine = out[(out["dataset"] == "small") & (out["algorithm"] == "FALT (500 units)")]
    assert sorted(mine["coverage"]) == ["within", "within"]  # not listed again as "absent: not run"


def test_without_tolerance_the_table_is_unchanged(ref_cfg):
    table = _table([("small", "FALT", "f1", 0.515, 0.50)])
    ref_cfg.tolerance = {}
    assert cover(table, ref_cfg, ENTRIES, ["small"], {}, LOWER) is table
    assert with_summary("x", table, ref_cfg) == "x"


def test_alt_table2_covers_the_papers_49_rows():
    """Every row of paper 002's Table 2 is a (data set, method) of alt_table2's plan, with all 7 values."""
    cfg = compose(["+experiment=alt_table2"])
    ref = load_reference(cfg.reference)
    rows = ref.groupby(["dataset", "algorithm"]).size()
    assert len(rows) == 49 and set(rows) == {7}
    plan = plan_grid(cfg)
    names = {info["paper_name"]: key for key, info in plan.entries.items()}
    planned = {(c.dataset, c.entry) for c in plan.cells}
    missing = [(ds, alg) for ds, alg in rows.index if (ds, names.get(alg)) not in planned]
    assert not missing


def test_a_published_only_method_is_listed_as_published_never_as_a_run(ref_cfg, tmp_path):
    lines = ["paper,table,dataset,algorithm,metric,value,std,note", "P,T2,small,FALT,f1_x100,50.00,,"]
    lines.append("P,T2,small,MLHAT,f1_x100,60.00,,published only: the paper's own tree")
    (tmp_path / "published.csv").write_text("\n".join(lines) + "\n")
    ref_cfg.file = str(tmp_path / "published.csv")
    table = _table([("small", "FALT", "f1", 0.515, 0.50)])
    out = cover(table, ref_cfg, {"falt": ENTRIES["falt"]}, ["small"], {}, LOWER)
    published = out[out["algorithm"] == "MLHAT (published)"].iloc[0]
    assert published.coverage == "published" and published.n_seeds == 0 and math.isnan(published["mean"])
    assert published.paper == pytest.approx(0.60) and published.note == "published: the paper's own tree"
    line = summary_line(out)
    assert "1 within tolerance, 0 missed" in line and "0 absent" in line and "1 published only" in line
