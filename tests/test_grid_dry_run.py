"""``dry_run=true``: what a grid would run and resume, printed; refused as a run is refused; nothing downloaded,
run or recorded (olb/grid/driver/dryrun.py)."""

from __future__ import annotations

import hashlib
import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient

import olb.ops.testing  # noqa: F401 - registers _grid_stub in this process
from olb.grid import compose, run_grid
from olb.grid.planning.plan import GridConfigError

# 2 settings x seeds of the stub learner on the embedded emotions: fail_at=5 fails, fail_at=-1 finishes
STUB = ["imports=[olb.ops.testing]", "algorithms=[_grid_stub]", "+algorithm._grid_stub.params.fail_at=[-1,5]"]


def dry(*overrides: str) -> tuple[object, str]:
    out = io.StringIO()
    result = run_grid(compose(["dry_run=true", *overrides]), "never-written", stream=out)
    return result, out.getvalue()


def store_state(db: Path) -> tuple[str, int, list]:
    """The store's bytes, its run count over every experiment, its experiments."""
    client = MlflowClient(f"sqlite:///{db}")
    experiments = client.search_experiments(view_type=ViewType.ALL)
    runs = client.search_runs([e.experiment_id for e in experiments], run_view_type=ViewType.ALL)
    return hashlib.sha256(db.read_bytes()).hexdigest(), len(runs), sorted(e.name for e in experiments)


def test_dry_run_prints_per_data_set_and_algorithm_and_creates_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    # the default store, named: another test of this process may have moved MLflow's own default elsewhere
    default_store = "tracking.uri=sqlite:///mlflow.db"
    result, text = dry(
        *STUB, "seeds=3", "algorithms=[_grid_stub,adaolmr]", "num_learners=2", "backend=serial", default_store
    )
    assert result.exit_code == 0
    assert "| emotions | _grid_stub | 2 | 3 | 6 | 0 | 6 |" in text
    assert "| emotions | Ada.OLMR | 1 | 3 | 3 | 0 | 3 |" in text
    assert "| all |  |  |  | 9 | 0 | 9 |" in text
    assert "Largest cells by predicted peak memory:" in text and " MB  Ada.OLMR on emotions (adaolmr:" in text
    assert "olb.grid: backend serial: as configured" in text
    assert "no tracking store at sqlite:///" in text and "9 cell(s) would run, 0 would resume" in text
    assert sorted(os.listdir(tmp_path)) == []  # no mlflow.db, no mlruns, no output folder


def test_dry_run_counts_resumable_cells_and_writes_nothing_into_the_store(tmp_path):
    db = tmp_path / "mlflow.db"
    track = [f"tracking.uri=sqlite:///{db}", "name=dry", "backend=serial"]
    done = run_grid(compose([*STUB, *track, "seeds=2", "plots=false"]), tmp_path / "out")
    assert (done.n_run, done.n_failed) == (4, 2)  # the fail_at=5 cells failed: they do not resume
    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("olb/dry").experiment_id
    # a grid whose driver no longer exists: a run's opening would close it as stale
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = client.create_run(
        experiment,
        tags={"olb.kind": "grid", "olb.driver_host": socket.gethostname(), "olb.driver_pid": dead.stdout.strip()},
    ).info.run_id
    before = store_state(db)

    result, text = dry(*STUB, *track, "seeds=3")
    assert (result.pairs[0].cells, result.pairs[0].resume, result.pairs[0].run) == (6, 2, 4)
    assert set(result.resumed) == {c.cell_id for c in done.plan.cells if c.params["fail_at"] == -1}
    assert "| emotions | _grid_stub | 2 | 3 | 6 | 2 | 4 |" in text and "experiment 'olb/dry'" in text
    _, text = dry(*STUB, *track, "seeds=3", "resume=false")
    assert "resume=false: nothing resumes" in text and "6 cell(s) would run, 0 would resume" in text
    _, text = dry(*STUB, *track, "seeds=3", "name=other")  # an experiment that does not exist: not created
    assert "no experiment 'olb/other' yet: nothing resumes" in text
    assert store_state(db) == before
    assert client.get_run(stale).info.status == "RUNNING"  # not closed by the dry run


def test_dry_run_refuses_what_the_run_refuses_naming_every_culprit():
    with pytest.raises(GridConfigError) as refused:
        dry("datasets=[emotions,emotionz]", "gamma=2", "seeds=0", "tracking=off")
    message = str(refused.value)
    assert "3 problems, nothing was run" in message
    assert "emotionz" in message and "gamma=2" in message and "seeds=0" in message


def test_dry_run_refuses_cells_bigger_than_a_local_rays_memory():
    with pytest.raises(GridConfigError, match="need more memory than any Ray node has .100 MB"):
        dry("backend=ray", "backend.memory_mb=100", "num_learners=2", "seeds=1", "tracking=off")


def test_dry_run_downloads_nothing(tmp_path, monkeypatch):
    import olb.data.files

    def no_download(*args, **kwargs):
        raise AssertionError("the dry run tried to download")

    monkeypatch.setattr(olb.data.files, "_download", no_download)
    monkeypatch.setenv("OLB_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    data = [f"data_dir={tmp_path / 'data'}", "algorithms=[adaolmr]", "num_learners=2", "seeds=1", "tracking=off"]
    result, text = dry(*data, "datasets=[emotions,mediamill]")
    assert list(result.data.to_download) == ["mediamill"] and "mediamill" not in result.data.sources
    assert "data set 'mediamill' would be downloaded (3 file(s): https://" in text
    assert "| mediamill | Ada.OLMR | 1 | 1 | 1 | 0 | 1 |" in text and "would download |" in text
    with pytest.raises(GridConfigError, match="image"):  # no URL: unavailable, refused as a run refuses it
        dry(*data, "datasets=[emotions,image]")
    result, text = dry(*data, "datasets=[emotions,image]", "allow_unavailable=true")
    assert "| image | Ada.OLMR | 1 | 1 | 1 | 0 | 0 |" in text and "data set 'image' is unavailable" in text
    assert not (tmp_path / "cache" / "mediamill").exists()


@pytest.mark.e2e
def test_command_line_dry_run_exits_0_and_leaves_nothing_and_refuses_with_2(tmp_path):
    env = {**os.environ, "OLB_CACHE_DIR": str(tmp_path / "cache")}
    ok = subprocess.run(
        [sys.executable, "-m", "olb.grid", "dry_run=true", "seeds=2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr
    assert "| emotions | OnlineBMR | 2 | 2 | 4 | 0 | 4 |" in ok.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]  # no outputs/, no mlflow.db
    refused = subprocess.run(
        [sys.executable, "-m", "olb.grid", "dry_run=true", "gamma=2", "datasets=[emotions,emotionz]"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert refused.returncode == 2
    assert "gamma=2" in refused.stderr and "emotionz" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


def test_cell_ids_written_once_per_configuration_are_the_cells_own():
    from olb.grid.planning.plan import CellKey, cell_id, seed_cell_ids

    key = CellKey("onlinebmr", "emotions", 0, {"gamma": 0.1, "num_learners": 5, "nested": {"seed": 0}}, "train_test",
                  2, ("rank_loss",), 50)  # fmt: skip
    seeds = [0, 3, 17, 1000]
    assert seed_cell_ids(key, seeds) == [cell_id(CellKey(**{**key.__dict__, "seed": s})) for s in seeds]


STREAMS = [
    "flags",
    "emotions",
    "birds",
    "yeast",
    "scene",
    "medical",
    "slashdot",
    "enron",
    "tmc2007",
    "corel5k",
    "bibtex",
]


def _planned_cells(text: str) -> dict[tuple[str, str], float]:
    """(data set, label) -> planned CPU s of a dry run's per-cell table."""
    cells = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) > 9 and parts[1] in STREAMS:
            cells[(parts[1], parts[2])] = float(parts[8].replace(",", ""))
    return cells


def _without_moa_where_it_cannot_run(experiment: str) -> list[str]:
    """An override dropping MOA's columns from ``experiment`` where this environment lacks what they need (no JVM,
    no ``olb[moa]``: the grid refuses them, tests/test_moa.py checks that); none where MOA runs."""
    from olb.grid import compose
    from olb.learners.registry import get_algorithm

    if not get_algorithm("moa_br_ht").missing_requirements():
        return []
    kept = [name for name in compose([f"+experiment={experiment}"]).algorithms if not name.startswith("moa_")]
    return [f"algorithms=[{','.join(kept)}]"]


def test_stream_benchmark_plans_every_cell_and_its_local_part_fits_a_day():
    # AMF on corel5k and bibtex is planned beyond this machine's memory: planned all the same for the listing
    result, text = dry(
        "+experiment=stream_benchmark",
        "tracking=off",
        "backend=serial",
        "backend.refuse_oversized=false",
        *_without_moa_where_it_cannot_run("stream_benchmark"),
    )
    assert result.exit_code == 0 and "0 unavailable" in text
    full = _planned_cells(text)
    river = [f"river {c}" for c in "HT EFDT HAT ARF AMF MT SGT KNN NB AMR ABALR ABOLR iSOUPT".split()]
    everywhere = [*river, "Ada.OLMR+ALT", "OnlineBMR+ALT", "FALT", "PA-I-BR", "PA-II-BR", "OSML-ELM", "OML", "kNN"]
    everywhere += ["olb BR+HT", "olb BR+kNN"]
    assert {(ds, learner) for ds in STREAMS for learner in everywhere} <= set(full)
    assert {("bibtex", "SALT"), ("flags", "SALT")} & set(full) == {("bibtex", "SALT")}  # SALT: no kernel version
    assert all(cost > 0 for cost in full.values()) and f"{len(full)} cell(s) would run" in text
    assert sum(full.values()) / 3600 > 24  # the whole board needs a cluster
    _, local_text = dry(
        "+experiment=stream_benchmark_local",
        "tracking=off",
        "backend=serial",
        *_without_moa_where_it_cannot_run("stream_benchmark_local"),
    )
    local = _planned_cells(local_text)
    assert set(local) < set(full) and all(local[cell] == full[cell] for cell in local)
    assert sum(local.values()) / 3600 <= 24
    assert ("bibtex", "river HT") not in local and ("bibtex", "FALT") in local and ("flags", "river AMF") in local
