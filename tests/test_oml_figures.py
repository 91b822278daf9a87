"""benchmarks/oml_figures.py: paper 003's claim 1 under both readings of the features (synthetic cells)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

SPEC = importlib.util.spec_from_file_location(
    "oml_figures", Path(__file__).resolve().parents[1] / "benchmarks" / "oml_figures.py"
)
oml_figures = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(oml_figures)


def _cells(values: dict[tuple[str, str], tuple[float, float, float, float]]) -> pd.DataFrame:
    rows = []
    for (dataset, label), metrics in values.items():
        for seed, shift in enumerate((-0.01, 0.01)):
            rows.append(
                {"dataset": dataset, "label": label, "status": "FINISHED", "seed": seed}
                | {m: v + shift for m, v in zip(oml_figures.METRICS, metrics)}
            )
    return pd.DataFrame(rows)


def test_claim_1_is_stated_per_reading():
    cells = _cells(
        {
            ("emotions", "oml"): (0.60, 0.57, 0.62, 0.24),
            ("emotions", "knn"): (0.70, 0.67, 0.71, 0.19),
            ("emotions", "oml_raw"): (0.54, 0.51, 0.56, 0.27),
            ("emotions", "knn_raw"): (0.46, 0.46, 0.50, 0.30),
            ("scene", "oml"): (0.46, 0.40, 0.46, 0.17),
            ("scene", "knn"): (0.69, 0.66, 0.69, 0.10),
            ("scene", "oml_raw"): (0.46, 0.41, 0.46, 0.17),
            ("scene", "knn_raw"): (0.69, 0.65, 0.69, 0.10),
        }
    )
    table = oml_figures.claims(cells)
    emotions = table[table["dataset"] == "emotions"]
    assert set(emotions["1_oml_beats_knn_scaled"]) == {"fails"}
    assert set(emotions["1_oml_beats_knn_raw"]) == {"holds"}  # hamming loss: lower is better
    assert "2_oml_beats_both" not in table  # no baselines in these cells
    assert oml_figures.where_oml_beats_knn(table) == {"scaled": [], "raw": ["emotions"]}
