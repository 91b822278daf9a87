"""Rank comparisons across data sets (olb/grid/reporting/leaderboard.py) on boards whose answer is known."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import friedmanchisquare

from olb.grid.reporting.leaderboard import (
    RANKS_CSV,
    RUNTIME_CSV,
    board,
    cd_diagram,
    compare,
    ranks,
    runtime_quality_plot,
    write_report,
)


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


def _long(boards: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """A table.csv's columns that the report reads, from one data set x learner board per metric."""
    return pd.concat(
        [
            b.rename_axis(index="dataset", columns="algorithm").stack().rename("mean").reset_index().assign(metric=m)
            for m, b in boards.items()
        ]
    )


def test_the_report_writes_its_ranks_and_runtimes_as_data(tmp_path):
    f1 = _board().assign(rare=np.r_[0.9, 0.9, [np.nan] * 10])  # on 2 of 12 data sets: listed, not ranked
    loss = 1 - _board(seed=1)
    rng = np.random.default_rng(2)
    cells = pd.DataFrame(
        [
            {"status": "FINISHED", "dataset": d, "label": x, "train_us_per_example": rng.uniform(1, 100)}
            for d in f1.index
            for x in f1.columns
            for _ in range(2)
        ]
    )
    md, files = write_report(_long({"f1": f1, "loss": loss}), cells, {"f1": False, "loss": True}, tmp_path)
    assert {tmp_path / RANKS_CSV, tmp_path / RUNTIME_CSV} <= set(files)
    # round_trip: pandas 2's default float parser may miss the written value's last bit (pandas 3's does not)
    ranks = pd.read_csv(tmp_path / RANKS_CSV, dtype={"not_different": str}, float_precision="round_trip")
    data = ranks.fillna({"not_different": ""})
    runtime = board(cells, "train_us_per_example", aggfunc="median")
    for metric, b, lower in (("f1", f1, False), ("loss", loss, True)):
        c = compare(b, metric, lower)
        rows = data[data["metric"] == metric].set_index("learner")
        ranked = rows.dropna(subset=["mean_rank"])
        assert list(ranked.index) == list(c.mean_ranks.index)  # best first, as the markdown table
        np.testing.assert_allclose(ranked["mean_rank"], c.mean_ranks)
        assert (ranked["friedman_p"] == c.friedman_p).all() and (ranked["n_datasets"] == 12).all()
        assert (ranked["lower_is_better"] == lower).all()
        for learner in ranked.index:  # the Nemenyi groups the markdown shows
            same = ranked.loc[learner, "not_different"]
            assert f"| {learner} | {ranked.loc[learner, 'mean_rank']:.2f} | {same.replace(';', ', ') or '-'} |" in md
        np.testing.assert_allclose(rows["train_us_per_example"], runtime.median().reindex(rows.index))
    assert np.isnan(data.set_index(["metric", "learner"]).loc[("f1", "rare"), "mean_rank"])
    assert "Not ranked (missing on half of the data sets or more): rare." in md
    long = pd.read_csv(tmp_path / RUNTIME_CSV).pivot(index="dataset", columns="learner", values="train_us_per_example")
    pd.testing.assert_frame_equal(long, runtime, check_names=False)


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
            f"export={tmp_path / 'results' / 'board'}",
        ]
    )
    outcome = run_grid(cfg, tmp_path / "out")
    assert outcome.exit_code == 0
    md = outcome.files["table_md"].read_text()
    assert "## Leaderboard: mean ranks across data sets" in md and "### f1 (higher is better)" in md
    written = {
        "cd_f1.png",
        "cd_hamming_loss.png",
        "runtime_vs_f1.png",
        "runtime_vs_hamming_loss.png",
        RANKS_CSV,
        RUNTIME_CSV,
    }
    assert {p.name for p in (tmp_path / "out" / "leaderboard").iterdir()} == written
    exported = tmp_path / "results" / "board" / "leaderboard"  # beside the exported table.md, which links to it
    assert {p.name for p in exported.iterdir()} == written
    assert (exported / RANKS_CSV).read_text() == (tmp_path / "out" / "leaderboard" / RANKS_CSV).read_text()
    table = pd.read_csv(outcome.files["table_csv"])
    f1 = table[table["metric"] == "f1"].pivot_table(index="dataset", columns="algorithm", values="mean")
    best = ranks(f1, lower_is_better=False).mean().idxmin()
    assert md.split("### f1")[1].split("| 1 | ")[1].startswith(best)  # table and ranks agree
    data = pd.read_csv(exported / RANKS_CSV)
    assert data[data["metric"] == "f1"].iloc[0]["learner"] == best  # and the data


_DRAW_CD = """
import sys
import numpy as np, pandas as pd
from olb.grid.reporting.leaderboard import cd_diagram, compare
rng = np.random.default_rng(3)
shift = np.array([0.30, 0.25, 0.20, 0.15, 0.10, 0.05, 0.0, -0.05])
data = rng.uniform(0.3, 0.6, size=(10, 1)) + shift + rng.normal(0, 0.08, size=(10, 8))
names = ["FALT", "PA-I-BR", "PA-II-BR", "OML", "kNN", "OSML-ELM", "ELM-OMLL*", "OLANSGD*"]
cd_diagram(compare(pd.DataFrame(data, columns=names), "f1", lower_is_better=False), sys.argv[1])
"""


def test_the_critical_difference_diagram_is_the_same_png_in_every_process(tmp_path):
    """Its crossbars come from sets of learner names; a PNG that changed with the process's string hash would
    churn every committed figure a re-export rewrites."""
    import os
    import subprocess
    import sys

    pngs = []
    for hash_seed in ("1", "2", "3"):
        path = tmp_path / f"cd{hash_seed}.png"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([sys.executable, "-c", _DRAW_CD, str(path)], env=env, check=True, timeout=120)
        pngs.append(path.read_bytes())
    assert pngs[0] == pngs[1] == pngs[2]


def test_ranks_keep_every_learner_on_the_streams_they_share_rather_than_few_learners_on_all():
    # 10 learners ran on 5 of 11 data sets, 3 on all 11: 5 x 13 figures beat 11 x 3
    rng = np.random.default_rng(1)
    b = pd.DataFrame(
        rng.uniform(size=(11, 13)), index=[f"d{i}" for i in range(11)], columns=[f"l{j}" for j in range(13)]
    )
    b.iloc[5:, 3:] = np.nan
    r = ranks(b, lower_is_better=False)
    assert list(r.index) == [f"d{i}" for i in range(5)] and list(r.columns) == list(b.columns)
