"""Data fixtures: the shared benchmark data ($OLB_DATA_DIR, else a shared/data folder beside the checkout) and an
empty cache. Tests never download: a test that needs a data set absent from the data dir skips, naming it."""

import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from olb.data import dataset_spec, load_dataset
from olb.data.files import data_dirs

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _data_dir() -> Path:
    return Path(os.environ.get("OLB_DATA_DIR") or DEFAULT_DATA_DIR)


_USERS_DATA_DIR = os.environ.get("OLB_DATA_DIR")  # before the fixture below sets the default folder


def _no_data(what: str) -> str:
    """Why a test that needs ``what`` skips: OLB_DATA_DIR, named as the user set it (or not)."""
    where = _USERS_DATA_DIR
    found = f"OLB_DATA_DIR={where} holds no {what}" if where else f"OLB_DATA_DIR is not set (needs {what})"
    return f"{found}; tests never download: see the README, 'Data', to get the benchmark data"


_SESSION_KERNELS: list[str] = []


def pytest_configure(config):
    """One build of the compiled kernels (olb.kernels) for the whole session, in a folder of its own, set before
    the test modules are collected (some compute cases at import): the per-test caches below would otherwise
    build them again in every test that starts a process, and the user's own cache would be filled."""
    if not os.environ.get("OLB_KERNELS_DIR"):
        _SESSION_KERNELS.append(tempfile.mkdtemp(prefix="olb-kernels-"))
        os.environ["OLB_KERNELS_DIR"] = _SESSION_KERNELS[0]


def pytest_unconfigure(config):
    for folder in _SESSION_KERNELS:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _empty_download_cache(tmp_path_factory, monkeypatch):
    """Tests never read or fill the user's download cache; olb finds the data dir the tests use."""
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path_factory.mktemp("olb-cache")))
    if not os.environ.get("OLB_DATA_DIR") and DEFAULT_DATA_DIR.is_dir():
        monkeypatch.setenv("OLB_DATA_DIR", str(DEFAULT_DATA_DIR))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared benchmark data dir; the test is skipped when there is none."""
    path = _data_dir()
    if not path.is_dir():
        pytest.skip(_no_data("benchmark data"))
    return path


@pytest.fixture
def require_data():
    """``require_data("scene", ...)`` skips the test unless every named data set is on disk (the data dir, or
    embedded in the package, or synthetic), so that nothing is downloaded."""

    def require(*names: str) -> None:
        roots = data_dirs(str(_data_dir()))
        missing = []
        for name in names:
            spec = dataset_spec(name)
            local = spec.format == "synthetic" or spec.embedded
            local = local or any(all((root / f.path).is_file() for f in spec.files.values()) for root in roots)
            if not local:
                missing.append(name)
        if missing:
            pytest.skip(_no_data(f"data set(s) {', '.join(missing)}"))

    return require


@pytest.fixture(scope="session")
def load(data_dir):
    """``load_dataset`` from the shared data dir, each data set parsed once per session."""
    return functools.cache(lambda name: load_dataset(name, data_dir))
