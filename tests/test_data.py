"""The registry and the loaders on the real benchmark files (numbers from the data's MANIFEST.md)."""

import hashlib
import time

import arff
import numpy as np
import pytest
from omegaconf import OmegaConf
from scipy.stats import rankdata

from olb.data import ChecksumMismatch, dataset_names, dataset_spec, load_dataset, make_multilabel_stream
from olb.data.arff import read_label_xml
from olb.data.files import read_file
from olb.data.opening import EMBEDDED_DIR

slow = pytest.mark.slow

# name: (n_train, n_test, n_features, n_labels, cardinality, distinct label sets); n_test None: no split
MULTILABEL = {
    "emotions": (391, 202, 72, 6, 1.8685, 27),
    "scene": (1211, 1196, 294, 6, 1.0740, 15),
    "yeast": (1500, 917, 103, 14, 4.2371, 198),
    "m-reduced": (1500, 500, 120, 101, 4.3940, 798),
    "birds": (322, 323, 260, 19, 1.0140, 133),
    "bibtex": (4880, 2515, 1836, 159, 2.4019, 2856),
    "enron": (1123, 579, 1001, 53, 3.3784, 753),
    "medical": (333, 645, 1449, 45, 1.2454, 94),
    "corel5k": (4500, 500, 499, 374, 3.5220, 3175),
    "cal500": (335, 167, 68, 174, 26.0438, 502),  # declared split (seeded permutation)
    "slashdot": (1891, 1891, 1079, 22, 1.1809, 156),  # declared split (first rows)
    "flags": (129, 65, 19, 7, 3.3918, 54),
    "tmc2007": (21519, 7077, 500, 22, 2.1579, 1341),
    # the same rows in their union file's order (the MLHAT table's), no split
    "flags-union": (194, None, 19, 7, 3.3918, 54),
    "yeast-union": (2417, None, 103, 14, 4.2371, 198),
    "medical-union": (978, None, 1449, 45, 1.2454, 94),
    "enron-union": (1702, None, 1001, 53, 3.3784, 753),
    "bibtex-union": (7395, None, 1836, 159, 2.4019, 2856),
}
# name: (n_examples, n_features, examples per class)
MULTICLASS = {
    "balance": (625, 4, {"L": 288, "B": 49, "R": 288}),
    "cars": (1728, 6, {"unacc": 1210, "acc": 384, "good": 69, "vgood": 65}),
    "mushroom": (8124, 22, {"e": 4208, "p": 3916}),
    "nursery": (
        12960,
        8,
        {"not_recom": 4320, "priority": 4266, "spec_prior": 4044, "very_recom": 328, "recommend": 2},
    ),
    "mice": (
        1080,
        77,
        {
            "c-CS-m": 150,
            "c-SC-m": 150,
            "c-CS-s": 135,
            "c-SC-s": 135,
            "t-CS-m": 135,
            "t-SC-m": 135,
            "t-SC-s": 135,
            "t-CS-s": 105,
        },
    ),
    "movement": (
        165633,
        18,
        {"sitting": 50631, "standing": 47370, "walking": 43390, "standingup": 12415, "sittingdown": 11827},
    ),
}
NOT_STAGED = {"mediamill", "isolet", "rcv1v2_topics", "rcv1v2_industries", "rcv1v2_regions", "image"}
SPARSE_ON_DISK = {
    "bibtex",
    "enron",
    "medical",
    "corel5k",
    "slashdot",
    "tmc2007",
    "medical-union",
    "enron-union",
    "bibtex-union",
}
GENERATED = {"synthetic-mediamill"}
BIG = {"bibtex", "corel5k", "movement", "tmc2007", "bibtex-union"}


def maybe_slow(names):
    return [pytest.param(name, marks=slow) if name in BIG else name for name in names]


def test_registry_lists_every_dataset():
    assert set(dataset_names()) == set(MULTILABEL) | set(MULTICLASS) | NOT_STAGED | GENERATED


@pytest.mark.parametrize("name", dataset_names())
def test_registry_entry_is_a_plain_mapping(name):
    spec = dataset_spec(name)
    conf = OmegaConf.to_container(OmegaConf.load(spec.conf_file))
    assert conf["name"] == name and conf["task"] == spec.task
    assert set(conf["shape"]) - {"cardinality"} == {"n_examples", "n_train", "n_features", "n_labels"}
    # the label cardinality (planning's boosters' cost) is registered for every staged multi-label data set
    assert ("cardinality" in conf["shape"]) == (name in MULTILABEL)
    for file in spec.files.values():
        assert file.url or file.path.startswith(("movement/", "isolet/", "image/")), f"{name}: {file.path} has no URL"


def test_registry_checksums_match_the_staged_files(data_dir):
    for name in sorted(set(dataset_names()) - NOT_STAGED - GENERATED):
        for file in dataset_spec(name).files.values():
            digest = hashlib.sha256((data_dir / file.path).read_bytes()).hexdigest()
            assert digest == file.sha256, f"{name}: {file.path}"


def test_embedded_files_are_the_registered_ones():
    for file in dataset_spec("emotions").files.values():
        name = file.path.rsplit("/", 1)[-1]
        assert hashlib.sha256((EMBEDDED_DIR / name).read_bytes()).hexdigest() == file.sha256


@pytest.mark.parametrize("name", maybe_slow(MULTILABEL))
def test_multilabel_shapes(load, name):
    n_train, n_test, n_features, n_labels, cardinality, n_label_sets = MULTILABEL[name]
    ds = load(name)
    assert ds.task == "multilabel"
    assert ds.n_train == (n_train if n_test is not None else None)
    assert ds.n_examples == n_train + (n_test or 0)
    assert (ds.n_features, ds.n_labels) == (n_features, n_labels)
    assert ds.X.dtype == np.float64 and ds.Y.dtype == np.int8 and ds.is_sparse == (name in SPARSE_ON_DISK)
    assert set(np.unique(ds.Y)) <= {0, 1}
    assert ds.cardinality == pytest.approx(cardinality, abs=5e-5)
    assert dataset_spec(name).shape.cardinality == cardinality  # what planning is told is what the data has
    assert len(np.unique(ds.Y, axis=0)) == n_label_sets
    assert len(ds.feature_names) == n_features and len(ds.nominal) == n_features


@pytest.mark.parametrize("name", maybe_slow(MULTICLASS))
def test_multiclass_shapes(load, name):
    n_examples, n_features, counts = MULTICLASS[name]
    ds = load(name)
    assert ds.task == "multiclass" and ds.n_train is None
    assert (ds.n_examples, ds.n_features, ds.n_labels) == (n_examples, n_features, len(counts))
    assert ds.Y.dtype == np.int64
    assert dict(zip(ds.label_names, np.bincount(ds.Y).tolist())) == counts


@pytest.mark.parametrize("name", ["yeast", "enron"])
def test_labels_are_matched_by_name_in_xml_order(load, data_dir, name):
    ds = load(name)
    xml_order = read_label_xml(read_file(data_dir / dataset_spec(name).files["labels"].path))
    with open(data_dir / dataset_spec(name).files["train"].path) as fh:
        raw = arff.load(fh, encode_nominal=True, return_type=arff.DENSE)
    arff_order = [attribute for attribute, _ in raw["attributes"]][-len(xml_order) :]
    assert ds.label_names == xml_order and list(xml_order) != arff_order
    raw_labels = np.array(raw["data"], dtype=float)[:, -len(xml_order) :]
    for k, label in enumerate(xml_order):
        assert np.array_equal(ds.Y[: ds.n_train, k], raw_labels[:, arff_order.index(label)])


def test_slashdot_meka_layout_and_relation_comment(load, data_dir):
    assert (data_dir / "slashdot/SLASHDOT-F.arff").read_text().splitlines()[0].endswith("%50")
    ds = load("slashdot")
    assert ds.label_names[:3] == ("Entertainment", "Interviews", "Main") and ds.label_names[-1] == "Technology"
    assert ds.feature_names[:2] == ("0", "000")


def test_birds_nominal_features_are_codes(load):
    ds = load("birds")
    assert ds.feature_names[-2:] == ("hasSegments", "location")
    assert ds.nominal[-1] == ("2", "10", "1", "7", "5", "4", "17", "15", "16", "8", "13", "11")
    assert set(np.unique(ds.X[:, -1])) <= set(range(12)) and ds.nominal[0] is None
    assert "Swainson's Thrush" in ds.label_names


def test_flags_nominal_digit_values_are_codes_not_values(load):
    ds = load("flags")
    landmass = ds.feature_names.index("landmass")
    assert ds.nominal[landmass] == ("1", "2", "3", "4", "5", "6") and ds.nominal[ds.feature_names.index("area")] is None
    assert ds.X[0, landmass] == 3  # the file's first row has landmass 4: the code of the fourth declared value
    assert ds.label_names == ("red", "green", "blue", "yellow", "white", "black", "orange")


def test_mushroom_question_marks_are_missing(load):
    ds = load("mushroom")
    missing = np.isnan(ds.X)
    assert missing.sum() == 2480
    assert missing[:, ds.feature_names.index("stalk-root")].sum() == 2480
    assert ds.nominal[0] == ("b", "c", "x", "f", "k", "s")


def test_mice_keeps_proteins_and_their_missing_values(load):
    ds = load("mice")
    assert np.isnan(ds.X).sum() == 1396
    assert np.isnan(ds.X).any(axis=1).sum() == 528
    assert ds.feature_names[0] == "DYRK1A_N" and ds.feature_names[-1] == "CaNA_N"
    assert not {"MouseID", "Genotype", "Treatment", "Behavior", "class"} & set(ds.feature_names)


@slow
def test_movement_corrupt_cell_is_missing(load):
    ds = load("movement")
    rows, columns = np.nonzero(np.isnan(ds.X))
    assert len(rows) == 1 and ds.feature_names[columns[0]] == "z4"
    row = ds.X[rows[0]]
    assert ds.nominal[0][int(row[0])] == "jose_carlos" and ds.label_names[ds.Y[rows[0]]] == "standingup"
    assert ds.X[0, ds.feature_names.index("how_tall_in_meters")] == 1.62  # decimal comma


def test_emotions_is_embedded(monkeypatch, tmp_path):
    monkeypatch.delenv("OLB_DATA_DIR", raising=False)
    ds = load_dataset("emotions")
    assert (ds.n_train, ds.n_examples, ds.n_features, ds.n_labels) == (391, 593, 72, 6)
    assert load_dataset("emotions", tmp_path).n_examples == 593  # a data dir without the files


def test_emotions_prefers_the_data_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("OLB_DATA_DIR", raising=False)
    for file in dataset_spec("emotions").files.values():
        (tmp_path / file.path).parent.mkdir(exist_ok=True)
        (tmp_path / file.path).write_bytes((EMBEDDED_DIR / file.path.rsplit("/", 1)[-1]).read_bytes())
    train = tmp_path / dataset_spec("emotions").files["train"].path
    lines = train.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.lower().startswith("@data")) + 1
    lines[first] = "12345" + lines[first][lines[first].index(",") :]
    train.write_text("\n".join(lines) + "\n")
    with pytest.raises(ChecksumMismatch, match=r"emotions-train.arff: sha256 \w+, expected bbe704"):
        load_dataset("emotions", tmp_path)
    assert load_dataset("emotions", tmp_path, verify_checksums=False).X[0, 0] == 12345
    assert load_dataset("emotions").X[0, 0] != 12345


def test_official_split(load):
    (X_train, Y_train), (X_test, Y_test) = load("emotions").split()
    assert (len(X_train), len(Y_train), len(X_test), len(Y_test)) == (391, 391, 202, 202)


@pytest.mark.parametrize("name", ["yeast", "scene"])
def test_small_sets_load_fast(data_dir, name):
    start = time.perf_counter()
    load_dataset(name, data_dir)
    assert time.perf_counter() - start < 2.0  # well under a second on an idle machine


def test_synthetic_stream_shape_and_cardinality():
    ds = make_multilabel_stream(3000, 1000, 20, 15, cardinality=2.5, seed=1)
    assert (ds.n_train, ds.n_examples, ds.n_features, ds.n_labels) == (3000, 4000, 20, 15)
    assert ds.X.dtype == np.float64 and ds.Y.dtype == np.int8 and not ds.is_sparse
    assert ds.cardinality == pytest.approx(2.5, abs=0.1)


def test_synthetic_stream_is_deterministic():
    a, b, c = (make_multilabel_stream(200, 100, 10, 8, 2.0, seed=s) for s in (3, 3, 4))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.Y, b.Y)
    assert not np.array_equal(a.Y, c.Y)


def test_synthetic_labels_are_learnable():
    ds = make_multilabel_stream(3000, 1000, 20, 10, cardinality=2.0, seed=0)
    (X, Y), (X_test, Y_test) = ds.split()
    scores = X_test @ np.linalg.lstsq(X, Y - Y.mean(axis=0), rcond=None)[0]  # a linear probe per label
    for k in range(ds.n_labels):  # ROC AUC of the probe on the test rows
        ranks, positives = rankdata(scores[:, k]), Y_test[:, k].sum()
        auc = (ranks[Y_test[:, k] == 1].sum() - positives * (positives + 1) / 2) / (
            positives * (len(Y_test) - positives)
        )
        assert auc > 0.85, f"label {k}"


def test_synthetic_mediamill_entry():
    start = time.perf_counter()
    ds = load_dataset("synthetic-mediamill")
    assert time.perf_counter() - start < 5.0
    assert (ds.name, ds.n_train, ds.n_examples, ds.n_features, ds.n_labels) == (
        "synthetic-mediamill",
        30993,
        43907,
        120,
        101,
    )
    assert ds.cardinality == pytest.approx(4.38, abs=0.05)


def test_declared_splits_reorder_rows_and_keep_every_row(load, data_dir):
    raw = load_dataset("slashdot", data_dir)
    assert raw.n_train == 1891  # first rows in file order: nothing moves
    cal500 = load("cal500")
    assert cal500.n_train == 335 and cal500.n_examples == 502
    assert int((cal500.Y[335:].sum(axis=0) == 0).sum()) == 3  # labels that never occur in the test part
    spec = dataset_spec("cal500")
    order = np.random.default_rng(0).permutation(502)
    from olb.data.arff import load_mulan
    from olb.data.files import locate, read_files

    file_order = load_mulan(spec, read_files(locate(spec, data_dir)))
    np.testing.assert_array_equal(cal500.X, file_order.X[order])
    np.testing.assert_array_equal(cal500.Y, file_order.Y[order])


def test_sparse_rows_and_dense_rows_agree(load):
    ds = load("medical")
    assert ds.is_sparse and ds.X.format == "csr"
    dense = ds.rows([3, 0, 7])
    assert dense.shape == (3, 1449) and dense.dtype == np.float64
    np.testing.assert_array_equal(ds.sparse_rows([3, 0, 7]).toarray(), dense)
    np.testing.assert_array_equal(ds.rows(5), ds.rows([5]))


def test_one_sparse_row_of_a_csr_matrix_is_what_scipy_gives():
    """``sparse_rows`` of one row (the protocol's hot path for learners taking sparse rows) skips scipy's row
    indexing: the same values, dtype and sparsity, for an empty row, the last row, a negative index and a matrix
    with duplicate entries."""
    import scipy.sparse as sp

    from olb.data.dataset import Dataset

    X = sp.random_array((6, 9), density=0.3, format="csr", random_state=0)
    X = sp.csr_array(X.multiply(np.arange(6)[:, None] != 2))  # row 2 empty
    duplicated = sp.csr_array((np.array([1.0, 2.0]), np.array([4, 4]), np.array([0, 2, 2])), shape=(2, 9))
    for matrix in (X, duplicated):
        ds = Dataset("toy", matrix, np.zeros((matrix.shape[0], 1), np.int8), "multilabel", None, ("y",))
        for i in (*range(matrix.shape[0]), -1):
            expected, got = matrix[[i]], ds.sparse_rows(i)
            assert got.dtype == np.float64 and got.shape == (1, 9), i
            assert (got != expected).nnz == 0 and got.nnz == expected.nnz, i


@pytest.mark.parametrize("layout", ["sorted", "unsorted", "duplicates"])
def test_one_dense_row_of_a_sparse_matrix_is_what_scipy_gives(layout):
    """One row is read from the CSR arrays (fast), unless a row stores a column twice (then scipy sums them)."""
    import scipy.sparse as sp

    from olb.data.dataset import Dataset

    indices = {"sorted": [0, 2, 3, 1], "unsorted": [3, 0, 2, 1], "duplicates": [2, 2, 3, 1]}[layout]
    X = sp.csr_array((np.array([1.5, -2.0, 0.25, 7.0]), np.array(indices), np.array([0, 3, 3, 4])), shape=(3, 4))
    ds = Dataset("toy", X, np.zeros((3, 1), np.int8), "multilabel", tuple("abcd"), ("y",))
    assert ds._csr_without_duplicates == (layout != "duplicates")
    csc = Dataset("toy", X.tocsc(), np.zeros((3, 1), np.int8), "multilabel", tuple("abcd"), ("y",))
    assert not csc._csr_without_duplicates  # other sparse formats: scipy's indexing
    for index in (0, 1, 2, -1):
        row = ds.rows(index)
        assert row.dtype == np.float64 and row.shape == (1, 4)
        np.testing.assert_array_equal(row, X[[range(3)[index]]].toarray())
        np.testing.assert_array_equal(csc.rows(index), row)


def test_several_data_dirs_are_searched_in_order(tmp_path, data_dir, monkeypatch):
    monkeypatch.delenv("OLB_DATA_DIR", raising=False)
    empty = tmp_path / "mine"
    empty.mkdir()
    import os

    assert load_dataset("yeast", f"{empty}{os.pathsep}{data_dir}").n_examples == 2417
    assert load_dataset("yeast", [str(empty), str(data_dir)]).n_examples == 2417
    monkeypatch.setenv("OLB_DATA_DIR", f"{empty}{os.pathsep}{data_dir}")
    assert load_dataset("scene").n_examples == 2407


def test_parsed_cache_is_read_back_and_keyed_by_content(tmp_path, monkeypatch):
    from olb.data import load_with_provenance
    from olb.data.parsed import parsed_path

    monkeypatch.delenv("OLB_DATA_DIR", raising=False)
    first, source = load_with_provenance("emotions")
    assert parsed_path("emotions", source.fingerprint).is_file()
    again, same = load_with_provenance("emotions")
    assert same == source
    np.testing.assert_array_equal(first.X, again.X)
    assert (first.feature_names, first.nominal, first.n_train) == (again.feature_names, again.nominal, again.n_train)
