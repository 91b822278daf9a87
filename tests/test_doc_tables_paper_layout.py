"""A paper's table generated in its own units and shape (olb/ops/doc_tables.py: ``scale``,
``cell=mean/paper``, ``setting=column``, ``summary=coverage``), from the ALT paper's exported run (results/alt_table2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from olb.grid.reporting.coverage import summary_line
from olb.ops.doc_tables import main

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "results/alt_table2/table.csv"
LAYOUT = "rows=dataset,algorithm columns=metric scale=100 decimals=2 cell=mean/paper setting=column bold=true"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(ROOT / SOURCE, dtype={"note": str, "selected": str}).fillna({"note": "", "selected": ""})


def _generated(tmp_path: Path, options: str) -> tuple[Path, list[str]]:
    doc = tmp_path / "doc.md"
    doc.write_text(f"<!-- olb:table {SOURCE} {options} -->\n<!-- /olb:table -->\n")
    assert main(["--root", str(ROOT), str(doc)]) == 0
    return doc, doc.read_text().splitlines()[1:-1]


def test_ours_and_the_papers_in_percent_with_the_setting_in_its_own_column(tmp_path, table):
    doc, lines = _generated(tmp_path, f"datasets=yeast,bibtex algorithms=SALT,FALT(k),OSML-ELM {LAYOUT}")
    assert lines[0].startswith("| dataset | algorithm | setting | precision_unlabelled1 |")
    # rows follow the datasets option, then the algorithms option (a data set without a method has no row)
    assert [line.split(" | ")[:2] for line in lines[2:]] == [
        ["| yeast", "FALT(k)"],
        ["| yeast", "OSML-ELM"],
        ["| bibtex", "SALT"],
        ["| bibtex", "OSML-ELM"],
    ]
    salt = table.query("dataset == 'bibtex' and algorithm == 'SALT'").set_index("metric")
    f1, recall = salt.loc["f1_unlabelled1"], salt.loc["recall_unlabelled1"]
    assert f1["best"] and not f1["coverage"] == "missed"
    assert recall["best"] and recall["coverage"] == "missed"
    row = next(line for line in lines if line.startswith("| bibtex | SALT |"))
    assert f"| {salt['selected'].iloc[0]} |" in row
    assert f"| **{100 * f1['mean']:.2f}** / {100 * f1['paper']:.2f} |" in row  # bold: the best (paired t-test)
    assert f"| ***{100 * recall['mean']:.2f}*** / {100 * recall['paper']:.2f} |" in row  # italics: missed
    osml = table.query("dataset == 'yeast' and algorithm == 'OSML-ELM' and metric == 'hamming_loss'").iloc[0]
    assert osml["coverage"] == "missed" and not osml["best"]
    assert f"| *{100 * osml['mean']:.2f}* / {100 * osml['paper']:.2f} |" in lines[3]


def test_a_changed_number_in_the_paper_layout_fails_the_check(tmp_path, capsys):
    doc, lines = _generated(tmp_path, f"datasets=emotions algorithms=FALT(k) {LAYOUT}")
    assert main(["--check", "--root", str(ROOT), str(doc)]) == 0
    text = doc.read_text()
    paper = lines[2].split(" / ")[1].split(" |")[0]  # the paper's first figure, as generated
    doc.write_text(text.replace(f" / {paper} |", f" / {float(paper) + 0.01:.2f} |", 1))
    assert main(["--check", "--root", str(ROOT), str(doc)]) == 1
    assert f"{doc}:4: table {SOURCE} differs from its result file" in capsys.readouterr().err


def test_an_unavailable_data_set_shows_the_papers_figure_beside_the_reason(tmp_path, table):
    _, lines = _generated(tmp_path, f"datasets=mediamill algorithms=FALT(k) metric=f1_unlabelled1 {LAYOUT}")
    paper = table.query("dataset == 'mediamill' and algorithm == 'FALT(k)' and metric == 'f1_unlabelled1'")["paper"]
    assert lines[2] == f"| mediamill | FALT(k) |  | unavailable / {100 * paper.iloc[0]:.2f} |"


def test_the_coverage_summary_is_generated_and_checked(tmp_path, table, capsys):
    doc, lines = _generated(tmp_path, "summary=coverage")
    assert lines == [summary_line(table)]
    assert "118 within tolerance, 29 missed" in lines[0]
    doc.write_text(doc.read_text().replace("118 within", "119 within"))
    assert main(["--check", "--root", str(ROOT), str(doc)]) == 1
    assert "in the doc:    Coverage of the paper's table: 343 cells" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("source", "options", "message"),
    [
        (SOURCE, "cell=ours", "marker option cell=ours is not one of full, mean/paper"),
        (SOURCE, "scale=percent", "marker option scale=percent is not a number"),
        (SOURCE, "setting=row", "marker option setting=row is not one of cell, column"),
        # one row per data set, one column per method: a row's entries come from differently selected settings
        (SOURCE, "datasets=bibtex metric=macro_f1 setting=column", "but bibtex has entries selected differently"),
        ("results/table3/table.csv", "summary=coverage", "has no coverage column"),
    ],
)
def test_a_layout_the_results_cannot_give_is_refused_by_name(tmp_path, capsys, source, options, message):
    doc = tmp_path / "bad.md"
    doc.write_text(f"text\n<!-- olb:table {source} {options} -->\n<!-- /olb:table -->\n")
    assert main(["--check", "--root", str(ROOT), str(doc)]) == 2
    err = capsys.readouterr().err
    assert "bad.md:2: " in err and message in err


def test_two_runs_side_by_side_give_each_cell_once_or_are_refused(tmp_path, capsys):
    # both runs list rcv1v2's rows (not available here): only the rows a table shows must be given once
    sources = f"{SOURCE},results/alt_osml_elm_500/table.csv"
    doc = tmp_path / "two.md"
    algorithms = 'algorithms="OSML-ELM (500 units),OSML-ELM" metric=f1_unlabelled1'
    layout = "rows=algorithm columns=metric scale=100 decimals=2 cell=mean/paper"
    doc.write_text(f"<!-- olb:table {sources} datasets=bibtex {algorithms} {layout} -->\n<!-- /olb:table -->\n")
    assert main(["--root", str(ROOT), str(doc)]) == 0
    rows = doc.read_text().splitlines()[5:7]  # under the section's title, the header and its rule
    assert [row.split(" | ")[0] for row in rows] == ["| OSML-ELM (500 units)", "| OSML-ELM"]
    # FALT(l) is outside the second run's grid: its row there gives way to the first run's (unavailable here)
    doc.write_text(f"<!-- olb:table {sources} datasets=rcv1v2_topics algorithms=FALT(l) -->\n<!-- /olb:table -->\n")
    assert main(["--root", str(ROOT), str(doc)]) == 0
    assert "| rcv1v2_topics | unavailable [" in doc.read_text() and "absent" not in doc.read_text()
    # two runs' own rows of one cell are refused
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    for copy in ("a", "b"):
        (tmp_path / copy / "table.csv").write_text((ROOT / SOURCE).read_text())
    doc.write_text("<!-- olb:table a/table.csv,b/table.csv datasets=bibtex -->\n<!-- /olb:table -->\n")
    assert main(["--check", "--root", str(tmp_path), str(doc)]) == 2
    assert "more than once" in capsys.readouterr().err
