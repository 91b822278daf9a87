"""Caches that cannot lie, on copies of the real emotions files: file hashes no same-size edit passes, parsed
arrays verified when read, private cache folders; and the inputs refused before they are cached (config
mismatches, incomplete or missing data dirs, unverifiable downloads)."""

import hashlib
import importlib
import os
import shutil
import stat
import time
import warnings

import numpy as np
import pytest

from olb.cache import (
    CacheFolderError,
    CacheWarning,
    cache_dir,
    check_cache_folders,
    private_dir,
    use_private_numba_cache,
)
from olb.data import (
    ChecksumMismatch,
    DataDirWarning,
    DataFormatError,
    DatasetUnavailable,
    IncompleteDataDir,
    dataset_spec,
    load_dataset,
    load_with_provenance,
)
from olb.data.opening import EMBEDDED_DIR
from olb.data.parsed import parsed_path

provenance_module = importlib.import_module("olb.data.provenance")  # olb.data.provenance is also a function


@pytest.fixture
def emotions(tmp_path, monkeypatch):
    """A data dir holding a copy of the real emotions files (from the package's embedded copy)."""
    monkeypatch.delenv("OLB_DATA_DIR", raising=False)
    data = tmp_path / "data"
    for file in dataset_spec("emotions").files.values():
        (data / file.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(EMBEDDED_DIR / file.path.rsplit("/", 1)[-1], data / file.path)
    return data


def train_file(data):
    return data / dataset_spec("emotions").files["train"].path


def edit_keeping_size_and_mtime(path, old: bytes, new: bytes):
    """Replace the first ``old`` by ``new`` (same length) in place and set the modification time back, as
    ``cp -p``, ``rsync -a`` or ``touch -r`` do."""
    assert len(old) == len(new)
    info = path.stat()
    time.sleep(0.05)  # past the file system's timestamp granularity: the ctime moves on
    content = path.read_bytes()
    assert old in content
    path.write_bytes(content.replace(old, new, 1))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (info.st_size, info.st_mtime_ns)


FIRST_VALUE = b"\n0.034741,"  # X[0, 0] of emotions-train.arff
EDITED_VALUE = b"\n0.934741,"


def test_a_same_size_edit_keeping_mtime_is_caught(emotions):
    original, source = load_with_provenance("emotions", emotions)
    assert source.verified
    edit_keeping_size_and_mtime(train_file(emotions), FIRST_VALUE, EDITED_VALUE)
    with pytest.raises(ChecksumMismatch, match=r"emotions-train\.arff: sha256 \w+, expected bbe704"):
        load_dataset("emotions", emotions)
    edited, edited_source = load_with_provenance("emotions", emotions, verify_checksums=False)
    assert edited.X[0, 0] == 0.934741 and edited_source.fingerprint != source.fingerprint
    edit_keeping_size_and_mtime(train_file(emotions), EDITED_VALUE, FIRST_VALUE)  # the file restored
    restored, restored_source = load_with_provenance("emotions", emotions)
    assert restored_source == source
    np.testing.assert_array_equal(restored.X, original.X)


def test_large_files_hash_cache_notices_an_edit_keeping_size_and_mtime(emotions, monkeypatch):
    """Files over the size limit take their hash from sha256.json, keyed by inode and ctime too."""
    monkeypatch.setattr(provenance_module, "SMALL_FILE", 0)
    monkeypatch.setattr(provenance_module, "_hashed_here", {})
    load_dataset("emotions", emotions)
    assert str(train_file(emotions).resolve()) in (cache_dir() / "sha256.json").read_text()
    edit_keeping_size_and_mtime(train_file(emotions), FIRST_VALUE, EDITED_VALUE)
    monkeypatch.setattr(provenance_module, "_hashed_here", {})  # a new process: only the on-disk cache
    with pytest.raises(ChecksumMismatch, match=r"emotions-train\.arff"):
        load_dataset("emotions", emotions)


def test_small_files_are_rehashed_in_every_process(emotions, monkeypatch):
    """Even with an on-disk entry matching every stat field, a small file is hashed on its first use."""
    load_dataset("emotions", emotions)
    path = train_file(emotions).resolve()
    info = path.stat()
    key = f"{path}|{info.st_size}|{info.st_mtime_ns}|{info.st_ino}|{info.st_ctime_ns}"
    monkeypatch.setattr(provenance_module, "_hashed_here", {})
    monkeypatch.setattr(
        provenance_module, "_read_hash_cache", lambda: {key: dataset_spec("yeast").files["train"].sha256}
    )
    assert provenance_module.file_sha256(path) == dataset_spec("emotions").files["train"].sha256


def parsed_file(data):
    _, source = load_with_provenance("emotions", data)
    return parsed_path("emotions", source.fingerprint)


def rewrite(path, **changes):
    with np.load(path) as npz:
        arrays = {key: npz[key] for key in npz.files}
    arrays.update(changes)
    arrays = {key: value for key, value in arrays.items() if value is not None}
    with path.open("wb") as fh:
        np.savez(fh, **arrays)


def load_warning(data, match):
    """Load emotions expecting a CacheWarning matching ``match``; the arrays must be the registered ones."""
    with pytest.warns(CacheWarning, match=match):
        dataset = load_dataset("emotions", data)
    assert dataset.X[0, 0] == 0.034741 and dataset.X.shape == (593, 72)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        load_dataset("emotions", data)  # rebuilt: read back without a warning
    return dataset


def test_a_planted_cache_file_with_altered_arrays_is_detected(emotions):
    path = parsed_file(emotions)
    with np.load(path) as npz:
        X = npz["X"].copy()
    X[0, 0] = 99.0
    rewrite(path, X=X)
    load_warning(emotions, rf"{path}: its arrays differ from its digest.*parsed again")
    rewrite(path, X=X, digest=None)
    load_warning(emotions, rf"{path}: no digest")


def test_arrays_parsed_from_other_files_are_not_served_under_this_fingerprint(emotions):
    """The edited file's arrays, renamed to the registered fingerprint (what the stale cache served)."""
    path = parsed_file(emotions)
    registered = path.read_bytes()
    edit_keeping_size_and_mtime(train_file(emotions), FIRST_VALUE, EDITED_VALUE)
    _, edited = load_with_provenance("emotions", emotions, verify_checksums=False)
    shutil.copy(parsed_path("emotions", edited.fingerprint), path)
    edit_keeping_size_and_mtime(train_file(emotions), EDITED_VALUE, FIRST_VALUE)
    load_warning(emotions, rf"{path}: parsed from other files")
    assert path.read_bytes() == registered  # rebuilt the same way


@pytest.mark.parametrize("damage", ["truncated", "empty", "not a zip", "bit flip"])
def test_a_corrupt_cache_file_is_named_removed_and_rebuilt(emotions, damage):
    path = parsed_file(emotions)
    content = bytearray(path.read_bytes())
    if damage == "truncated":
        content = content[: len(content) // 2]
    elif damage == "empty":
        content = b""
    elif damage == "not a zip":
        content = b"PK\x03\x04 junk" * 10
    else:
        content[len(content) // 3] ^= 0x10
    path.write_bytes(bytes(content))
    load_warning(emotions, rf"{path}: (unreadable|its arrays differ)")


def test_no_single_byte_damage_gives_a_traceback_or_wrong_arrays(emotions):
    path = parsed_file(emotions)
    good = path.read_bytes()
    expected = load_dataset("emotions", emotions)
    # the first member's header (6: its flag bits) and metadata, bytes across the arrays, the zip directory
    positions = sorted(
        {6, *range(0, 600, 41), *range(0, len(good), len(good) // 12), *range(len(good) - 300, len(good), 31)}
    )
    for position in positions:
        damaged = bytearray(good)
        damaged[position] ^= 0xFF
        path.write_bytes(bytes(damaged))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheWarning)
            dataset = load_dataset("emotions", emotions)
        np.testing.assert_array_equal(dataset.X, expected.X, err_msg=f"byte {position}")
        np.testing.assert_array_equal(dataset.Y, expected.Y, err_msg=f"byte {position}")
        assert dataset.feature_names == expected.feature_names and dataset.label_names == expected.label_names


def test_caches_are_user_only(emotions, tmp_path, monkeypatch):
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "home" / ".cache" / "olb"))
    old = os.umask(0o002)  # a cluster's usual umask: group-writable unless asked otherwise
    try:
        parsed_file(emotions)
    finally:
        os.umask(old)
    for folder in (tmp_path / "home" / ".cache", cache_dir(), cache_dir() / "parsed"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(next((cache_dir() / "parsed").iterdir()).stat().st_mode) == 0o600


def test_a_cache_folder_others_may_write_to_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(CacheFolderError, match=rf"cache folder {shared} is writable by other users.*chmod go-w"):
        private_dir(shared)


@pytest.fixture
def numba_config(monkeypatch):
    """numba's configuration and NUMBA_CACHE_DIR, restored after the test."""
    import numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    return numba.config


def test_numba_cache_stays_beside_a_writable_source(numba_config, tmp_path):
    assert use_private_numba_cache(tmp_path) is None and "NUMBA_CACHE_DIR" not in os.environ


def test_numba_cache_is_user_only_where_the_package_is_read_only(numba_config, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # the tests may run as root
    chosen = use_private_numba_cache(tmp_path)
    assert chosen == os.environ["NUMBA_CACHE_DIR"] == numba_config.CACHE_DIR == str(cache_dir() / "numba")
    assert stat.S_IMODE((cache_dir() / "numba").stat().st_mode) == 0o700


def test_a_shared_writable_numba_cache_is_refused(numba_config, tmp_path, monkeypatch):
    shared = tmp_path / "numba"
    shared.mkdir()
    shared.chmod(0o775)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(shared))
    assert use_private_numba_cache(tmp_path) == str(shared)
    with pytest.raises(CacheFolderError, match=rf"NUMBA_CACHE_DIR {shared} is writable by other users"):
        check_cache_folders()


def own_registry(tmp_path, monkeypatch, **shape):
    """A copy of olb's registry whose emotions entry declares ``shape`` changes."""
    import olb

    conf = tmp_path / "conf"
    shutil.copytree(olb.conf_dir() / "dataset", conf / "dataset")
    entry = conf / "dataset" / "emotions.yaml"
    text = entry.read_text()
    for key, value in shape.items():
        text = text.replace(f"{key}: {getattr(dataset_spec('emotions').shape, key)}", f"{key}: {value}")
    entry.write_text(text)
    monkeypatch.setenv("OLB_CONF_DIR", str(conf))
    return entry


@pytest.mark.parametrize(
    "key, value, problem", [("n_features", 71, "72 features, expected 71"), ("n_labels", 5, "6 labels, expected 5")]
)
def test_a_config_disagreeing_with_the_files_is_refused_even_when_cached(
    emotions, tmp_path, monkeypatch, key, value, problem
):
    path = parsed_file(emotions)
    entry = own_registry(tmp_path, monkeypatch, **{key: value})
    with pytest.raises(DataFormatError, match=rf"emotions-train\.arff.*: {problem} \(expected by {entry}\)"):
        load_dataset("emotions", emotions)
    assert path.is_file()  # the cache was there and was read


def test_an_incomplete_data_dir_is_named_never_replaced(emotions, monkeypatch):
    (emotions / dataset_spec("emotions").files["labels"].path).unlink()
    with pytest.raises(IncompleteDataDir, match=rf"data dir {emotions} holds only part of .*emotions\.xml missing"):
        load_dataset("emotions", emotions)  # the embedded copy is not used in its place
    monkeypatch.setenv("OLB_DATA_DIR", str(emotions))
    with pytest.raises(IncompleteDataDir, match="emotions.xml missing"):
        load_dataset("emotions")


def test_an_incomplete_data_dir_is_a_grid_problem_not_an_unavailable_set(emotions):
    from olb.grid.datacheck import check_data
    from olb.grid.planning.plan import Problems

    (emotions / dataset_spec("emotions").files["labels"].path).unlink()
    problems = Problems()
    check = check_data(["emotions"], str(emotions), True, problems)
    assert not check.sources and not check.unavailable
    assert len(problems.items) == 1 and "emotions.xml missing" in problems.items[0]


def test_a_missing_data_dir_is_named(tmp_path, monkeypatch):
    missing = tmp_path / "no-such-dir"
    monkeypatch.delenv("OLB_DATA_DIR", raising=False)
    with pytest.warns(DataDirWarning, match=rf"data_dir: the data dir\(s\) {missing} do not exist.*embedded"):
        assert load_dataset("emotions", missing).n_examples == 593
    monkeypatch.setenv("OLB_DATA_DIR", f"{missing}{os.pathsep}{tmp_path}")
    with pytest.raises(DatasetUnavailable, match=rf"under {missing} \(which does not exist\) or {tmp_path}\."):
        with pytest.warns(DataDirWarning, match="OLB_DATA_DIR"):
            load_dataset("movement")  # no URL: unavailable, the reason named


def test_a_download_without_a_registered_checksum_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("OLB_DATA_DIR", raising=False)
    spec = dataset_spec("rcv1v2_topics")
    assert all(file.url and not file.sha256 for file in spec.files.values())
    with pytest.raises(DatasetUnavailable, match=r"no sha256 is registered for rcv1v2/.*verify_checksums=false"):
        load_dataset("rcv1v2_topics")  # refused before any download: no network used


def test_every_other_download_has_a_checksum():
    from olb.data import dataset_names

    unverified = {
        name for name in dataset_names() for file in dataset_spec(name).files.values() if file.url and not file.sha256
    }
    assert unverified == {"rcv1v2_topics", "rcv1v2_industries", "rcv1v2_regions"}  # no copy here to hash


@pytest.mark.e2e
def test_a_same_size_edit_keeping_mtime_is_caught_by_the_next_process(emotions, tmp_path):
    """Across processes, as in a grid rerun: the first process verified and cached the registered files."""
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "OLB_CACHE_DIR": str(cache_dir())}
    script = "import sys; from olb.data import load_dataset; print(load_dataset('emotions', sys.argv[1]).X[0, 0])"

    def load():
        return subprocess.run([sys.executable, "-c", script, str(emotions)], capture_output=True, text=True, env=env)

    assert load().stdout.strip() == "0.034741"
    edit_keeping_size_and_mtime(train_file(emotions), FIRST_VALUE, EDITED_VALUE)
    refused = load()
    assert refused.returncode == 1 and "ChecksumMismatch" in refused.stderr and "emotions-train.arff" in refused.stderr
    edit_keeping_size_and_mtime(train_file(emotions), EDITED_VALUE, FIRST_VALUE)
    assert load().stdout.strip() == "0.034741"


def swap_in(path, content: bytes):
    """Replace ``path`` by a new file holding ``content`` (a rename, as another writer would)."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_bytes(content)
    os.replace(fresh, path)


@pytest.mark.parametrize("seam", ["after the hash", "after the read"])
def test_a_file_swapped_between_hash_and_parse_is_stored_under_its_own_hash(emotions, monkeypatch, seam):
    """The file is swapped after its hash, before it is read to be parsed (or after that read, before the
    parse): the arrays stored are those of the bytes their fingerprint hashes, and a later load of either
    version reads that version's values."""
    import olb.data

    path = train_file(emotions)
    original = path.read_bytes()
    edited = original.replace(FIRST_VALUE, EDITED_VALUE, 1)
    read_files = olb.data.read_files

    def swapping(paths):
        if seam == "after the hash":
            swap_in(path, edited)
        files = read_files(paths)
        if seam == "after the read":
            swap_in(path, edited)
        return files

    monkeypatch.setattr(olb.data, "read_files", swapping)
    dataset, source = load_with_provenance("emotions", emotions, verify_checksums=False)
    parsed = edited if seam == "after the hash" else original
    assert source.hashes["train"] == hashlib.sha256(parsed).hexdigest()
    assert dataset.X[0, 0] == (0.934741 if parsed is edited else 0.034741)
    monkeypatch.setattr(olb.data, "read_files", read_files)
    for content, value in ((original, 0.034741), (edited, 0.934741)):  # each version reads its own values
        swap_in(path, content)
        monkeypatch.setattr(provenance_module, "_hashed_here", {})  # a fresh process
        assert load_dataset("emotions", emotions, verify_checksums=False).X[0, 0] == value


def test_a_file_swapped_after_a_verified_hash_is_refused(emotions, monkeypatch):
    """The swapped bytes are verified too: with checksums on, an edit slipped in after the hash is refused,
    and nothing is stored under the verified fingerprint."""
    import olb.data

    path = train_file(emotions)
    original = path.read_bytes()
    read_files = olb.data.read_files

    def swapping(paths):
        swap_in(path, original.replace(FIRST_VALUE, EDITED_VALUE, 1))
        return read_files(paths)

    monkeypatch.setattr(olb.data, "read_files", swapping)
    with pytest.raises(ChecksumMismatch, match=r"emotions-train\.arff: sha256 \w+, expected bbe704"):
        load_dataset("emotions", emotions)
    assert not list((cache_dir() / "parsed").glob("emotions-*"))


def test_a_link_in_the_cache_is_not_followed(tmp_path, monkeypatch):
    """A cached file replaced by a link (to a file of the registered content, elsewhere) is refused, never read."""
    from olb.data import DataError
    from olb.data.files import read_file

    outside = tmp_path / "elsewhere.arff"
    shutil.copy2(EMBEDDED_DIR / "emotions-train.arff", outside)
    cached = cache_dir() / "emotions" / "emotions-train.arff"
    cached.parent.mkdir(parents=True)
    cached.symlink_to(outside)
    with pytest.raises(DataError, match=rf"{cached} is a link \(to {outside}\); olb reads no link in its cache"):
        read_file(cached)
    with pytest.raises(DataError, match="is a link"):
        provenance_module.file_sha256(cached)
    assert read_file(outside).content == outside.read_bytes()  # outside the cache a link is the user's own
