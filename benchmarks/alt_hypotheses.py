"""Paper 002's remaining misses, one hypothesis at a time: test figures of fixed settings under one changed choice.

    python benchmarks/alt_hypotheses.py falt_kernel birds --grid '{"eta": [1], "repeats": [10], "sigma": [0.5]}' \
        --nominal onehot --seeds 3
    python benchmarks/alt_hypotheses.py falt_kernel scene --grid '{"eta": [0.25, 1], "repeats": [10, 50], "sigma": [2]}'

Each setting of ``--grid`` makes ``--seeds`` runs of the paper's protocol (seed s = training permutation s, as
``olb.run``; one pass; the frozen model scored on the test split) on the data set changed as asked:

- ``--nominal codes|onehot|drop``: birds' two nominal features (``hasSegments``, ``location``, 12 places) as
  category codes (olb's loader, min-max scaled to [0, 1] like the rest), one 0/1 column per category, or left out;
- ``--scaling minmax|none``: the learner's ``feature_scaling``;
- ``--weighting per_set|unit`` (FALT(l), FALT(k)): the two hinge sums of the [RECON] loss averaged over their own
  sets (olb's reading: relevant and irrelevant sides weigh the same) or plain sums (every violated label weighs 1,
  so the many irrelevant labels dominate and push the threshold up).

Printed per setting: mean x100 over the seeds of paper 002's seven metrics (olb/metrics/registry.py's ``_unlabelled1``
conventions), the std of F1 and MicroF1 over the seeds, and under the other conventions: Psn/Rcal/F1 with an
empty ratio scoring 0 (``precision``, ``recall``, ``f1``), ``macro_f1_absent1`` and the ranking loss without
the unlabelled rows (``ranking_loss``). These are test figures of given settings: descriptive, never a
selection. With ``--select``, the grid is first cross-validated on the (changed) training split as the grid's
selection stage does (10 folds, seed 0, the setting better on more of the 7 metrics) and only the chosen
setting is run on the test split: the figure a table would show under the changed choice.
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import replace

import numpy as np

from numba import njit

from olb.data import load_dataset
from olb.grid.selection import cv_scores, select
from olb.metrics import METRICS
from olb.protocol import make_phases, run_stream
from olb.learners.registry import get_algorithm

PAPER = (
    "precision_unlabelled1",
    "recall_unlabelled1",
    "f1_unlabelled1",
    "macro_f1",
    "micro_f1",
    "hamming_loss",
    "ranking_loss_unlabelled0",
)
OTHER = ("precision", "recall", "f1", "macro_f1_absent1", "ranking_loss")
SHORT = {"precision_unlabelled1": "Psn", "recall_unlabelled1": "Rcal", "f1_unlabelled1": "F1", "macro_f1": "MaF1"}
SHORT |= {"micro_f1": "MiF1", "hamming_loss": "Hl", "ranking_loss_unlabelled0": "Rl", "precision": "Psn0"}
SHORT |= {"recall": "Rcal0", "f1": "F1_0", "macro_f1_absent1": "MaF1a1", "ranking_loss": "Rl_drop"}


def recode_nominal(dataset, coding: str):
    """``dataset`` with its nominal features as category codes (unchanged), one-hot columns, or dropped."""
    if coding == "codes":
        return dataset
    nominal = [j for j, cats in enumerate(dataset.nominal) if cats is not None]
    if not nominal:
        raise SystemExit(f"--nominal {coding}: data set {dataset.name!r} has no nominal feature")
    if dataset.is_sparse:
        raise SystemExit(f"--nominal {coding}: data set {dataset.name!r} is sparse; only dense data is recoded")
    keep = [j for j in range(dataset.n_features) if j not in nominal]
    blocks, names, kinds = [dataset.X[:, keep]], [dataset.feature_names[j] for j in keep], [None] * len(keep)
    if coding == "onehot":
        for j in nominal:
            cats = dataset.nominal[j]
            codes = dataset.X[:, j]
            blocks.append((codes[:, None] == np.arange(len(cats))[None, :]).astype(np.float64))
            names += [f"{dataset.feature_names[j]}={c}" for c in cats]
            kinds += [None] * len(cats)
    X = np.hstack(blocks)
    return replace(dataset, X=X, feature_names=tuple(names), nominal=tuple(kinds))


@njit(cache=True)
def _repeat_unit_weights(s, y, step, repeats, c_sum):
    """olb.learners.linear.alt_loss.repeat_on_scores with the plain-sum loss: c_k = 1, c_l = -1 when violated."""
    c = np.empty_like(c_sum)
    c_sum[:] = 0.0
    for r in range(repeats):
        total, violated = 0.0, False
        for k in range(y.shape[0]):
            ck = 0.0
            if y[k] != 0:
                if s[k + 1] - s[0] < 1.0:
                    ck = 1.0
            elif s[0] - s[k + 1] < 1.0:
                ck = -1.0
            c[k + 1] = ck
            total += ck
            violated = violated or ck != 0.0
        c[0] = -total
        if not violated:
            return r
        for i in range(s.shape[0]):
            c_sum[i] += c[i]
            s[i] += step * c[i]
    return repeats


def use_weighting(weighting: str, algorithm: str) -> None:
    """Swap the FALT learners' repeat loop for the plain-sum loss (``unit``); ``per_set`` keeps olb's."""
    if weighting == "per_set":
        return
    if algorithm not in ("falt", "falt_kernel"):
        raise SystemExit(f"--weighting {weighting}: only falt and falt_kernel, not {algorithm!r}")
    from olb.learners.linear import alt, alt_kernel

    alt.repeat_on_scores = alt_kernel.repeat_on_scores = _repeat_unit_weights


def run_setting(algorithm: str, params: dict, dataset, seeds: int) -> dict[str, np.ndarray]:
    """The metrics (x100) of ``seeds`` runs of the paper's protocol, seeded as olb.run seeds a cell."""
    cls = get_algorithm(algorithm)
    values: dict[str, list[float]] = {}
    for seed in range(seeds):
        learner_seed, order_seed = np.random.SeedSequence(seed).spawn(2)
        learner = cls(dataset.n_features, dataset.n_labels, seed=np.random.default_rng(learner_seed), **params)
        phases = make_phases(dataset, "train_frozen", 1, np.random.default_rng(order_seed))
        stream = run_stream(learner, dataset, phases, PAPER + OTHER, curve_every=dataset.n_examples)
        for m, v in stream.metrics.items():
            values.setdefault(m, []).append(100 * v)
    return {m: np.asarray(v) for m, v in values.items()}


def chosen_setting(algorithm: str, settings: list[dict], dataset) -> dict:
    """The setting the grid's selection stage picks: 10-fold CV on the training split, rule ``majority``."""
    means = {}
    for params in settings:
        folds = cv_scores(algorithm, params, dataset, PAPER, 10, seed=0).folds
        means[json.dumps(params)] = {m: float(np.mean([f[m] for f in folds])) for m in PAPER}
        cv = means[json.dumps(params)]
        print(f"CV {json.dumps(params)}: " + " ".join(f"{SHORT[m]} {100 * v:.2f}" for m, v in cv.items()), flush=True)
    choice = select(means, {m: METRICS[m].lower_is_better for m in PAPER}, "majority")
    print(f"CV pick ({choice.reason}): {choice.chosen}")
    return json.loads(choice.chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("algorithm")
    parser.add_argument("dataset")
    parser.add_argument("--grid", required=True, help="JSON: hyperparameter -> list of values")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--nominal", choices=("codes", "onehot", "drop"), default="codes")
    parser.add_argument("--scaling", choices=("minmax", "none"), default=None, help="default: the learner's")
    parser.add_argument("--weighting", choices=("per_set", "unit"), default="per_set")
    parser.add_argument("--select", action="store_true", help="run only the setting chosen by 10-fold CV")
    args = parser.parse_args()
    grid = json.loads(args.grid)
    use_weighting(args.weighting, args.algorithm)
    data = recode_nominal(load_dataset(args.dataset), args.nominal)
    print(
        f"{args.algorithm} on {args.dataset} (nominal {args.nominal}, scaling {args.scaling or 'default'}, "
        f"weighting {args.weighting}, "
        f"{args.seeds} seeds)"
    )
    names = PAPER + OTHER
    print(f"{'setting':<44}" + "".join(f"{SHORT[m]:>8}" for m in names) + f"{'sd F1':>7}{'sd MiF1':>8}")
    keys = sorted(grid)
    settings = [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]
    if args.scaling:
        settings = [{**p, "feature_scaling": args.scaling} for p in settings]
    if args.select:
        settings = [chosen_setting(args.algorithm, settings, data)]
    for params in settings:
        v = run_setting(args.algorithm, params, data, args.seeds)
        sd = [v[m].std(ddof=1) if args.seeds > 1 else float("nan") for m in ("f1_unlabelled1", "micro_f1")]
        print(
            f"{json.dumps(params):<44}"
            + "".join(f"{v[m].mean():>8.2f}" for m in names)
            + f"{sd[0]:>7.2f}{sd[1]:>8.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
