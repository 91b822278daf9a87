"""The grid's output files: cells.csv, table.csv, table.md (with the chosen settings and the leaderboard), the
plots."""

from __future__ import annotations

import pandas as pd

from olb.grid.comparable import differences
from olb.grid.context import GridRun, Stages
from olb.grid.coverage import cover, with_summary
from olb.grid.markdown import TableLayout, grid_title, selection_markdown, table_markdown
from olb.grid.references import reference_source
from olb.grid.report import write_leaderboard, write_plots
from olb.grid.results import cells_frame
from olb.grid.table import build_table


def write_outputs(run: GridRun, st: Stages) -> tuple[pd.DataFrame, pd.DataFrame, str, dict]:
    """cells.csv, table.csv, table.md (with the chosen settings and the leaderboard) and the plots: the cells, the
    table, table.md's text and the files written by name."""
    cfg, plan, out = run.cfg, run.plan, run.out
    cells = cells_frame(plan, st.outcomes, run.data)
    table = build_table(
        plan, st.outcomes, cfg.reference, run.data.unavailable, differences(plan, cfg.reference, cfg.verify_checksums)
    )
    table = cover(table, cfg.reference, plan.entries, plan.datasets, run.data.unavailable, plan.lower_is_better)
    files = {"cells": out / "cells.csv", "table_csv": out / "table.csv", "table_md": out / "table.md"}
    cells.to_csv(files["cells"], index=False)
    table.to_csv(files["table_csv"], index=False)
    markdown = table_markdown(
        table,
        grid_title(cfg, plan, run.overrides),
        TableLayout(list(cfg.table.rows), list(cfg.table.columns), cfg.table.decimals, cfg.table.bold_best),
        reference_source(cfg.reference),
    )
    markdown = with_summary(markdown, table, cfg.reference)
    if st.choices:
        markdown += "\n" + selection_markdown(st.choices)
    if cfg.leaderboard:
        board_md, board_files = write_leaderboard(plan, table, cells, out / "leaderboard")
        markdown += "\n" + board_md
        if board_files:
            files["leaderboard"] = out / "leaderboard"
    files["table_md"].write_text(markdown)
    plot_paths = write_plots(plan, st.outcomes, table, cells, run.tracker, out / "plots") if cfg.plots else []
    if plot_paths:
        files["plots"] = out / "plots"
    return cells, table, markdown, files
