"""Results as data: a grid's ``export=DIR`` (olb/grid/reporting/export.py), the docs' tables generated from it and checked
(olb/ops/doc_tables.py), and the console's comparability notes (olb/grid/reporting/report.py)."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pandas as pd
import pytest

import olb
import olb.ops.testing  # noqa: F401 - registers _grid_stub in this process
from olb.grid import compose, run_grid
from olb.ops.doc_tables import DocTableError, main

OVERRIDES = ["backend=serial", "tracking=off", "seeds=2", "num_learners=2", "algorithm.onlinebmr.params.gamma=[0.1]"]
MARKER = "<!-- olb:table results/tiny/table.csv metric=rank_loss algorithms=Ada.OLMR,OnlineBMR -->"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    overrides = [*OVERRIDES, f"export={root / 'results' / 'tiny'}"]
    console = io.StringIO()
    outcome = run_grid(compose(overrides), root / "out", overrides, stream=console)
    return root, outcome, console.getvalue()


def test_export_writes_the_tables_cells_and_how_they_were_made(exported):
    root, outcome, _ = exported
    dest = root / "results" / "tiny"
    assert outcome.exit_code == 0 and outcome.files["export"] == dest
    # table.md as the grid wrote it, but for the export folder in its title's overrides
    exported_md, written_md = (dest / "table.md").read_text(), outcome.files["table_md"].read_text()
    assert str(dest) in written_md and str(dest) not in exported_md
    assert exported_md == written_md.replace(f" export={dest}", "")
    pd.testing.assert_frame_equal(pd.read_csv(dest / "table.csv"), pd.read_csv(outcome.files["table_csv"]))
    cells = pd.read_csv(dest / "cells.csv")
    assert len(cells) == 4 and not {"host", "node_ip", "run_id"} & set(cells.columns)
    meta = json.loads((dest / "meta.json").read_text())
    # the command reproduces the results, pasted into a shell: the export folder (a path of this machine) is left
    # out, the list's brackets quoted
    assert shlex.split(meta["command"]) == ["python", "-m", "olb.grid", *OVERRIDES]
    assert "'algorithm.onlinebmr.params.gamma=[0.1]'" in meta["command"]
    assert meta["olb_version"].startswith(olb.__version__)
    assert meta["cells"] == meta["cells_finished"] == 4 and meta["cpu_s"] > 0
    assert meta["machine"]["cores"] >= 1 and meta["machine"]["cpu"]


def test_console_prints_the_comparability_notes(exported):
    _, outcome, console = exported
    notes = outcome.table[outcome.table["note"].str.startswith("not comparable")]
    assert len(notes) >= 2  # 2 seeds and 2 trees: neither booster is at the paper's settings
    assert f"olb.grid: {len(notes)} value(s) without the paper's beside them" in console
    assert "emotions Ada.OLMR rank_loss: not comparable: paper (100 trees, 10 seeds) 0.1600;" in console


def _doc(root, body: str = "") -> str:
    doc = root / "doc.md"
    doc.write_text(f"# A doc\n\ntext\n\n{MARKER}\n{body}<!-- /olb:table -->\n\nmore text\n")
    return str(doc)


def test_docs_generates_the_table_and_check_fails_on_a_hand_edit(exported, capsys):
    root, outcome, _ = exported
    doc = _doc(root)
    assert main(["--check", "--root", str(root), doc]) == 1  # an empty table is out of date
    assert main(["--root", str(root), doc]) == 0
    text = (root / "doc.md").read_text()
    ada = outcome.table.query("algorithm == 'Ada.OLMR' and metric == 'rank_loss'").iloc[0]
    assert f"| emotions | {ada['mean']:.4f} ± {ada['std']:.4f} |" in text and text.endswith("more text\n")
    assert main(["--check", "--root", str(root), doc]) == 0
    capsys.readouterr()
    edited = text.replace(f"{ada['mean']:.4f}", f"{ada['mean'] + 0.0001:.4f}")
    (root / "doc.md").write_text(edited)
    assert main(["--check", "--root", str(root), doc]) == 1
    err = capsys.readouterr().err
    line = edited.splitlines().index(next(x for x in edited.splitlines() if x.startswith("| emotions"))) + 1
    assert f"{doc}:{line}: table results/tiny/table.csv differs from its result file" in err
    assert f"in the doc:    | emotions | {ada['mean'] + 0.0001:.4f}" in err
    assert (root / "doc.md").read_text() == edited  # --check changes nothing


def test_a_marker_naming_what_the_results_lack_is_refused(exported, capsys):
    root, _, _ = exported
    doc = root / "bad.md"
    doc.write_text(MARKER.replace("OnlineBMR", "FALT") + "\n<!-- /olb:table -->\n")
    assert main(["--check", "--root", str(root), str(doc)]) == 2
    assert "bad.md:1: results/tiny/table.csv has no algorithm FALT" in capsys.readouterr().err
    with pytest.raises(DocTableError, match="marker option 'colour=red' is not one of"):
        from olb.ops.doc_spec import TableSpec

        TableSpec.parse("results/tiny/table.csv colour=red", "x.md:1")


def test_several_result_files_give_one_table_and_a_pair_given_twice_is_refused(exported, capsys):
    root, outcome, _ = exported
    other = root / "results" / "other"
    other.mkdir(exist_ok=True)
    beside = outcome.table.query("algorithm == 'Ada.OLMR'").assign(algorithm="Ada.OLMR (other run)", mean=0.5)
    beside.to_csv(other / "table.csv", index=False)
    sources = "results/tiny/table.csv,results/other/table.csv"
    doc = root / "two.md"
    columns = 'algorithms="Ada.OLMR (other run),Ada.OLMR"'  # a value with spaces, quoted
    doc.write_text(f"<!-- olb:table {sources} metric=rank_loss {columns} -->\n<!-- /olb:table -->\n")
    assert main(["--root", str(root), str(doc)]) == 0
    header, _, first = doc.read_text().splitlines()[3:6]
    assert header == "| dataset | Ada.OLMR (other run) | Ada.OLMR |"
    assert first.startswith("| emotions | 0.5000 ± ")
    doc.write_text("<!-- olb:table results/tiny/table.csv,results/tiny/table.csv -->\n<!-- /olb:table -->\n")
    assert main(["--check", "--root", str(root), str(doc)]) == 2
    assert "give emotions Ada.OLMR rank_loss more than once" in capsys.readouterr().err


def _cells_doc(root, name: str, options: str, source: str = "results/tiny/cells.csv") -> Path:
    doc = root / name
    doc.write_text(f"<!-- olb:table {source} {options} -->\n<!-- /olb:table -->\n")
    return doc


def test_a_cells_marker_gives_the_mean_over_seeds_and_check_fails_on_a_hand_edit(exported, capsys):
    root, _, _ = exported
    cells = pd.read_csv(root / "results" / "tiny" / "cells.csv").query("label == 'OnlineBMR'")
    doc = _cells_doc(root, "cells.md", "metric=rank_loss algorithms=OnlineBMR columns=gamma")
    assert main(["--root", str(root), str(doc)]) == 0
    mean, std = cells["rank_loss"].mean(), cells["rank_loss"].std(ddof=1)
    assert f"| dataset | 0.1 |\n|---|---|\n| emotions | {mean:.4f} ± {std:.4f} |\n" in doc.read_text()
    assert main(["--check", "--root", str(root), str(doc)]) == 0
    doc.write_text(doc.read_text().replace(f"{mean:.4f}", f"{mean + 0.0001:.4f}"))
    capsys.readouterr()
    assert main(["--check", "--root", str(root), str(doc)]) == 1
    assert "table results/tiny/cells.csv differs from its result file" in capsys.readouterr().err


def test_a_cells_marker_names_each_setting_that_differs_and_counts_finished_cells_only(exported, capsys):
    root, _, _ = exported
    cells = pd.read_csv(root / "results" / "tiny" / "cells.csv")
    bmr = cells[cells["label"] == "OnlineBMR"]
    # a second gamma, as a sweep over gamma gives it; one of its two seeds failed
    other = bmr.assign(gamma=0.05, cell_id=bmr["cell_id"] + "-2", rank_loss=bmr["rank_loss"] + 0.1)
    other.loc[other.index[1], ["status", "rank_loss"]] = ["FAILED", float("nan")]
    (root / "results" / "swept").mkdir(exist_ok=True)
    pd.concat([cells, other]).to_csv(root / "results" / "swept" / "cells.csv", index=False)
    source = "results/swept/cells.csv"

    doc = _cells_doc(root, "swept.md", "metric=rank_loss", source)
    assert main(["--check", "--root", str(root), str(doc)]) == 2
    assert "cells of results/swept/cells.csv differ in gamma (OnlineBMR on emotions): name each in rows or" in (
        capsys.readouterr().err
    )
    doc = _cells_doc(root, "swept.md", "metric=rank_loss algorithms=OnlineBMR columns=gamma", source)
    assert main(["--root", str(root), str(doc)]) == 0
    header, _, row = doc.read_text().splitlines()[3:6]
    assert header == "| dataset | 0.05 | 0.1 |"  # by number, not by the order of the cells
    assert row.startswith(f"| emotions | {other['rank_loss'].iloc[0]:.4f} (partial: 1/2 seeds) | ")

    for options, message in [
        ("columns=gamma", "needs metric= among the columns its cells measured (runtime_s, "),
        ("metric=accuracy", "; accuracy is not one"),
        ("metric=rank_loss columns=colour", "rows/columns colour are not among dataset, algorithm, metric, "),
        ("metric=rank_loss algorithms=onlinebmr", "has no algorithm onlinebmr (it has Ada.OLMR, OnlineBMR)"),
    ]:
        doc = _cells_doc(root, "bad.md", options, source)
        assert main(["--check", "--root", str(root), str(doc)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"olb.ops.doc_tables: {doc}:1: ") and message in err, (options, err)


def test_an_unavailable_data_sets_message_names_no_folder_of_this_machine(tmp_path):
    data_dir = tmp_path / "my-private-data"
    data_dir.mkdir()
    dest = tmp_path / "results" / "partial"
    # image: no copy in data_dir; rcv1v2_industries: no checksum to download with (its message names its config)
    overrides = [*OVERRIDES, "datasets=[emotions,image,rcv1v2_industries]", f"data_dir={data_dir}", f"export={dest}"]
    outcome = run_grid(
        compose([*overrides, "allow_unavailable=true"]), tmp_path / "out", overrides, stream=io.StringIO()
    )
    assert outcome.n_unavailable > 0
    written = pd.read_csv(outcome.files["cells"])
    assert written["error"].fillna("").str.contains(str(data_dir), regex=False).any()  # the grid's own copy says where
    exported = pd.read_csv(dest / "cells.csv")["error"].fillna("")
    package = str(Path(olb.__file__).resolve().parent)
    assert written["error"].fillna("").str.contains(package, regex=False).any()
    assert not exported.str.contains(str(tmp_path), regex=False).any()
    assert not exported.str.contains(package, regex=False).any()
    assert exported.str.contains("$OLB_DATA_DIR", regex=False).any()
    assert exported.str.contains("(olb/conf/dataset/rcv1v2_industries.yaml)", regex=False).any()
