"""Rank comparisons across data sets (olb/grid/reporting/leaderboard.py) on boards whose answer is known."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import friedmanchisquare

from olb.grid.reporting.leaderboard import board, cd_diagram, compare, ranks, runtime_quality_plot


def _board(seed=0, n=12):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.6, size=(n, 1))
    data = base + np.array([0.20, 0.10, 0.09, 0.0]) + rng.normal(0, 0.01, size=(n, 4))
    return pd.DataFrame(data, index=[f"d{i}" for i in range(n)], columns=["best", "good", "close", "worst"])


def test_ranks_follow_the_metrics_direction_and_skip_incomplete_data_sets():
    b = _board()
    b.loc["d0", "worst"] = np.nan
    higher = ranks(b, lower_is_better=False)
    assert "d0" not in higher.index and (higher["best"] == 1).all() and (higher["worst"] == 4).all()
    assert (ranks(b, lower_is_better=True)["best"] == 4).all()


def test_comparison_table_and_tests_agree(tmp_path):
    b = _board()
    c = compare(b, "f1", lower_is_better=False)
    assert list(c.mean_ranks.index) == ["best", "good", "close", "worst"]
    assert c.friedman_p == pytest.approx(friedmanchisquare(*[b[x] for x in b.columns]).pvalue)
    assert c.nemenyi_p.loc["best", "worst"] < 0.05 < c.nemenyi_p.loc["good", "close"]
    table = c.markdown()
    assert table.index("| 1 | best |") < table.index("| 4 | worst |") and "good" in table.split("| close |")[1]
    assert cd_diagram(c, tmp_path / "cd.png").stat().st_size > 1000


def test_too_small_a_board_is_refused():
    with pytest.raises(ValueError, match="needs at least 3 learners on at least 2 common data sets"):
        compare(_board().iloc[:, :2], "f1", False)


def test_board_from_cells_and_runtime_plot(tmp_path):
    cells = pd.DataFrame(
        {
            "status": ["FINISHED"] * 4 + ["FAILED"],
            "dataset": ["a", "a", "b", "b", "b"],
            "label": ["x", "x", "x", "y", "y"],
            "f1": [0.5, 0.7, 0.4, 0.2, 0.9],
        }
    )
    f1 = board(cells, "f1")
    assert f1.loc["a", "x"] == pytest.approx(0.6) and f1.loc["b", "y"] == 0.2 and np.isnan(f1.loc["a", "y"])
    quality = _board()
    runtime = pd.DataFrame(1e-4, index=quality.index, columns=quality.columns)
    assert runtime_quality_plot(quality, runtime, "f1", False, tmp_path / "rq.png").stat().st_size > 1000


def test_a_grid_writes_the_leaderboard_next_to_its_table(tmp_path, require_data):
    from olb.grid import compose, run_grid

    require_data("scene")

    cfg = compose(
        [
            "backend=serial",
            "tracking=off",
            "plots=false",
            "leaderboard=true",
            "seeds=1",
            "algorithms=[falt,pa1_br,pa2_br]",
            "datasets=[emotions,scene]",
            "protocol=train_frozen",
            "metrics=[f1,hamming_loss]",
            "table.metrics=[f1,hamming_loss,cpu_s]",
            "name=board",
        ]
    )
    outcome = run_grid(cfg, tmp_path / "out")
    assert outcome.exit_code == 0
    md = outcome.files["table_md"].read_text()
    assert "## Leaderboard: mean ranks across data sets" in md and "### f1 (higher is better)" in md
    assert {p.name for p in (tmp_path / "out" / "leaderboard").iterdir()} == {
        "cd_f1.png",
        "cd_hamming_loss.png",
        "runtime_vs_f1.png",
        "runtime_vs_hamming_loss.png",
    }
    table = pd.read_csv(outcome.files["table_csv"])
    f1 = table[table["metric"] == "f1"].pivot_table(index="dataset", columns="algorithm", values="mean")
    best = ranks(f1, lower_is_better=False).mean().idxmin()
    assert md.split("### f1")[1].split("| 1 | ")[1].startswith(best)  # table and ranks agree
