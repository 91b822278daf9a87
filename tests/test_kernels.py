"""The compiled kernels ahead of time (olb.kernels): the same results as numba's JIT, no numba in a cell's process,
argument checks, a verified cache, a lock safe on shared folders with a bounded wait, builds that leave nothing
behind, and numba's JIT where the extension cannot be had (said once per machine, timed as compiling)."""

import json
import os
import pickle
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from olb import kernel_declarations, kernels
from olb.cache import CacheWarning
from olb.kernel_declarations import Float64Array1D, Int64, kernel
from olb.kernels import BuildLock, KernelModule, building, loading
from olb.kernels import key as kernel_key
from olb.kernels import lock as kernel_lock
from olb.weak import VFDTForest

ROOT = Path(__file__).resolve().parents[1]

# One cell per kernel module and learner family: the forest and the multi-label boosters' rounds (with ALT's
# thresholds), the multiclass and top-k boosters, the linear learners' compiled passes and rounds, and the compiled
# BR + Hoeffding trees (splitting eagerly).
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
    ["algorithm=br_ht", "dataset=emotions", "grace_period=10", "split_confidence=0.1", "tie_threshold=0.3"],
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
    passes = kernels._extension()["olb.learners.linear.passes"]  # also under OLB_KERNELS=jit
    W, idx, val = np.ones((3, 2)), np.array([0, 2]), np.array([1.0, 2.0])
    assert passes["row_scores"](W, idx, val, np.empty(2)).tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match=r"row_scores: argument 0 must be float64\[:, ::1\], got a 2-d float32"):
        passes["row_scores"](W.astype(np.float32), idx, val, np.empty(2))
    with pytest.raises(TypeError, match=r"argument 0 must be float64\[:, ::1\], got a 2-d float64 array \(strided\)"):
        passes["row_scores"](np.ones((3, 4))[:, ::2], idx, val, np.empty(2))
    with pytest.raises(TypeError, match=r"argument 1 must be int64\[::1\], got list"):
        passes["row_scores"](W, [0, 2], val, np.empty(2))
    with pytest.raises(TypeError, match="takes 4 arguments"):
        passes["row_scores"](W, idx, val)
    with pytest.raises(AttributeError, match="declares no kernel 'nothing'"):
        KernelModule("olb.weak.vfdt_core").nothing  # noqa: B018
    with pytest.raises(ValueError, match="'olb.weak.vfdt' is not a kernel module; they are: .*olb.weak.vfdt_core"):
        KernelModule("olb.weak.vfdt").route  # noqa: B018


def test_a_record_checks_its_fields_when_made_and_a_call_its_class():
    forest = VFDTForest(2, 3, 2, seed=0)
    with pytest.raises(TypeError, match=r"ForestArrays: field 'threshold' must be float64\[::1\], got a 1-d float32"):
        forest.arrays._replace(threshold=forest.arrays.threshold.astype(np.float32))
    with pytest.raises(TypeError, match="ForestArrays: field 'pseudo_count' must be float64, got str"):
        forest.arrays._replace(pseudo_count="1")
    with pytest.raises(TypeError, match=r"ForestArrays: field 'root' must be int64\[::1\], got list"):
        type(forest.arrays)(*([[0, 1]] + list(forest.arrays[1:])))
    assert pickle.loads(pickle.dumps(forest.arrays)).pseudo_count == 1.0
    _require_the_extension()
    route = kernels._extension()["olb.weak.vfdt_core"]["route"]
    assert route(forest.arrays, np.zeros(3)).tolist() == [0, 1]
    with pytest.raises(
        TypeError, match=r"route: argument 0 must be a olb.weak.vfdt_arrays.ForestArrays record, got tuple"
    ):
        route(tuple(forest.arrays), np.zeros(3))


def test_an_altered_extension_is_not_loaded(tmp_path):
    _require_the_extension()  # the session's build
    folder = tmp_path / "copy"
    shutil.copytree(Path(sys.modules[kernels.EXTENSION].__file__).parent, folder)
    assert loading.verified(folder) is not None
    manifest = json.loads((folder / "manifest.json").read_text())
    extension = folder / manifest["file"]
    data = bytearray(extension.read_bytes())
    data[len(data) // 2] ^= 1
    extension.write_bytes(bytes(data))
    with pytest.warns(CacheWarning, match="is not the .* recorded at its build; rebuilding"):
        assert loading.verified(folder) is None
    (folder / "manifest.json").write_text("{not json")
    with pytest.warns(CacheWarning, match="unreadable"):
        assert loading.verified(folder) is None


def test_waiting_for_another_build_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(building, "LOCK_TIMEOUT_S", 0.5)
    folder = tmp_path / "key"
    held = BuildLock(tmp_path / "key.lock")
    assert held.take()  # this process, alive: never stale
    try:
        with pytest.raises(RuntimeError, match=r"waited 0 s for another process's build .*key\.lock"):
            building.built(folder)
    finally:
        held.release()
    assert not (tmp_path / "key.lock").exists()


def test_a_process_waiting_for_another_build_says_when_it_is_done(tmp_path, capsys):
    """A build finished by another process while this one waits (here: the session's, copied in by a thread)."""
    _require_the_extension()
    folder = tmp_path / "key"
    held = BuildLock(tmp_path / "key.lock")
    assert held.take()
    session_build = Path(sys.modules[kernels.EXTENSION].__file__).parent
    finishing = threading.Timer(1.0, shutil.copytree, (session_build, folder))
    finishing.start()
    try:
        assert building.built(folder) == loading.verified(session_build)
    finally:
        finishing.join()
        held.release()
    told = capsys.readouterr().err.splitlines()
    assert told[0].startswith(f"olb: waiting for olb's kernels, being compiled by pid {os.getpid()} on ")
    assert re.fullmatch(r"olb: olb's kernels are ready \(compiled by another process; waited \d+ s\)", told[-1])


def test_a_builds_expected_time_is_the_last_builds_cpu_stretched_by_the_load(tmp_path, monkeypatch):
    assert kernels.expected_build_s(tmp_path) is None  # no build yet: nothing to time it by
    building.record_build(tmp_path, wall_s=80.0, cpu_s=20.0)
    assert json.loads((tmp_path / kernels.BUILD_TIMES).read_text())["cpu_s"] == 20.0
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    for load, expected in ((0.2, 20.0), (7.0, 80.0)):  # idle: its CPU seconds; at load 7 on 2 CPUs a quarter CPU
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert kernels.expected_build_s(tmp_path) == (
            pytest.approx(expected),
            f"the last build's 20 CPU s, at load {load:.1f} on 2 CPU(s)",
        )
    record = tmp_path / kernels.BUILD_TIMES
    record.unlink()
    record.symlink_to(tmp_path / "elsewhere.json")  # never read through a link
    (tmp_path / "elsewhere.json").write_text('{"cpu_s": 1}')
    assert kernels.expected_build_s(tmp_path) is None


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
    monkeypatch.setattr(kernel_lock, "STALE_AFTER_S", 0.2)
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
        building.built(folder)
    assert "olb-no-such-cc not found" in building.remembered_failure(folder)
    monkeypatch.setenv("CC", "olb-another-cc")
    assert building.remembered_failure(folder) is None


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
    assert loading.verified(tmp_path / "out" / "key") is not None


def test_the_mode_is_checked(monkeypatch):
    monkeypatch.setenv("OLB_KERNELS", "fast")
    with pytest.raises(ValueError, match="OLB_KERNELS='fast': allowed aot, jit"):
        kernels.kernels("olb.weak.vfdt_core")


def test_the_modules_found_declare_every_kernel_and_record_and_nothing_else():
    """The modules found by their source (no list) are those whose import declares kernels and records; a record's
    fields and a kernel's arguments are typed by their annotations."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = kernels.check_declarations()
    assert {"olb.weak.vfdt_core", "olb.learners.boosting.rounds.shared", "olb.learners.linear.passes"} <= set(found)
    assert "olb.weak.vfdt_arrays" in kernel_declarations.declaring_modules() and "olb.weak.vfdt_arrays" not in found
    route = kernel_declarations.KERNELS["olb.weak.vfdt_core"]["route"]
    record, x = route.arguments
    assert record["record"] == "olb.weak.vfdt_arrays.ForestArrays" and x == "float64[::1]"
    assert record["fields"]["covariates"] == "int64[:, ::1]" and record["fields"]["pseudo_count"] == "float64"
    for module in found:
        for name, declared in kernel_declarations.KERNELS[module].items():
            assert len(declared.arguments) == declared.function.py_func.__code__.co_argcount, f"{module}.{name}"


def test_declaring_modules_are_found_by_their_source(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "loops.py").write_text("@kernel\ndef f(x: Float64Array1D):\n    pass\n")
    (package / "records.py").write_text("@kernel_record\nclass R(NamedTuple):\n    a: Float64Array1D\n")
    (package / "notes.py").write_text('"""How to declare one:\n\n    @kernel\n    def f(...): ..."""\n')
    found = kernel_declarations.declaring_modules(package)
    assert found == {
        "pkg.records": (package / "records.py", False),
        "pkg.sub.loops": (package / "sub" / "loops.py", True),
    }


def test_a_kernel_takes_its_argument_types_from_its_annotations():
    def add_into(out: Float64Array1D, n: Int64):  # pragma: no cover - compiled
        for i in range(out.shape[0]):
            out[i] += n

    add_into.__qualname__ = "add_into"  # as if declared in a module
    compiled = kernel(add_into)
    out = np.zeros(3)
    compiled(out, 2)
    assert out.tolist() == [2.0, 2.0, 2.0]
    assert kernel_declarations.KERNELS[__name__]["add_into"].arguments == ["float64[::1]", "int64"]

    def nested(out: Float64Array1D):  # pragma: no cover - compiled
        pass

    with pytest.raises(ValueError, match="nested: kernels are module-level functions"):
        kernel(nested)

    def untyped(out, n: Int64):  # pragma: no cover - compiled
        pass

    untyped.__qualname__ = "untyped"
    with pytest.raises(TypeError, match="kernel .*untyped, argument 'out' has no type annotation"):
        kernel(untyped)

    def with_default(out: Float64Array1D, n: Int64 = 1):  # pragma: no cover - compiled
        pass

    with_default.__qualname__ = "with_default"
    with pytest.raises(TypeError, match="argument 'n': a kernel takes plain positional arguments, without defaults"):
        kernel(with_default)

    def listed(out: list[float]):  # pragma: no cover - compiled
        pass

    listed.__qualname__ = "listed"
    with pytest.raises(TypeError, match="argument 'out': list\\[float\\] is not a kernel type"):
        kernel(listed)


def test_the_key_changes_with_a_kernels_declaration(tmp_path, monkeypatch):
    source = tmp_path / "loops.py"
    source.write_text("@kernel\ndef f(x: Float64Array1D):\n    pass\n")
    monkeypatch.setattr(kernel_key, "declaring_modules", lambda: {"olb.loops": (source, True)})
    before = kernels.build_key()
    source.write_text("@kernel\ndef f(x: Int64Array1D):\n    pass\n")
    assert kernels.build_key() != before


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
    script = "import sys; sys.modules['fcntl'] = None; import olb.learners.registry, olb.kernels; print('imported')"
    done = subprocess.run(
        [sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True
    )
    assert done.stdout.strip() == "imported", done.stderr[-2000:]
