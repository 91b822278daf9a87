"""Data fixtures: the shared benchmark data ($OLB_DATA_DIR, else a shared/data folder beside the checkout) and an empty cache."""

import functools
import os
from pathlib import Path

import pytest

from olb.data import load_dataset

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _empty_download_cache(tmp_path_factory, monkeypatch):
    """Tests never read or fill the user's download cache."""
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path_factory.mktemp("olb-cache")))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared benchmark data dir; the test is skipped when there is none."""
    path = Path(os.environ.get("OLB_DATA_DIR") or DEFAULT_DATA_DIR)
    if not path.is_dir():
        pytest.skip(f"no benchmark data at {path}: set OLB_DATA_DIR to the data dir described in docs/data.md")
    return path


@pytest.fixture(scope="session")
def load(data_dir):
    """``load_dataset`` from the shared data dir, each data set parsed once per session."""
    return functools.cache(lambda name: load_dataset(name, data_dir))
