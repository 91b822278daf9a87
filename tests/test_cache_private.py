"""Cache folders another user could change are refused, not warned about (olb.cache): a cache owned by a second
user (uid 65534, through ``setpriv``) who planted a compiled-kernel extension with a matching manifest, altered
parsed data with a recomputed digest and a symlink at the kernels' lock makes ``olb-run`` and the grid exit 2
before any work, and nothing planted is loaded or written through; a folder of one's own but open to others is
refused the same way; the folders olb creates are user-only at every level."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from olb import kernels
from olb.cache import CacheFolderError, check_cache_folders, private_cache

ROOT = Path(__file__).resolve().parents[1]
OTHER = 65534  # nobody
# a shared library that, once loaded, leaves a file behind: proof that a process ran the planted code
PAYLOAD_C = '#include <fcntl.h>\n__attribute__((constructor)) static void planted(void) { creat("%s", 0644); }\n'


def _as_other(*command: str) -> None:
    subprocess.run(
        ["setpriv", "--reuid", str(OTHER), "--regid", str(OTHER), "--clear-groups", *command],
        check=True,
        timeout=60,
    )


def _env(cache: Path) -> dict[str, str]:
    env = {**os.environ, "OLB_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    for name in ("OLB_KERNELS_DIR", "OLB_KERNELS", "NUMBA_CACHE_DIR"):
        env.pop(name, None)  # the kernels and numba's cache then live in the refused folder
    return env


def _olb_run(cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "olb.run", "algorithm=onlinebmr", "dataset=emotions", "num_learners=2"],
        env=_env(cache),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry below ``folder`` (links not followed): its mode, size and modification time."""
    out = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        out[str(path.relative_to(folder))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return out


@pytest.fixture
def planted(tmp_path):
    """A cache folder uid 65534 made and filled: a kernel extension whose SHA-256 its manifest records (a shared
    library that leaves ``loaded`` behind if anything loads it), emotions' parsed arrays altered with a
    recomputed digest, and a symlink at the kernels' lock pointing to a file of this user's."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("no second user: the test needs root and setpriv to act as uid 65534")
    base = Path(tempfile.mkdtemp(prefix="olb-other-"))
    try:
        base.chmod(0o755)
        staging = base / "staging"
        staging.mkdir(mode=0o755)
        proof, victim = tmp_path / "loaded", tmp_path / "victim"
        victim.write_text("this user's file")
        key = kernels.build_key()
        extension = staging / "olb_kernels-planted.so"
        if shutil.which("cc"):
            (staging / "payload.c").write_text(PAYLOAD_C % proof)
            subprocess.run(["cc", "-shared", "-fPIC", "-o", str(extension), str(staging / "payload.c")], check=True)
        else:
            extension.write_bytes(b"\x7fELF planted")
        digest = hashlib.sha256(extension.read_bytes()).hexdigest()
        manifest = {"file": extension.name, "sha256": digest, "exports": {}}
        (staging / "manifest.json").write_text(json.dumps(manifest))
        parsed = _altered_emotions(tmp_path / "staging-cache")
        for path in staging.iterdir():
            path.chmod(0o644)
        shutil.copy(parsed, staging / parsed.name)
        (staging / parsed.name).chmod(0o644)
        cache = base / "cache"
        cache.mkdir(mode=0o755)
        os.chown(cache, OTHER, OTHER)  # theirs: what they put in it is theirs too
        _as_other("mkdir", "-m", "755", "-p", str(cache / "kernels" / key), str(cache / "parsed"))
        _as_other("cp", str(extension), str(staging / "manifest.json"), str(cache / "kernels" / key))
        _as_other("cp", str(staging / parsed.name), str(cache / "parsed"))
        _as_other("ln", "-s", str(victim), str(cache / "kernels" / f"{key}.lock"))
        assert cache.stat().st_uid == OTHER
        yield cache, proof, victim
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _altered_emotions(cache: Path) -> Path:
    """emotions' parsed arrays with one value changed and the digest recomputed, as its writer could."""
    from olb.data import load_with_provenance
    from olb.data.parsed import parsed_path, write_parsed

    previous = os.environ.get("OLB_CACHE_DIR")
    os.environ["OLB_CACHE_DIR"] = str(cache)
    try:
        dataset, source = load_with_provenance("emotions")
        X = dataset.X.copy()
        X[0, 0] += 1.0
        write_parsed(dataclasses.replace(dataset, X=X), source)
        return parsed_path(source.dataset, source.fingerprint)
    finally:
        if previous is None:
            os.environ.pop("OLB_CACHE_DIR")
        else:
            os.environ["OLB_CACHE_DIR"] = previous


@pytest.mark.e2e
def test_another_users_cache_is_refused_before_any_work(planted, tmp_path):
    cache, proof, victim = planted
    before = _snapshot(cache)
    done = _olb_run(cache)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"OLB_CACHE_DIR {cache} is owned by uid {OTHER}, not by you (uid 0)" in done.stderr
    assert "use a folder of your own" in done.stderr
    grid = subprocess.run(
        [
            sys.executable,
            "-m",
            "olb.grid",
            "num_learners=2",
            "seeds=1",
            "plots=false",
            f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
            f"hydra.run.dir={tmp_path}/out",
        ],
        env=_env(cache),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert grid.returncode == 2, grid.stdout + grid.stderr
    assert f"OLB_CACHE_DIR {cache} is owned by uid {OTHER}" in grid.stdout + grid.stderr
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "out" / "cells.csv").exists()
    assert not proof.exists(), "the planted extension was loaded"
    assert victim.read_text() == "this user's file"
    assert _snapshot(cache) == before


_LIBRARY = """
import sys
from olb.cache import CacheFolderError
from olb.kernels import KernelModule
from olb.data import load_dataset
for use in (lambda: KernelModule("olb.weak.vfdt_core").route, lambda: load_dataset("emotions")):
    try:
        use()
    except CacheFolderError as error:
        print("refused:", error)
    else:
        print("used the planted folder")
"""


def test_nothing_planted_is_loaded_through_the_library(planted):
    """Without olb-run's check up front, the kernels and the data loader refuse the folder themselves."""
    cache, proof, victim = planted
    done = subprocess.run(
        [sys.executable, "-c", _LIBRARY], env=_env(cache), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(f"refused: OLB_CACHE_DIR {cache} is owned by uid {OTHER}, not by you") == 2, done.stdout
    assert not proof.exists() and victim.read_text() == "this user's file"


@pytest.mark.e2e
def test_a_folder_of_ones_own_open_to_others_is_refused(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    done = _olb_run(cache)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert f"{cache} is writable by other users (mode drwxrwxrwx)" in done.stderr
    assert f"run `chmod go-w {cache}`" in done.stderr


def test_every_problem_is_named_at_once(tmp_path, monkeypatch):
    cache, numba_cache = tmp_path / "cache", tmp_path / "numba"
    (cache / "parsed").mkdir(parents=True)
    numba_cache.mkdir()
    (cache / "parsed").chmod(0o775)
    numba_cache.chmod(0o757)
    (cache / "kernels").symlink_to(tmp_path)
    monkeypatch.setenv("OLB_CACHE_DIR", str(cache))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(numba_cache))
    with pytest.raises(CacheFolderError) as refused:
        check_cache_folders()
    assert str(refused.value) == (
        f"3 cache folders refused: (1) cache folder {cache / 'kernels'} is a symbolic link: olb made it a folder "
        f"of its own; remove it; (2) cache folder {cache / 'parsed'} is writable by other users (mode drwxrwxr-x): "
        f"they can change what olb reads; run `chmod go-w {cache / 'parsed'}` or use a folder of your own; "
        f"(3) NUMBA_CACHE_DIR {numba_cache} is writable by other users (mode drwxr-xrwx): they can change what olb "
        f"reads; run `chmod go-w {numba_cache}` or use a folder of your own"
    )


def test_the_folders_olb_creates_are_user_only_at_every_level(tmp_path, monkeypatch):
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "a" / "b" / "cache"))
    old = os.umask(0)
    try:
        folder = private_cache("kernels")
    finally:
        os.umask(old)
    for level in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "cache", folder):
        assert stat.S_IMODE(level.lstat().st_mode) == 0o700, level


def test_a_level_made_by_another_user_meanwhile_is_refused(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("no second user: the test needs root to give a folder to uid 65534")
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OLB_KERNELS_DIR")  # the kernels then go to <cache>/kernels
    private_cache()
    squatted = tmp_path / "cache" / "kernels"
    squatted.mkdir(mode=0o700)
    os.chown(squatted, OTHER, OTHER)
    with pytest.raises(CacheFolderError, match=rf"cache folder {squatted} is owned by uid {OTHER}"):
        kernels.extension_folder()
