"""The docs' leaderboard tables (olb/ops/doc_tables.py): a leaderboard's ranks.csv rendered with its best
marked, and counted claims ("A beats B on k of n data sets") generated from a table.csv."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from olb.ops.doc_tables import main
from olb.grid.reporting.leaderboard import compare, write_report

DATASETS = [f"d{i}" for i in range(6)]


def _table(root, rows: list[tuple[str, str, str, float]]) -> str:
    """results/run/table.csv with the columns the docs read; ``rows``: (dataset, algorithm, metric, mean)."""
    path = root / "results" / "run" / "table.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows, columns=["dataset", "algorithm", "metric", "mean"])
    frame.assign(
        std=0.0, n_seeds=1, n_planned=1, paper=np.nan, diff=np.nan, selected="", note="", partial=False
    ).to_csv(path, index=False)
    return "results/run/table.csv"


def _doc(root, spec: str, name: str = "doc.md") -> str:
    doc = root / name
    doc.write_text(f"# Board\n\n<!-- olb:table {spec} -->\n<!-- /olb:table -->\n")
    return str(doc)


def _rendered(root, spec: str) -> list[str]:
    doc = _doc(root, spec)
    assert main(["--root", str(root), doc]) == 0
    text = (root / "doc.md").read_text()
    return text[text.index("-->\n") + 4 : text.index("<!-- /olb:table")].splitlines()


@pytest.fixture
def board(tmp_path):
    """A leaderboard folder written by the report: "best" first on f1, "low" first on loss, "rare" not ranked."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.6, size=(6, 1))
    f1 = pd.DataFrame(
        base + np.array([0.2, 0.1, 0.0]) + rng.normal(0, 0.01, (6, 3)), index=DATASETS, columns=["best", "mid", "low"]
    )
    f1["rare"] = [0.9] + [np.nan] * 5
    loss = pd.DataFrame({"best": 0.3, "mid": 0.2, "low": 0.1}, index=DATASETS) + rng.normal(0, 0.01, (6, 3))
    rows = [(d, a, m, b.loc[d, a]) for m, b in (("f1", f1), ("loss", loss)) for d in DATASETS for a in b.columns]
    table = pd.DataFrame(rows, columns=["dataset", "algorithm", "metric", "mean"]).dropna()
    cells = pd.DataFrame(
        [
            {"status": "FINISHED", "dataset": d, "label": a, "train_us_per_example": us * (1 + i)}
            for a, us in (("best", 1500.0), ("mid", 20.0), ("low", 3.0), ("rare", 7.0))
            for i, d in enumerate(DATASETS)
            if a != "rare" or i == 0  # rare ran on d0 only
        ]
    )
    folder = tmp_path / "results" / "run" / "leaderboard"
    write_report(table, cells, {"f1": False, "loss": True}, folder)
    return tmp_path, compare(f1, "f1", False), compare(loss, "loss", True)


def test_the_mean_ranks_are_rendered_best_first_with_the_best_of_each_metric_bold(board):
    root, f1, loss = board
    lines = _rendered(root, "results/run/leaderboard/ranks.csv runtime=median")
    assert lines[0] == "| learner | f1 | loss | training CPU per example (µs, median over data sets) |"
    learners = [line.split(" | ")[0].lstrip("| ") for line in lines[2:]]
    assert learners == ["best", "mid", "low", "rare", "data sets ranked on", "Friedman p"]
    # best's training CPU: 1500 x (1..6), median 5250
    assert lines[2] == f"| best | **{f1.mean_ranks['best']:.2f}** | {loss.mean_ranks['best']:.2f} | 5,250 |"
    assert lines[4] == f"| low | {f1.mean_ranks['low']:.2f} | **{loss.mean_ranks['low']:.2f}** | 10.5 |"
    assert lines[5] == "| rare | not ranked |  | 7 |"  # on 1 of 6 data sets: listed, not ranked; no loss at all
    assert lines[6] == "| data sets ranked on | 6 | 6 |  |"
    assert lines[7] == f"| Friedman p | {f1.friedman_p:.2g} | {loss.friedman_p:.2g} |  |"


def test_chosen_learners_metrics_and_data_sets_runtimes(board):
    root, _, loss = board
    lines = _rendered(
        root, "results/run/leaderboard/ranks.csv metric=loss algorithms=low,best runtime=d0,d5 decimals=1"
    )
    assert lines[0] == "| learner | loss | training CPU per example (µs), d0 / d5 |"
    assert lines[2] == f"| low | **{loss.mean_ranks['low']:.1f}** | 3 / 18 |"
    assert lines[3] == f"| best | {loss.mean_ranks['best']:.1f} | 1,500 / 9,000 |"


def test_a_hand_edited_rank_fails_the_check(board, capsys):
    root, f1, _ = board
    doc = _doc(root, "results/run/leaderboard/ranks.csv")
    assert main(["--root", str(root), doc]) == 0
    text = (root / "doc.md").read_text()
    edited = text.replace(f"**{f1.mean_ranks['best']:.2f}**", "**0.99**")
    assert edited != text
    (root / "doc.md").write_text(edited)
    assert main(["--check", "--root", str(root), doc]) == 1
    assert "in the doc:    | best | **0.99**" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("results/run/leaderboard/ranks.csv algorithms=best,nobody", "ranks.csv has no learner nobody"),
        ("results/run/leaderboard/ranks.csv metric=f1,auc", "ranks.csv has no metric auc"),
        ("results/run/leaderboard/ranks.csv runtime=d0,d9", "has no data set d9 (train_us.csv)"),
        ("results/run/leaderboard/ranks.csv bold=true", "option(s) bold do not apply to"),
        ("results/other/leaderboard/ranks.csv", "result file results/other/leaderboard/ranks.csv does not exist"),
    ],
)
def test_a_ranks_marker_asking_for_what_is_not_there_is_refused(board, capsys, spec, message):
    root, _, _ = board
    assert main(["--check", "--root", str(root), _doc(root, spec)]) == 2
    assert message in capsys.readouterr().err


def test_wins_count_the_data_sets_where_one_learner_is_strictly_better(tmp_path):
    rows = [
        # f1 (higher is better): A above B on d0, d1, d3; tied on d2; B above on d4; B alone on d5
        *[(d, "A", "f1", a) for d, a in zip(DATASETS[:5], [0.6, 0.7, 0.5, 0.9, 0.1])],
        *[(d, "B", "f1", b) for d, b in zip(DATASETS, [0.5, 0.6, 0.5, 0.8, 0.2, 0.4])],
        # hamming_loss (lower is better): A below B only on d0
        *[(d, "A", "hamming_loss", a) for d, a in zip(DATASETS, [0.1, 0.3, 0.3, 0.3, 0.3, 0.3])],
        *[(d, "B", "hamming_loss", 0.2) for d in DATASETS],
    ]
    source = _table(tmp_path, rows)
    lines = _rendered(tmp_path, f"{source} wins=A:B,B:A")
    assert lines[0] == "| learner | better than | f1 | hamming_loss |"
    assert lines[2] == "| A | B | 3 of 5 (not d2, d4; tied: d2) | 1 of 6 (d0) |"
    assert lines[3] == "| B | A | 1 of 5 (d4; tied: d2) | 5 of 6 (not d0) |"
    assert _rendered(tmp_path, f"{source} metric=f1 datasets=d0,d1,d4 wins=A:B")[2] == "| A | B | 2 of 3 (not d4) |"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("wins=A:C", "wins: no algorithm C"),
        ("wins=A", "each pair is LEARNER:LEARNER"),
        ("wins=A:B", "cpu_s has no better direction"),
    ],
)
def test_a_wins_marker_that_cannot_be_counted_is_refused(tmp_path, capsys, spec, message):
    rows = [(d, a, m, 0.5) for d in DATASETS for a in ("A", "B") for m in ("f1", "cpu_s")]
    source = _table(tmp_path, rows)
    assert main(["--check", "--root", str(tmp_path), _doc(tmp_path, f"{source} {spec}")]) == 2
    assert message in capsys.readouterr().err


def _quoting(root, spec: str, sentence: str) -> str:
    doc = root / "quote.md"
    doc.write_text(f"# Claims\n\nOn d0 <!-- olb:quote {spec} -->{sentence}<!-- /olb:quote -->.\n")
    return str(doc)


@pytest.mark.parametrize(
    ("sentence", "culprit"),
    [
        (".580 F1 against B's 0.12 (3,254 µs)", None),
        (".581 F1 against B's 0.12 (3,254 µs)", "d0/A/f1 is 0.5801, which the sentence does not quote"),
        ("B's 0.12 against .580 for A (3,254 µs)", "d0/B/f1 is 0.1234, which the sentence does not quote after"),
        (".58 F1 against B's 0.12 (3,253 µs)", "d0/A/cpu_us is 3253.7"),
    ],
)
def test_a_sentence_quoting_a_table_is_checked_cell_by_cell_in_order(tmp_path, capsys, sentence, culprit):
    source = _table(tmp_path, [("d0", "A", "f1", 0.5801), ("d0", "B", "f1", 0.1234), ("d0", "A", "cpu_us", 3253.7)])
    doc = _quoting(tmp_path, f"{source} d0/A/f1 d0/B/f1 d0/A/cpu_us", sentence)
    for mode in (["--check"], []):  # a quote is never rewritten: `make docs` fails on it too
        assert main([*mode, "--root", str(tmp_path), doc]) == (0 if culprit is None else 1)
        err = capsys.readouterr().err
        assert (culprit is None and err == "") or (culprit in err and "quote.md:3:" in err)


def test_a_quote_of_a_cell_that_is_not_there_or_of_a_mean_rank(board, capsys):
    root, _, _ = board
    ranks = "results/run/leaderboard/ranks.csv"
    best = pd.read_csv(root / ranks).query("metric == 'f1' and learner == 'best'")["mean_rank"].iloc[0]
    assert main(["--check", "--root", str(root), _quoting(root, f"{ranks} f1/best", f"best ranks {best:.2f}")]) == 0
    assert main(["--check", "--root", str(root), _quoting(root, f"{ranks} f1/nobody", "nobody ranks 1.00")]) == 1
    assert "has no single cell 'f1/nobody' (metric/learner[:column]; 0 found)" in capsys.readouterr().err
