"""Bad inputs, missing data and downloads, on small files and registry entries written by the tests."""

import functools
import hashlib
import http.server
import re
import socket
import threading

import numpy as np
import pytest
import yaml

from olb.data import (
    DataFormatError,
    DatasetUnavailable,
    DownloadError,
    IncompleteDataDir,
    UnknownDatasetError,
    dataset_names,
    load_dataset,
)

TRAIN = """\
@relation tiny
@attribute f1 numeric
@attribute f2 {a,b}
@attribute L1 {0,1}
@attribute L2 {0,1}
@data
0.5,a,1,0
1.5,b,0,1
"""
TEST = TRAIN.split("@data\n")[0] + "@data\n?,a,1,1\n"
XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="L2"></label>
<label name="L1"></label>
</labels>
"""
TINY_SHAPE = {"n_examples": 3, "n_train": 2, "n_features": 2, "n_labels": 2}
BALANCE = "B,1,1,1,1\nR,1,1,1,2\nL,1,1,1,3\n\n"
BALANCE_ENTRY = {
    "task": "multiclass",
    "format": "uci_csv",
    "shape": {"n_examples": 3, "n_train": None, "n_features": 4, "n_labels": 3},
    "target": {"column": "class", "classes": ["L", "B", "R"]},
    "columns": ["class", "lw", "ld", "rw", "rd"],
}


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A registry of one's own: ``add(name, {role: (path, text or None)}, **entry)`` writes the entry and
    the files (text ``None``: not written) and returns the data dir."""
    conf, data = tmp_path / "conf", tmp_path / "data"
    (conf / "dataset").mkdir(parents=True)
    monkeypatch.setenv("OLB_CONF_DIR", str(conf))
    monkeypatch.delenv("OLB_DATA_DIR", raising=False)

    def add(name, texts, **entry):
        for path, text in texts.values():
            if text is not None:
                (data / path).parent.mkdir(parents=True, exist_ok=True)
                (data / path).write_text(text)
        entry = {"name": name, **entry}
        entry.setdefault("files", {role: {"path": path} for role, (path, _) in texts.items()})
        (conf / "dataset" / f"{name}.yaml").write_text(yaml.safe_dump(entry, sort_keys=False))
        return data

    return add


def add_tiny(registry, train=TRAIN, test=TEST, xml=XML, **entry):
    files = {"train": ("tiny/train.arff", train), "test": ("tiny/test.arff", test), "labels": ("tiny/tiny.xml", xml)}
    return registry("tiny", files, **{"task": "multilabel", "format": "mulan_arff", "shape": TINY_SHAPE, **entry})


def test_tiny_mulan_set_loads(registry):
    ds = load_dataset("tiny", add_tiny(registry))
    assert ds.label_names == ("L2", "L1")  # XML order
    assert ds.Y.tolist() == [[0, 1], [1, 0], [1, 1]]
    assert ds.nominal == (None, ("a", "b")) and ds.X[1, 1] == 1 and np.isnan(ds.X[2, 0])


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(UnknownDatasetError, match="'nope'.*emotions.*yeast"):
        load_dataset("nope")
    assert "emotions" in dataset_names()


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda text: text[:-3], r"train\.arff: Bad @DATA instance format in line 8"),  # cut inside a row
        (lambda text: text.split("@data")[0], r"train\.arff: Invalid layout"),  # cut before @data
        (lambda text: text.replace("tiny", "tiny stuff"), r"train\.arff: Bad @RELATION format, at line 1"),
        (lambda text: text.replace("1.5,b", "x,b"), r"train\.arff: Invalid numerical value, at line 8"),
        (lambda text: text.replace("1.5,b,0", "1.5,b,2"), r"train\.arff: Data value 2 not found .* line 8"),
        (
            lambda text: text.replace("L1 {0,1}", "L1 numeric").replace("1.5,b,0", "1.5,b,2"),
            r"train\.arff, line 8: label column 'L1' is 2; labels must be 0 or 1",
        ),
        (lambda text: text.replace("1.5,b,0", "1.5,b,?"), r"train\.arff, line 8: label column 'L1' is missing"),
        (lambda text: text.replace("L2 {0,1}", "L2 {0,1,2}"), r"label column 'L2' declares the values \{0, 1, 2\}"),
        (
            lambda text: text.replace("L2 {0,1}", "f3 {0,1}"),
            r"train\.arff: its last 2 attributes do not match .*tiny\.xml: not in the ARFF tail: 'L2'; "
            r"not in the XML: 'f3'",
        ),
    ],
)
def test_malformed_arff(registry, edit, problem):
    data = add_tiny(registry, train=edit(TRAIN), test=edit(TEST))
    with pytest.raises(DataFormatError, match=problem):
        load_dataset("tiny", data)


def test_row_count_is_checked(registry):
    data = add_tiny(registry, train=TRAIN.rsplit("1.5", 1)[0])  # truncated at a row boundary
    with pytest.raises(DataFormatError, match=r"train\.arff: 1 rows, expected 2 \(expected by .*tiny\.yaml\)"):
        load_dataset("tiny", data)


def test_feature_count_is_checked(registry):
    data = add_tiny(registry, shape={**TINY_SHAPE, "n_features": 3})
    with pytest.raises(DataFormatError, match=r"2 features, expected 3"):
        load_dataset("tiny", data)


def test_train_and_test_headers_must_agree(registry):
    data = add_tiny(registry, test=TEST.replace("f2 {a,b}", "f2 {a,c}"))
    with pytest.raises(DataFormatError, match=r"test\.arff: its attributes differ from those of .*train\.arff"):
        load_dataset("tiny", data)


@pytest.mark.parametrize(
    "xml, problem",
    [
        (XML.replace('"L2"', '"L3"'), r"not in the ARFF tail: 'L3'; not in the XML: 'L2'"),
        (XML.replace("</labels>", ""), r"tiny\.xml: malformed label XML: .*line"),
        (XML.replace('"L2"', '"L1"'), r"tiny\.xml: a MULAN label XML needs"),
    ],
)
def test_label_set_must_match_the_xml(registry, xml, problem):
    data = add_tiny(registry, xml=xml)
    with pytest.raises(DataFormatError, match=problem):
        load_dataset("tiny", data)


def test_meka_labels_first_and_relation_comment(registry):
    meka = "@relation 'tiny: -C 2' %50\n" + "\n".join(
        ["@attribute L1 {0,1}", "@attribute L2 {0,1}", "@attribute f1 numeric", "@data", "{0 1,2 0.5}", "{}", ""]
    )
    shape = {"n_examples": 2, "n_train": None, "n_features": 1, "n_labels": 2}
    entry = {"task": "multilabel", "format": "meka_arff", "shape": shape}
    data = registry("meka", {"data": ("meka.arff", meka)}, target={"first": 2}, **entry)
    ds = load_dataset("meka", data)
    assert (
        ds.label_names == ("L1", "L2")
        and ds.Y.tolist() == [[1, 0], [0, 0]]
        and ds.is_sparse
        and ds.rows(slice(None)).tolist() == [[0.5], [0]]
    )
    registry("meka", {"data": ("meka.arff", meka)}, target={"first": 1}, **entry)
    with pytest.raises(DataFormatError, match=r"meka\.arff: the relation declares -C 2 but .*meka\.yaml says first: 1"):
        load_dataset("meka", data)


def test_uci_table_loads(registry):
    ds = load_dataset("balance", registry("balance", {"data": ("b.data", BALANCE)}, **BALANCE_ENTRY))
    assert ds.Y.tolist() == [1, 2, 0] and ds.feature_names == ("lw", "ld", "rw", "rd") and ds.n_train is None


@pytest.mark.parametrize(
    "text, problem",
    [
        ("B,1,1,1,1\nR,1,1\nL,1,1,1,3\n", r"b\.data, line 2: 3 fields, expected 5"),
        ("B,1,1,1,1\nR,1,1,1,2,9\nL,1,1,1,3\n", r"b\.data: .*Expected 5 fields in line 2, saw 6"),
        ("B,1,1,1,1\nR,1,x,1,2\nL,1,1,1,3\n", r"b\.data, line 2: column 'ld' holds 'x', not a number"),
        ("B,1,1,1,1\nQ,1,1,1,2\nL,1,1,1,3\n", r"b\.data, line 2: column 'class' holds 'Q', not one of L, B, R"),
        ("B,1,1,1,1\n\n?,1,1,1,2\nL,1,1,1,3\n", r"b\.data, line 3: the class \(column 'class'\) is missing"),
    ],
)
def test_malformed_uci_table(registry, text, problem):
    data = registry("balance", {"data": ("b.data", text)}, **BALANCE_ENTRY)
    with pytest.raises(DataFormatError, match=problem):
        load_dataset("balance", data)


def test_missing_features_and_tolerated_cells(registry):
    text = "B,?,1,1,1\nR,1,,1,2\nL,1,1,1,oops\n"
    data = registry("balance", {"data": ("b.data", text)}, **BALANCE_ENTRY, unparsable_cells=1)
    ds = load_dataset("balance", data)
    assert np.isnan(ds.X).sum() == 3 and np.isnan(ds.X[2, 3])


def test_libsvm_multilabel(registry):
    text = "3,1 1:0.5 4:2\n 2:1\n1 3:-1.5  # a comment\n"
    entry = {"task": "multilabel", "format": "libsvm_multilabel"}
    shape = {"n_examples": 3, "n_train": None, "n_features": 4, "n_labels": 2}
    ds = load_dataset("svm", registry("svm", {"data": ("tiny.svm", text)}, shape=shape, **entry))
    assert ds.label_names == ("1", "3") and ds.Y.tolist() == [[1, 1], [0, 0], [1, 0]]
    assert ds.is_sparse and ds.rows([0, 1, 2]).tolist() == [[0.5, 0, 0, 2], [0, 1, 0, 0], [0, 0, -1.5, 0]]
    for bad, problem in (("1 5:1\n", r"line 1: feature index outside 1\.\.4"), ("1 2:1\n1 x\n", r"line 2: expected")):
        data = registry("svm", {"data": ("tiny.svm", bad)}, shape=shape, **entry)
        with pytest.raises(DataFormatError, match=rf"tiny\.svm, {problem}"):
            load_dataset("svm", data)


def test_unavailable_without_url(registry):
    files = {"data": ("tiny/tiny.arff", None), "labels": ("tiny/tiny.xml", None)}
    registry("tiny", files, task="multilabel", format="mulan_arff", shape=TINY_SHAPE, source="https://example.org/tiny")
    with pytest.raises(DatasetUnavailable, match=r"no download URL .*tiny/tiny\.arff.*OLB_DATA_DIR.*example\.org"):
        load_dataset("tiny")


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        self.server.requests.append(self.path)


@pytest.fixture
def http_server(tmp_path):
    """A file server on 127.0.0.1 for ``(root dir, base URL, list of requested paths)``."""
    root = tmp_path / "www"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_port}", server.requests
    server.shutdown()
    server.server_close()
    thread.join()


def remote_tiny(registry, base, sha256=None):
    """Register the tiny set with every file on the server; ``sha256`` overrides the train file's."""
    files = {}
    for role, name, text in (("train", "train.arff", TRAIN), ("test", "test.arff", TEST), ("labels", "tiny.xml", XML)):
        digest = hashlib.sha256(text.encode()).hexdigest()
        files[role] = {"path": f"tiny/{name}", "sha256": digest, "url": f"{base}/{name}"}
    if sha256:
        files["train"]["sha256"] = sha256
    registry("tiny", {}, task="multilabel", format="mulan_arff", shape=TINY_SHAPE, files=files)


def test_download_fills_the_cache_once(registry, http_server, tmp_path, monkeypatch):
    root, base, requests = http_server
    for name, text in (("train.arff", TRAIN), ("test.arff", TEST), ("tiny.xml", XML)):
        (root / name).write_text(text)
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "cache"))
    remote_tiny(registry, base)
    assert load_dataset("tiny").label_names == ("L2", "L1")
    assert (tmp_path / "cache" / "tiny" / "train.arff").read_text() == TRAIN
    assert load_dataset("tiny").n_examples == 3
    assert sorted(requests) == ["/test.arff", "/tiny.xml", "/train.arff"]  # the second load used the cache


def test_download_checksum_mismatch(registry, http_server, tmp_path, monkeypatch):
    root, base, _ = http_server
    for name, text in (("train.arff", TRAIN), ("test.arff", TEST), ("tiny.xml", XML)):
        (root / name).write_text(text)
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "cache"))
    remote_tiny(registry, base, sha256="0" * 64)
    with pytest.raises(DownloadError, match=r"train\.arff.*does not match the known hash.*Put the files .*DATA_DIR"):
        load_dataset("tiny")
    assert not (tmp_path / "cache" / "tiny" / "train.arff").exists()


def test_download_from_an_unreachable_server(registry):
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    remote_tiny(registry, f"http://127.0.0.1:{port}")
    with pytest.raises(DownloadError, match=rf"could not download http://127\.0\.0\.1:{port}/train\.arff .*Connection"):
        load_dataset("tiny")


def test_a_cached_file_with_another_checksum_is_reported_as_such(registry, monkeypatch, tmp_path):
    from olb.data import DownloadError
    from olb.cache import cache_dir

    entry = {
        "task": "multilabel",
        "format": "meka_arff",
        "target": {"first": 1},
        "shape": {"n_examples": 1, "n_train": None, "n_features": 1, "n_labels": 1},
        "files": {"data": {"path": "far/far.arff", "sha256": "0" * 64, "url": "http://127.0.0.1:9/far.arff"}},
    }
    registry("far", {"data": ("far/far.arff", None)}, **entry)
    cached = cache_dir() / "far" / "far.arff"
    cached.parent.mkdir(parents=True)
    cached.write_text("not the registered file\n")
    with pytest.raises(DownloadError, match=rf"the cached file {cached} has sha256 [0-9a-f]{{64}}, expected 0{{64}}"):
        load_dataset("far")


@pytest.mark.parametrize("value", ["inf", "-inf", "1e999", "nan", "Infinity"])
def test_non_finite_features_are_refused_with_file_and_line(registry, value):
    data = add_tiny(registry, test=TEST.replace("?,a", f"{value},a"))
    with pytest.raises(DataFormatError, match=r"test\.arff, line 7: attribute 'f1' is -?(inf|nan), not a finite"):
        load_dataset("tiny", data)


def test_non_finite_features_in_a_sparse_arff_are_refused(registry):
    meka = "@relation 'tiny: -C 1'\n@attribute L1 {0,1}\n@attribute f1 numeric\n@attribute f2 numeric\n@data\n"
    shape = {"n_examples": 3, "n_train": None, "n_features": 2, "n_labels": 1}
    entry = {"task": "multilabel", "format": "meka_arff", "shape": shape, "target": {"first": 1}}
    data = registry("meka", {"data": ("meka.arff", meka + "{0 1,1 ?}\n{2 0.5}\n{}\n")}, **entry)
    assert np.isnan(load_dataset("meka", data).X[0, 0])  # ? is a missing value
    registry("meka", {"data": ("meka.arff", meka + "{0 1,1 ?}\n% a comment\n{2 1e999}\n{1 nan}\n")}, **entry)
    with pytest.raises(DataFormatError, match=r"meka\.arff, line 8: attribute 'f2' is inf.*: 2, also on lines 9\)"):
        load_dataset("meka", data)


@pytest.mark.parametrize("text", ["B,1,inf,1,1\nR,1,1,1,2\nL,1,1,1,3\n", "B,?,1,1,1\nR,1,-inf,1,2\nL,1,1,1,nan\n"])
def test_non_finite_cells_of_a_table_are_refused(registry, text):
    data = registry("balance", {"data": ("b.data", text)}, **BALANCE_ENTRY)
    line = 1 if "B,1,inf" in text else 2
    with pytest.raises(
        DataFormatError, match=rf"b\.data, line {line}: column 'l?d' holds '-?inf', not a finite number"
    ):
        load_dataset("balance", data)


def test_non_finite_libsvm_values_are_refused(registry):
    entry = {"task": "multilabel", "format": "libsvm_multilabel"}
    shape = {"n_examples": 2, "n_train": None, "n_features": 2, "n_labels": 1}
    data = registry("svm", {"data": ("tiny.svm", "1 1:0.5\n\n1 2:1e999\n")}, shape=shape, **entry)
    with pytest.raises(DataFormatError, match=r"tiny\.svm, line 3: feature value inf, not a finite number"):
        load_dataset("svm", data)


def test_a_download_without_checksum_needs_verify_checksums_false(registry, http_server, tmp_path, monkeypatch):
    root, base, requests = http_server
    for name, text in (("train.arff", TRAIN), ("test.arff", TEST), ("tiny.xml", XML)):
        (root / name).write_text(text)
    files = {
        role: {"path": f"tiny/{name}", "sha256": None, "url": f"{base}/{name}"}
        for role, name in (("train", "train.arff"), ("test", "test.arff"), ("labels", "tiny.xml"))
    }
    registry("tiny", {}, task="multilabel", format="mulan_arff", shape=TINY_SHAPE, files=files)
    with pytest.raises(
        DatasetUnavailable, match=r"no sha256 is registered for tiny/train\.arff, .*verify_checksums=false"
    ):
        load_dataset("tiny")
    assert requests == []  # refused before any download
    from olb.data import load_with_provenance

    dataset, source = load_with_provenance("tiny", verify_checksums=False)
    assert dataset.n_examples == 3 and not source.verified and len(requests) == 3


def test_a_file_shared_with_another_data_set_is_no_partial_copy(registry):
    """A data dir staging one set holds a file of another (mediamill's label XML is m-reduced's too): the
    other is not a partial copy, it is looked for elsewhere."""
    data = add_tiny(registry)
    files = {"data": ("other/other.arff", None), "labels": ("tiny/tiny.xml", XML)}
    registry("other", files, task="multilabel", format="mulan_arff", shape=TINY_SHAPE)
    with pytest.raises(DatasetUnavailable, match=r"'other' is not available: no download URL .*other\.arff"):
        load_dataset("other", data)
    (data / "tiny" / "train.arff").unlink()
    with pytest.raises(IncompleteDataDir, match=r"holds only part of data set 'tiny': .*train\.arff missing"):
        load_dataset("tiny", data)


@pytest.mark.parametrize(
    "path, problem",
    [
        ("../../outside/train.arff", "not normalised"),
        ("tiny/../../../outside/train.arff", "not normalised"),
        ("/tmp/outside/train.arff", "absolute"),
        ("./tiny/train.arff", "not normalised"),
        ("tiny//train.arff", "not normalised"),
    ],
)
def test_a_file_path_leaving_the_data_dir_is_refused_naming_the_config(registry, http_server, tmp_path, path, problem):
    """Refused when the entry is read, naming the config file and the key: nothing read, downloaded or created."""
    root, base, requests = http_server
    (root / "train.arff").write_text(TRAIN)
    remote_tiny(registry, base)
    entry_file = tmp_path / "conf" / "dataset" / "tiny.yaml"
    entry = yaml.safe_load(entry_file.read_text())
    entry["files"]["train"]["path"] = path
    entry_file.write_text(yaml.safe_dump(entry))
    with pytest.raises(DataFormatError, match=rf"{entry_file}: files\.train\.path: '{re.escape(path)}' is {problem}"):
        load_dataset("tiny")
    assert requests == [] and not (tmp_path / "outside").exists()


def test_a_download_does_not_follow_a_link_out_of_the_cache(registry, http_server, tmp_path):
    """A folder of the cache replaced by a link elsewhere: the download is refused before any request."""
    from olb.cache import cache_dir

    root, base, requests = http_server
    for name, text in (("train.arff", TRAIN), ("test.arff", TEST), ("tiny.xml", XML)):
        (root / name).write_text(text)
    remote_tiny(registry, base)
    outside = tmp_path / "outside"
    outside.mkdir()
    cache_dir().mkdir(parents=True, exist_ok=True)
    (cache_dir() / "tiny").symlink_to(outside)
    with pytest.raises(DownloadError, match=rf"{cache_dir() / 'tiny'} is a link \(to {outside}\): a download stays"):
        load_dataset("tiny")
    assert requests == [] and list(outside.iterdir()) == []
