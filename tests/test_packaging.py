"""olb installs like a package. A wheel built from the checkout runs a one-cell grid from outside the repository
(configs and the embedded data set ship inside it; console entry points olb-grid and olb-run), and the core
wheel alone (``pip install olb``: no Ray, MLflow, Hydra, pandas or matplotlib) runs a learner on emotions."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import site
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ranges import LOWEST_LOCK, declared, normal_name

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
GRID_STACK = ("ray", "mlflow", "hydra", "omegaconf", "pandas", "matplotlib", "scikit_posthocs", "tqdm", "river")
CORE_MODULES = ("olb.learners", "olb.protocol", "olb.metrics", "olb.data", "olb.weak", "olb.run")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The olb wheel, built without its dependencies (``pip wheel --no-deps``) from a copy of the checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy: building writes build/ next to the sources
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "outputs", "*.egg-info", "__pycache__", "mlflow.db", "mlruns"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return next((tmp / "dist").glob("olb-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A fresh virtual environment holding only the olb wheel; its dependencies come from this environment."""
    tmp = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True, timeout=120)
    python = tmp / "venv" / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    cwd = tmp / "elsewhere"
    cwd.mkdir()
    return tmp / "venv" / "bin", cwd, _clean_env()


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OLB_CONF_DIR", "OLB_DATA_DIR")}


@pytest.mark.e2e
def test_the_installed_package_is_not_the_checkout(installed):
    bin_dir, cwd, env = installed
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import olb; print(olb.__file__, olb.conf_dir())"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(ROOT) not in where and "site-packages/olb" in where


@pytest.mark.e2e
def test_a_one_cell_grid_runs_from_outside_the_repository(installed):
    bin_dir, cwd, env = installed
    grid = subprocess.run(
        [
            str(bin_dir / "olb-grid"),
            "algorithms=[adaolmr]",
            "datasets=[emotions]",
            "seeds=1",
            "num_learners=2",
            "backend=serial",
            "tracking=off",
            "plots=false",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert grid.returncode == 0, grid.stderr[-2000:]
    assert "1 cells: 1 run" in grid.stdout and list(cwd.glob("outputs/default/*/table.md"))
    one = subprocess.run(
        [str(bin_dir / "olb-run"), "algorithm=adaolmr", "dataset=emotions", "num_learners=2"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 0 and "rank_loss:" in one.stdout, one.stderr[-2000:]


def test_importing_the_core_never_imports_the_grid_stack():
    """olb.learners, olb.protocol, olb.metrics, olb.data (and olb.run's cell API) import no grid library."""
    probe = (
        f"import sys; import {', '.join(CORE_MODULES)}; "
        f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({GRID_STACK!r}))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.strip() == "", f"importing the core loaded {loaded.stdout.strip()}"


def test_a_loader_without_its_optional_dependency_names_the_extra_before_any_work():
    probe = (
        "import sys; sys.modules['pandas'] = None\n"  # as in a core install
        "from olb.data import load_dataset\n"
        "try:\n    load_dataset('balance', data_dir='/nonexistent')\n"
        "except ModuleNotFoundError as exc:\n    print(exc)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "'balance'" in run.stdout and 'pip install "olb[tables]"' in run.stdout, run.stdout


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


def _cached_venv(name: str, key_source: bytes, install: list[str]) -> Path:
    """A virtual environment that ``pip install *install`` builds, kept and reused while it verifies.

    Installing numpy, scipy and numba (let alone the grid's stack) takes minutes, so the environment is kept in a
    per-user temporary directory keyed by the hash of ``key_source`` (what decides its contents). The test skips
    when the install fails because PyPI cannot be reached.
    """
    key = hashlib.sha256(key_source).hexdigest()[:16]
    home = Path(tempfile.gettempdir()) / f"olb-test-{os.getuid()}"
    home.mkdir(mode=0o700, exist_ok=True)
    if home.stat().st_uid != os.getuid() or home.stat().st_mode & 0o077:
        pytest.skip(f"{home} is not private to this user; not reusing it")
    venv, ready = home / f"{name}-venv-{key}", home / f"{name}-venv-{key}.ready"
    python = venv / "bin" / "python"
    if not (ready.is_file() and ready.read_text() == key and python.is_file()):
        shutil.rmtree(venv, ignore_errors=True)
        ready.unlink(missing_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        install_run = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *install], capture_output=True, text=True, timeout=1800
        )
        if install_run.returncode != 0:
            if not _pypi_reachable():
                pytest.skip(f"offline: pip cannot reach PyPI to build the {name} environment")
            pytest.fail(f"pip install of the {name} environment failed: {install_run.stderr[-2000:]}")
        ready.write_text(key)
    return python


def _core_venv(wheel: Path) -> Path:
    """An environment with the core wheel and only the dependencies it declares, installed by pip; the olb wheel
    itself is reinstalled every time."""
    python = _cached_venv("core", (ROOT / "pyproject.toml").read_bytes(), [str(wheel)])
    reinstall = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert reinstall.returncode == 0, reinstall.stderr[-2000:]
    return python


@pytest.mark.e2e
def test_the_core_wheel_alone_runs_falt_on_emotions_without_the_grid_stack(wheel, tmp_path):
    python = _core_venv(wheel)
    script = f"""
import importlib.util, math, sys
absent = [m for m in {GRID_STACK!r} if importlib.util.find_spec(m) is not None]
assert not absent, f"the core install pulled in {{absent}}"
try:
    import ray
except ImportError:
    pass
else:
    raise AssertionError("import ray succeeded in the core install")
import olb.data, olb.learners, olb.metrics, olb.protocol
try:
    import olb.grid
except ModuleNotFoundError as exc:
    assert 'pip install "olb[grid]"' in str(exc), exc
else:
    raise AssertionError("olb.grid imported in the core install")
from olb.run import CellSpec, run_cell
result = run_cell(CellSpec("falt", "emotions", seed=1, metrics=("f1", "hamming_loss")))
assert all(0.0 <= v <= 1.0 for v in result.metrics.values()), result.metrics
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({GRID_STACK!r}))
assert not loaded, loaded
print(olb.__version__, result.metrics)
"""
    env = {**_clean_env(), "OLB_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [str(python), "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    version = subprocess.run(
        [sys.executable, "-c", "import olb; print(olb.__version__)"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert run.stdout.startswith(version + " "), run.stdout


def _bounds_venv(bound: str) -> Path:
    """An environment holding the lowest versions of the ranges (requirements-lowest.lock) or the highest ones
    (the grid's and the cluster's declared requirements, as pip resolves them today), without olb."""
    if bound == "lowest":
        return _cached_venv("lowest", LOWEST_LOCK.read_bytes(), ["-r", str(LOWEST_LOCK)])
    requirements = [str(r) for r in declared(("grid", "cluster"))]
    return _cached_venv("highest", (ROOT / "pyproject.toml").read_bytes(), requirements)


def _installed(python: Path) -> dict[str, str]:
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        env=_clean_env(),  # without PYTHONPATH: a checkout on it would list as an installed olb
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return {normal_name(p["name"]): p["version"] for p in json.loads(listed)}


@pytest.mark.e2e
@pytest.mark.parametrize("bound", ["lowest", "highest"])
def test_pip_install_olb_and_olb_grid_into_an_environment_at_the_bounds_changes_nothing_there(wheel, bound):
    """The resolver accepts the versions there: installing olb, then olb[grid], adds olb and nothing else."""
    python = _bounds_venv(bound)
    before = _installed(python)
    assert "olb" not in before
    try:
        for target in (str(wheel), f"{wheel}[grid]"):
            run = subprocess.run(
                [str(python), "-m", "pip", "install", target],
                env=_clean_env(),
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert run.returncode == 0, f"pip install {Path(target).name} failed: {run.stderr[-2000:]}"
            after = _installed(python)
            changed = {n: (before.get(n), v) for n, v in after.items() if before.get(n) != v and n != "olb"}
            assert set(after) >= set(before) and not changed, f"pip install {Path(target).name} changed {changed}"
    finally:
        subprocess.run(
            [str(python), "-m", "pip", "uninstall", "-y", "-q", "olb"],
            env=_clean_env(),
            capture_output=True,
            timeout=120,
        )
        if _installed(python) != before:  # a failed check left it changed: built afresh next time
            shutil.rmtree(python.parents[1])
