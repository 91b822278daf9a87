"""The MLHAT table's misses, one hypothesis at a time: the table's river learners on the same rows in river 0.26 and
in the table's release (river 0.16, in a side environment), in the union file's row order, and with flags' nominal
features as strings, each run set beside the published figures (docs/stream_benchmark.md, "Misses").

    python benchmarks/mlhat_hypotheses.py rows flags emotions yeast --out /tmp/mlhat   # olb's environment
    /tmp/river016/bin/python benchmarks/mlhat_hypotheses.py run yeast ht --order union --rows /tmp/mlhat >> runs.jsonl
    python benchmarks/mlhat_hypotheses.py table runs.jsonl --out results/stream_benchmark_checks/side_runs.csv

``rows`` writes each stream as olb reads it (training then test split, features as numbers, nominal ones as
their category codes) with the order of its union file where one exists. ``run`` needs only river (0.16 or 0.26)
and numpy, not olb (olb pins a numpy river 0.16 cannot load): it builds each column's river model at the table's
settings for the river it finds (river 0.16's KNN takes ``window_size`` itself, river 0.26's a ``LazySearch``;
0.16 names the iSOUP tree ``iSOUPTreeRegressor``) and runs binary relevance as olb's ``mlhat_*`` learners do
(olb/learners/river_mlhat.py: one copy per label, abstain before the first example, a label relevant when True is
its most probable value, a regressor's prediction above 0.5); ``--seed`` is river's seed of the columns that draw;
``--nominal strings`` gives a nominal feature not 0/1 as its name (the table's reader), ``--nominal numbers`` as the
number its name spells; ``--keys names`` keys a row by the ARFF's feature names (the table's reader) instead of
olb's feature indices (river's Mondrian trees draw a split feature from the sorted keys).
``table`` sets each run's five metrics beside the published figures (conf/reference/mlhat_tables.csv).
"""

from __future__ import annotations

import argparse
import copy
import csv
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np

UNION = {"flags": "flags/flags.arff", "yeast": "yeast/yeast.arff", "emotions": "emotions/emotions.arff"}
FIVE = {
    "example_f1": "example_f1",
    "micro_f1": "micro_f1",
    "macro_f1": "macro_f1",
    "hamming_loss": "hamming",
    "subset_accuracy": "subset_acc",
}


def write_rows(names: list[str], out: Path) -> None:
    from olb.data import load_dataset
    from olb.data.arff import read_arff
    from olb.data.files import data_dirs, read_file

    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        ds = load_dataset(name)
        X = ds.X.toarray() if ds.is_sparse else ds.X
        rows = np.hstack([X, ds.Y])
        record = {
            "X": X.tolist(),
            "Y": ds.Y.astype(int).tolist(),
            "nominal": [i for i, c in enumerate(ds.nominal) if c is not None and set(c) != {"0", "1"}],
            "categories": [list(c) if c else None for c in ds.nominal],
            "names": list(ds.feature_names),
        }
        if name in UNION:  # each union row's index among the split's rows (the same multiset of rows)
            table = read_arff(read_file(next(d / UNION[name] for d in data_dirs() if (d / UNION[name]).is_file())))
            column = {n: i for i, n in enumerate(table.names)}
            union = table.values[:, [column[f] for f in (*ds.feature_names, *ds.label_names)]]
            where: dict[bytes, list[int]] = {}
            for i, row in enumerate(rows):
                where.setdefault(row.tobytes(), []).append(i)
            record["union_order"] = [where[np.asarray(r, dtype=rows.dtype).tobytes()].pop(0) for r in union]
        (out / f"{name}.json").write_text(json.dumps(record))


def _model(code: str, seed: int):
    import river
    from river import drift, ensemble, forest, linear_model, naive_bayes, neighbors, rules, tree
    from river.tree.splitter import GaussianSplitter, TEBSTSplitter

    old = tuple(int(p) for p in river.__version__.split(".")[:2]) < (0, 19)

    def trees(grace=200, delta=1e-5):
        return dict(
            grace_period=grace,
            delta=delta,
            tau=0.05,
            split_criterion="info_gain",
            leaf_prediction="nba",
            nb_threshold=0,
            splitter=GaussianSplitter(),
        )

    def knn():
        if old:
            return neighbors.KNNClassifier(n_neighbors=5, window_size=200, weighted=True)
        euclidean = functools.partial(river.utils.math.minkowski_distance, p=2)
        engine = neighbors.LazySearch(window_size=200, dist_func=euclidean)
        return neighbors.KNNClassifier(n_neighbors=5, engine=engine, weighted=True)

    def mondrian(n, step):
        return forest.AMFClassifier(
            n_estimators=n, step=step, use_aggregation=True, dirichlet=0.5, split_pure=False, seed=seed
        )

    build = {
        "ht": lambda: tree.HoeffdingTreeClassifier(**trees()),
        "efdt": lambda: tree.ExtremelyFastDecisionTreeClassifier(**trees(), min_samples_reevaluate=20),
        "hat": lambda: tree.HoeffdingAdaptiveTreeClassifier(
            **trees(), drift_window_threshold=50, switch_significance=0.05, seed=seed
        ),
        "arf": lambda: forest.ARFClassifier(
            n_models=10,
            max_features="sqrt",
            lambda_value=6,
            drift_detector=drift.ADWIN(delta=0.001),
            warning_detector=drift.ADWIN(delta=0.01),
            **trees(50, 0.01),
            seed=seed,
        ),
        "amf": lambda: mondrian(10, 1.0),
        "mt": lambda: mondrian(1, 0.1),
        "sgt": lambda: tree.SGTClassifier(delta=1e-5, grace_period=200, init_pred=0.0, lambda_value=0.1, gamma=1.0),
        "knn": knn,
        "nb": naive_bayes.GaussianNB,
        "amr": lambda: rules.AMRules(
            n_min=200,
            delta=1e-5,
            tau=0.05,
            pred_type="model",
            pred_model=linear_model.LogisticRegression(),
            splitter=TEBSTSplitter(),
            drift_detector=drift.ADWIN(),
            fading_factor=0.99,
            anomaly_threshold=-0.75,
            m_min=30,
        ),
        "abalr": lambda: ensemble.ADWINBaggingClassifier(linear_model.LogisticRegression(), n_models=10, seed=seed),
        "abolr": lambda: ensemble.ADWINBoostingClassifier(linear_model.LogisticRegression(), n_models=10, seed=seed),
        "isoupt": lambda: (getattr(tree, "ISOUPTreeRegressor", None) or tree.iSOUPTreeRegressor)(
            grace_period=200,
            delta=1e-5,
            tau=0.05,
            leaf_prediction="model",
            leaf_model=linear_model.LogisticRegression(),
            model_selector_decay=0.95,
            splitter=TEBSTSplitter(),
        ),
    }
    return build[code]()


def _five(P: np.ndarray, Y: np.ndarray) -> dict[str, float]:
    """The table's five metrics (olb/metrics/registry.py's mlhat_*: 0/0 = 0) of label sets ``P`` against ``Y``."""
    both = (P & Y).sum(1)
    sizes = P.sum(1) + Y.sum(1)
    tp, fp, fn = (P & Y).sum(0), (P & ~Y).sum(0), (~P & Y).sum(0)
    per_label = np.where(2 * tp + fp + fn > 0, 2 * tp / np.maximum(2 * tp + fp + fn, 1), 0.0)
    return {
        "example_f1": float(np.where(sizes > 0, 2 * both / np.maximum(sizes, 1), 0.0).mean()),
        "micro_f1": float(2 * tp.sum() / max(2 * tp.sum() + fp.sum() + fn.sum(), 1)),
        "macro_f1": float(per_label.mean()),
        "hamming_loss": float((P != Y).mean()),
        "subset_accuracy": float((P == Y).all(1).mean()),
    }


def run(stream: str, code: str, rows: Path, order: str, nominal: str, seed: int, keys: str = "indices") -> dict:
    import river

    data = json.loads((rows / f"{stream}.json").read_text())
    X, Y = data["X"], data["Y"]
    n_labels = len(Y[0])
    prototype = _model(code, seed)
    models = [prototype] if code == "isoupt" else [copy.deepcopy(prototype) for _ in range(n_labels)]
    predicted, truth, learned = [], [], False
    names = data["names"] if keys == "names" else range(len(X[0]))  # a row's keys, by feature index
    # strings: the table's reader; numbers: a copy that declares them numeric (birds' location {2, 10, ...})
    as_given = {"strings": str, "numbers": float}.get(nominal)
    start = time.process_time()
    for i in data["union_order"] if order == "union" else range(len(X)):
        row = dict(zip(names, X[i]))
        if as_given is not None:  # a nominal feature not 0/1 as its name, or as the number its name spells
            row.update({names[j]: as_given(data["categories"][j][int(X[i][j])]) for j in data["nominal"]})
        if learned:
            if code == "isoupt":
                values = models[0].predict_one(row)
                predicted.append([float(values.get(k, 0.0)) > 0.5 for k in range(n_labels)])
            elif code == "amr":
                predicted.append([float(m.predict_one(row)) > 0.5 for m in models])
            else:
                probas = [m.predict_proba_one(row) for m in models]
                predicted.append([bool(p) and bool(max(p, key=p.get)) for p in probas])
            truth.append(Y[i])
        if code == "isoupt":
            models[0].learn_one(row, {k: float(v) for k, v in enumerate(Y[i])})
        else:
            for model, relevant in zip(models, Y[i]):
                model.learn_one(row, float(relevant) if code == "amr" else bool(relevant))
        learned = True
    five = _five(np.array(predicted, bool), np.array(truth, bool))
    return {
        "river": river.__version__,
        "dataset": stream,
        "learner": code,
        "order": order,
        "nominal": nominal,
        "seed": seed,
        "keys": keys,
        "cpu_s": round(time.process_time() - start, 2),
        **five,
    }


def table(runs: list[Path], out: Path) -> None:
    import olb

    with open(olb.conf_file("reference/mlhat_tables.csv"), newline="") as fh:
        published = {
            (r["dataset"], r["algorithm"], r["metric"]): float(r["value"])
            for r in csv.DictReader(fh)
            if r["metric"] in FIVE.values()
        }
    records = {}
    for line in (line for path in runs for line in path.read_text().splitlines() if line.strip()):
        r = json.loads(line)
        column = {"isoupt": "iSOUPT"}.get(r["learner"], r["learner"].upper())
        gaps = {m: r[m] - published[(r["dataset"].capitalize(), column, t)] for m, t in FIVE.items()}
        within = sum(g <= 0.02 + 1e-12 if m == "hamming_loss" else abs(g) <= 0.02 + 1e-12 for m, g in gaps.items())
        key = (r["dataset"], column, r["river"], r["order"], r["nominal"], r.get("seed", 42), r.get("keys", "indices"))
        records[key] = {
            "stream": key[0],
            "learner": column,
            "river": key[2],
            "rows": key[3],
            "nominal": key[4],
            "seed": key[5],
            "keys": key[6],
            **{f"{m}_minus_published": round(g, 4) for m, g in gaps.items()},
            "within": within,
            "cpu_s": r["cpu_s"],
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(next(iter(records.values()))))
        writer.writeheader()
        writer.writerows(records[k] for k in sorted(records, key=str))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rows = sub.add_parser("rows")
    rows.add_argument("streams", nargs="+")
    rows.add_argument("--out", type=Path, required=True)
    one = sub.add_parser("run")
    one.add_argument("stream")
    one.add_argument("learner")
    one.add_argument("--rows", type=Path, required=True)
    one.add_argument("--order", choices=("file", "union"), default="file")
    one.add_argument("--nominal", choices=("codes", "strings", "numbers"), default="codes")
    one.add_argument("--seed", type=int, default=42)
    one.add_argument(
        "--keys",
        choices=("indices", "names"),
        default="indices",
        help="a row's keys: olb's feature indices, the ARFF names",
    )
    tab = sub.add_parser("table")
    tab.add_argument("runs", nargs="+", type=Path)
    tab.add_argument("--out", type=Path, required=True)
    a = parser.parse_args(argv)
    if a.command == "rows":
        write_rows(a.streams, a.out)
    elif a.command == "run":
        print(json.dumps(run(a.stream, a.learner, a.rows, a.order, a.nominal, a.seed, a.keys)), file=sys.stdout)
    else:
        table(a.runs, a.out)


if __name__ == "__main__":
    main()
