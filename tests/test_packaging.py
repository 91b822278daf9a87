"""olb installs like a package: a wheel built from the checkout runs a one-cell grid from outside the repository
(configs and the embedded data set ship inside it; console entry points olb-grid and olb-run)."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment holding only the olb wheel; its dependencies come from this environment."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy: building writes build/ next to the sources
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "outputs", "*.egg-info", "__pycache__", "mlflow.db", "mlruns"
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
    wheel = next((tmp / "dist").glob("olb-*.whl"))
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
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OLB_CONF_DIR", "OLB_DATA_DIR")}
    return tmp / "venv" / "bin", cwd, env


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
