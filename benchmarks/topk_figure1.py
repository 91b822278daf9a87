"""Paper 004, Figure 1: learning curves of TopOpt on yeast for increasing k, mean over seeds with 1-sd bands.

The curve is the weighted rank loss of the randomized predictions averaged over the stream so far (all
training passes, then the test pass), as in the paper. Settings: Table 5's yeast TopOpt settings (N = 30,
rho = 0.03, 10 loops, uniform exploration, App. C.2 clipping) and gamma from conf/experiment/topk_figure1.yaml.

    python benchmarks/topk_figure1.py                              # k = 3 5 8 11, 10 seeds -> topk_figure1.png
    python benchmarks/topk_figure1.py --seeds 5 --out docs/topk_figure1.png --mlflow sqlite:///mlflow.db

With ``--mlflow URI`` the PNG and the final losses are logged to the MLflow experiment ``olb/topk_figure1``.
The grid experiment ``+experiment=topk_figure1`` runs the same cells and logs its own curve plot
(per-phase running means) with every cell.
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import yaml

CONF = Path(__file__).resolve().parents[1] / "conf" / "experiment" / "topk_figure1.yaml"


def stream_mean(curve: dict, lengths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Running mean over the whole stream from the protocol's per-phase running means."""
    step, phase, value = (np.asarray(curve[key]) for key in ("step", "phase", "value"))
    lengths = np.asarray(lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    totals = np.array([value[phase == p][-1] * lengths[p] for p in range(len(lengths))])
    before = np.concatenate([[0.0], np.cumsum(totals)[:-1]])
    return step, (before[phase] + (step - starts[phase]) * value) / step


def run_one(job):
    from olb.run import CellSpec, run_cell

    k, seed, params, loops, every = job
    result = run_cell(CellSpec("topopt", "yeast", seed=seed, params=dict(params, k=k), loops=loops, curve_every=every))
    lengths = [p["n_examples"] for p in result.stream.phases.values()]
    step, mean = stream_mean(result.stream.curve, lengths)
    return k, seed, step, mean, result.metrics["rank_loss"], lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ks", nargs="+", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--out", default="topk_figure1.png")
    parser.add_argument("--mlflow", default=None, help="tracking URI to log the figure to (e.g. sqlite:///mlflow.db)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    conf = yaml.safe_load(CONF.read_text())
    params = dict(conf["algorithm"]["topopt"]["params"])
    loops = params.pop("loops")
    ks = args.ks or params.pop("k")
    params.pop("k", None)
    every = conf.get("curve_every", 100)
    jobs = [(k, s, params, loops, every) for k in ks for s in range(args.seeds)]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(run_one, jobs))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    summary = {}
    for k in ks:
        runs = [r for r in results if r[0] == k]
        step = runs[0][2]
        curves = np.stack([r[3] for r in runs])
        mean, sd = curves.mean(axis=0), curves.std(axis=0, ddof=1) if len(runs) > 1 else np.zeros(len(step))
        (line,) = ax.plot(step, mean, label=f"k = {k}")
        ax.fill_between(step, mean - sd, mean + sd, color=line.get_color(), alpha=0.2, linewidth=0)
        test = np.array([r[4] for r in runs])
        early = step <= step[-1] // 4  # the first quarter of the stream, before the curves flatten
        summary[k] = (
            test.mean(),
            test.std(ddof=1) if len(runs) > 1 else 0.0,
            mean[-1],
            sd[-1],
            sd[early].mean(),
            sd.mean(),
        )
    lengths = results[0][5]
    for edge in np.cumsum(lengths)[:-1]:
        ax.axvline(edge, color="0.85", linewidth=0.6, zorder=0)
    ax.set_xlabel(f"round (yeast: {len(lengths) - 1} passes over the training split, then the test split)")
    ax.set_ylabel("weighted rank loss, mean over the stream")
    ax.set_title(
        f"TopOpt on yeast, varying k (N={params['num_learners']}, rho={params['rho']}, "
        f"gamma={params['gamma']}; {args.seeds} seeds, ±1 sd)"
    )
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    print(
        "| k | test loss (mean ± sd) | stream mean at the end (± sd) | mean sd, first quarter | mean sd, whole stream |"
    )
    print("|---|---|---|---|---|")
    for k, (m, s, cm, cs, sd_early, sd_all) in summary.items():
        print(f"| {k} | {m:.4f} ± {s:.4f} | {cm:.4f} ± {cs:.4f} | {sd_early:.4f} | {sd_all:.4f} |")

    if args.mlflow:
        import mlflow

        mlflow.set_tracking_uri(args.mlflow)
        mlflow.set_experiment("olb/topk_figure1")
        with mlflow.start_run(run_name=f"figure1 k={ks} seeds={args.seeds}"):
            mlflow.log_params({**params, "loops": loops, "ks": ",".join(map(str, ks)), "seeds": args.seeds})
            for k, (m, s, cm, cs, sd_early, sd_all) in summary.items():
                mlflow.log_metrics(
                    {
                        f"test_rank_loss_k{k}": m,
                        f"test_rank_loss_sd_k{k}": s,
                        f"stream_mean_k{k}": cm,
                        f"stream_mean_sd_end_k{k}": cs,
                        f"stream_mean_sd_first_quarter_k{k}": sd_early,
                        f"stream_mean_sd_avg_k{k}": sd_all,
                    }
                )
            mlflow.log_artifact(args.out)
        print(f"logged to MLflow {args.mlflow} (experiment olb/topk_figure1)")


if __name__ == "__main__":
    main()
