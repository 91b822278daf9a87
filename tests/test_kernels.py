"""The compiled kernels ahead of time (olb.kernels): the same results as numba's JIT, no numba in a cell's process,
argument checks, a verified cache, a bounded wait, and numba's JIT where the extension cannot be had."""

import fcntl
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from olb import kernels
from olb.cache import CacheWarning
from olb.kernels import KernelBuildWarning, KernelModule

ROOT = Path(__file__).resolve().parents[1]

# One cell per kernel module and learner family: the forest and the multi-label boosters' rounds (with ALT's
# thresholds), the multiclass and top-k boosters, and the linear learners' compiled passes and rounds.
CELLS = [
    ["algorithm=onlinebmr+threshold", "dataset=emotions", "num_learners=5", "gamma=0.1", "threshold_rule=alt_scores"],
    ["algorithm=adaolmr", "dataset=emotions", "num_learners=5", "authors_weights=true"],
    ["algorithm=adaolm", "dataset=balance", "num_learners=5"],
    ["algorithm=onlinembbm", "dataset=balance", "num_learners=5", "gamma=0.1"],
    ["algorithm=topada", "dataset=emotions", "num_learners=5"],
    ["algorithm=topopt", "dataset=emotions", "num_learners=5", "gamma=0.1"],
    ["algorithm=falt", "dataset=emotions", "protocol=train_frozen"],
    ["algorithm=salt", "dataset=emotions"],
    ["algorithm=pa1_br", "dataset=emotions", "protocol=train_frozen"],
    ["algorithm=olansgd_star", "dataset=emotions"],
]

_CELL_SCRIPT = """
import json, sys
from olb.run import parse_cli, run_cell
result = run_cell(parse_cli(sys.argv[1:]))
curve = {name: values.tolist() for name, values in result.stream.curve.items()}
print(json.dumps({"metrics": result.metrics, "curve": curve, "numba": "numba" in sys.modules}))
"""


def _require_the_extension() -> None:
    """Skip unless this machine builds the extension (a C and C++ compiler: docs/speed.md)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = kernels._extension() is not None
    if not built:
        pytest.skip(f"the kernels' extension cannot be built here: {caught[-1].message if caught else 'unknown'}")


def _run_cells(mode: str) -> list[dict]:
    env = {**os.environ, "OLB_KERNELS": mode, "PYTHONPATH": str(ROOT)}
    out = []
    for cell in CELLS:
        done = subprocess.run(
            [sys.executable, "-c", _CELL_SCRIPT, *cell], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


@pytest.mark.e2e
def test_ahead_of_time_kernels_give_the_jits_results_without_numba(require_data):
    require_data("emotions", "balance")
    _require_the_extension()
    ahead, jit = _run_cells("aot"), _run_cells("jit")
    for cell, a, j in zip(CELLS, ahead, jit, strict=True):
        for part in ("metrics", "curve"):  # as JSON text: the same floats, NaN included, to the last bit
            assert json.dumps(a[part], sort_keys=True) == json.dumps(j[part], sort_keys=True), (cell, part)
        assert not a["numba"], f"{cell}: numba was imported with the extension"
        assert j["numba"], cell


def test_arguments_are_checked_before_the_extension_sees_them():
    _require_the_extension()
    vfdt_core = kernels.kernels("olb.weak.vfdt_core")
    leaves, class_mass, seen = np.zeros(2, np.int64), np.ones((3, 2)), np.zeros((3, 2), bool)
    assert vfdt_core["leaf_masses"](leaves, class_mass, seen, True).shape == (2, 2)
    with pytest.raises(TypeError, match=r"leaf_masses: argument 1 must be float64\[:, ::1\], got a 2-d float32"):
        vfdt_core["leaf_masses"](leaves, class_mass.astype(np.float32), seen, True)
    with pytest.raises(TypeError, match=r"argument 1 must be float64\[:, ::1\], got a 2-d float64 array \(strided\)"):
        vfdt_core["leaf_masses"](leaves, np.ones((3, 4))[:, ::2], seen, True)
    with pytest.raises(TypeError, match=r"argument 0 must be int64\[::1\], got list"):
        vfdt_core["leaf_masses"]([0, 0], class_mass, seen, True)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        vfdt_core["leaf_masses"](leaves, class_mass, seen)
    with pytest.raises(AttributeError, match="exports no kernel 'nothing'"):
        KernelModule("olb.weak.vfdt_core").nothing  # noqa: B018
    with pytest.raises(ValueError, match="not a kernel module"):
        KernelModule("olb.weak.vfdt")


def test_an_altered_extension_is_not_loaded(tmp_path):
    _require_the_extension()  # the session's build
    folder = tmp_path / "copy"
    shutil.copytree(Path(sys.modules[kernels.EXTENSION].__file__).parent, folder)
    assert kernels._verified(folder) is not None
    manifest = json.loads((folder / "manifest.json").read_text())
    extension = folder / manifest["file"]
    data = bytearray(extension.read_bytes())
    data[len(data) // 2] ^= 1
    extension.write_bytes(bytes(data))
    with pytest.warns(CacheWarning, match="is not the .* recorded at its build; rebuilding"):
        assert kernels._verified(folder) is None
    (folder / "manifest.json").write_text("{not json")
    with pytest.warns(CacheWarning, match="unreadable"):
        assert kernels._verified(folder) is None


def test_waiting_for_another_build_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(kernels, "LOCK_TIMEOUT_S", 0.5)
    folder = tmp_path / "key"
    with open(folder.with_suffix(".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(RuntimeError, match=r"waited 0 s for another process's build .*key\.lock"):
            kernels._build_locked(folder)


def test_without_the_extension_numba_runs_the_kernels(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setenv("OLB_KERNELS_DIR", str(not_a_folder))
    kernels._extension.cache_clear()
    try:
        with pytest.warns(KernelBuildWarning, match="could not be built or loaded .* running numba's JIT"):
            functions = kernels.kernels("olb.learners.boosting.rounds")
    finally:
        kernels._extension.cache_clear()
    from olb.learners.boosting import rounds

    assert functions["hedge_index"] is rounds.hedge_index


def test_the_mode_is_checked(monkeypatch):
    monkeypatch.setenv("OLB_KERNELS", "fast")
    with pytest.raises(ValueError, match="OLB_KERNELS='fast': allowed aot, jit"):
        kernels.kernels("olb.weak.vfdt_core")


def test_every_export_is_a_kernel_called_with_its_declared_types():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for module in kernels.KERNEL_MODULES:
            loaded = __import__(module, fromlist=["EXPORTS"])
            for name, text in loaded.EXPORTS.items():
                assert hasattr(getattr(loaded, name), "py_func"), f"{module}.{name} is not a numba function"
                arguments = kernels.argument_types(text)
                assert len(arguments) == getattr(loaded, name).py_func.__code__.co_argcount, f"{module}.{name}"
                for argument in arguments:
                    kernels.argument_spec(argument)


def test_a_build_refuses_sources_that_give_another_key(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "olb.kernels", "--out", str(tmp_path), "--key", "0" * 24],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert f"--key {'0' * 24}: this olb ({ROOT / 'olb'}) gives {kernels.build_key()}" in done.stderr
    assert not any(tmp_path.iterdir())
