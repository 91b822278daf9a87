"""The compiled kernels ahead of time (olb.kernels): the same results as numba's JIT, no numba in a cell's process,
argument checks, a verified cache, a lock safe on shared folders with a bounded wait, builds that leave nothing
behind, and numba's JIT where the extension cannot be had (said once per machine, timed as compiling)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from olb import kernels
from olb.cache import CacheWarning
from olb.kernels import BuildLock, KernelModule

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
    if kernels._extension() is None:
        pytest.skip(f"the kernels' extension cannot be built here: {kernels.STATE['jit_because']}")


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
    vfdt_core = kernels._extension()["olb.weak.vfdt_core"]  # also under OLB_KERNELS=jit
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
    held = BuildLock(tmp_path / "key.lock")
    assert held.take()  # this process, alive: never stale
    try:
        with pytest.raises(RuntimeError, match=r"waited 0 s for another process's build .*key\.lock"):
            kernels._built(folder)
    finally:
        held.release()
    assert not (tmp_path / "key.lock").exists()


def test_the_lock_follows_no_link_and_breaks_a_dead_builds(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    lock_path = tmp_path / "key.lock"
    lock_path.symlink_to(victim)
    lock = BuildLock(lock_path)
    assert not lock.take() and lock.stale() == "not a lock file olb wrote"
    lock.break_stale()
    assert lock.take() and victim.read_text() == "precious" and not lock_path.is_symlink()
    assert lock.holder()["pid"] == os.getpid()
    lock.release()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock_path.write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout)}))
    assert lock.stale() == f"its process {int(dead.stdout)} has ended"


def test_an_unrefreshed_lock_is_stale_by_the_waiters_own_clock(tmp_path, monkeypatch):
    lock_path = tmp_path / "key.lock"
    lock_path.write_text(json.dumps({"host": "another-node", "pid": 1}))
    lock = BuildLock(lock_path)
    monkeypatch.setattr(kernels, "STALE_AFTER_S", 0.2)
    assert lock.stale() is None  # first seen now
    os.utime(lock_path, (1, 1))  # refreshed (its clock need not agree with this one)
    assert lock.stale() is None
    time.sleep(0.3)
    assert lock.stale() == "not refreshed for 0 s"


_FALLBACK_SCRIPT = """
import json, sys
from olb import kernels
from olb.run import parse_cli, run_cell
first, second = (run_cell(parse_cli(["algorithm=onlinebmr", "dataset=emotions", "num_learners=2"])) for _ in "12")
print(json.dumps({"state": kernels.STATE, "first": [first.compile_s, first.stream.cpu_s], "second": second.compile_s}))
"""


def test_without_a_compiler_three_processes_say_it_once_and_run_the_jit(tmp_path):
    env = {**os.environ, "CC": "olb-no-such-cc", "OLB_KERNELS_DIR": str(tmp_path / "kernels"), "PYTHONPATH": str(ROOT)}
    env.pop("OLB_KERNELS", None)
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _FALLBACK_SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert all(run.returncode == 0 for run in runs), outputs
    errors = "".join(error for _, error in outputs)
    assert errors.count("olb: ") == 1, errors
    assert "no C/C++ compiler (olb-no-such-cc not found): install one" in errors, errors
    assert "build-essential" in errors and "OLB_KERNELS=jit" in errors and "conda" not in errors, errors
    for out, _ in outputs:
        result = json.loads(out.strip().splitlines()[-1])
        assert "olb-no-such-cc not found" in result["state"]["jit_because"] and not result["state"]["built_s"]
        # the first cell's numba (loading or compiling the kernels) is compile_s, not its CPU; the second has none
        assert result["first"][0] > result["first"][1] and result["second"] == 0.0, result
    assert not [path for path in (tmp_path / "kernels").iterdir() if ".failed-" not in path.name]


def test_a_new_compiler_retries_a_remembered_failure(tmp_path, monkeypatch):
    folder = tmp_path / "key"
    monkeypatch.setenv("CC", "olb-no-such-cc")
    with pytest.raises(kernels.KernelsUnavailable):
        kernels._built(folder)
    assert "olb-no-such-cc not found" in kernels._remembered_failure(folder)
    monkeypatch.setenv("CC", "olb-another-cc")
    assert kernels._remembered_failure(folder) is None


@pytest.mark.e2e
def test_a_build_leaves_only_its_folder(tmp_path):
    """The session's build (through the lock, in a subprocess) left its folder, no lock, no temporary folders;
    its compilers' temporary files went to a folder inside the build (here: none left in TMPDIR)."""
    _require_the_extension()
    folder = Path(sys.modules[kernels.EXTENSION].__file__).parent
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        ["manifest.json", Path(sys.modules[kernels.EXTENSION].__file__).name]
    )
    assert [path.name for path in folder.parent.iterdir() if path.name.startswith((folder.name, "."))] == [folder.name]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from olb.kernels import build; from pathlib import Path; import sys; build(Path(sys.argv[1]))",
            str(tmp_path / "out" / "key"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not list(tmp.iterdir())
    assert [path.name for path in (tmp_path / "out").iterdir()] == ["key"]
    assert kernels._verified(tmp_path / "out" / "key") is not None


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


def test_olb_imports_where_fcntl_does_not_exist():
    """Windows has no fcntl: importing olb's learners (and their kernels) must not need it."""
    script = "import sys; sys.modules['fcntl'] = None; import olb.registry, olb.kernels; print('imported')"
    done = subprocess.run(
        [sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert done.stdout.strip() == "imported", done.stderr[-2000:]
