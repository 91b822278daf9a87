"""The papers' reference values (conf/reference: values.csv, papers.yaml) and their citations."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pandas as pd
import yaml
from olb.grid.planning.config import ReferenceConfig

import olb


def paper_citation(key: str) -> str:
    """The short citation (authors, year, method) of the paper ``key`` (conf/reference/papers.yaml), else the key."""
    return _papers(olb.conf_file("reference/papers.yaml")).get(key, {}).get("cite", key)


@functools.cache
def _papers(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) if path.is_file() else {}


def reference_source(ref_cfg: ReferenceConfig) -> str:
    """Where a table's paper values come from, e.g. "Jung & Tewari (2018), Ada.OLMR and OnlineBMR, Table 3"."""
    return ", ".join(x for x in (paper_citation(ref_cfg.paper) if ref_cfg.paper else "", ref_cfg.table or "") if x)


def load_reference(ref_cfg: ReferenceConfig) -> pd.DataFrame | None:
    if not ref_cfg.file or not ref_cfg.paper:
        return None
    path = Path(ref_cfg.file)
    if not path.is_file():
        return None
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df = df[(df["paper"] == ref_cfg.paper) & ((df["table"] == ref_cfg.table) if ref_cfg.table else True)]
    return df


def paper_value(
    ref: pd.DataFrame | None, ref_cfg: ReferenceConfig, paper_name: str | None, dataset: str, metric: str
) -> tuple[float, str]:
    if ref is None or not paper_name:
        return math.nan, ""
    ds = ref_cfg.datasets.get(dataset, dataset) if ref_cfg.datasets else dataset
    mname = ref_cfg.metrics.get(metric, metric) if ref_cfg.metrics else metric
    hit = ref[(ref["dataset"] == ds) & (ref["algorithm"] == paper_name) & (ref["metric"] == mname)]
    if hit.empty:
        return math.nan, ""
    value = hit.iloc[0]["value"].strip()
    note = hit.iloc[0].get("note", "") or ""
    try:
        return float(value) / float(getattr(ref_cfg, "scale", 1.0) or 1.0), note
    except ValueError:
        return math.nan, note or value
