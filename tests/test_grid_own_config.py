"""docs/data.md's "Your own data set", followed as written: a config dir of one's own (OLB_CONF_DIR) adds to
olb's configs, for the data registry, olb.run and the grid."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def own_data_section() -> str:
    text = (ROOT / "docs" / "data.md").read_text()
    return text.split("## Your own data set", 1)[1].split("\n## ", 1)[0]


def code_blocks(section: str, language: str) -> list[str]:
    return [textwrap.dedent(block) for block in re.findall(rf"```{language}\n(.*?)```", section, re.S)]


def write_mulan(data_dir: Path, entry: dict) -> None:
    """The files the doc's entry names: a MULAN ARFF and label XML with its shape, random values."""
    shape, rng = entry["shape"], np.random.default_rng(0)
    n, d, k = shape["n_examples"], shape["n_features"], shape["n_labels"]
    arff = data_dir / entry["files"]["data"]["path"]
    arff.parent.mkdir(parents=True, exist_ok=True)
    X, Y = rng.normal(size=(n, d)), (rng.random((n, k)) < 0.3).astype(int)
    lines = [f"@relation {entry['name']}", *(f"@attribute f{i} numeric" for i in range(d))]
    lines += [*(f"@attribute l{j} {{0,1}}" for j in range(k)), "@data"]
    lines += [",".join([*(f"{v:.5f}" for v in x), *map(str, y)]) for x, y in zip(X, Y)]
    arff.write_text("\n".join(lines) + "\n")
    labels = "".join(f'<label name="l{j}"></label>\n' for j in range(k))
    (data_dir / entry["files"]["labels"]["path"]).write_text(
        f'<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n{labels}</labels>\n'
    )


@pytest.mark.e2e
def test_own_data_set_as_docs_data_md_says(tmp_path):
    section = own_data_section()
    (entry_text,) = code_blocks(section, "yaml")
    (commands,) = code_blocks(section, "bash")
    entry = yaml.safe_load(entry_text)
    conf_file = re.search(r"Write `~/([^`]+)`", section).group(1)
    (tmp_path / conf_file).parent.mkdir(parents=True)
    (tmp_path / conf_file).write_text(entry_text)
    write_mulan(tmp_path / "my-data", entry)
    (tmp_path / "shared" / "data").mkdir(parents=True)  # the doc's shared benchmark folder, here empty
    fast = "seeds=1 backend=serial tracking=off plots=false 'algorithms=[adaolmr]' num_learners=2"
    script = commands.replace("/shared/data", str(tmp_path / "shared" / "data"))
    script = script.replace("python ", f"{sys.executable} ").replace("]'\n", f"]' {fast}\n")
    script = script.replace("seed=1\n", "seed=1 num_learners=2\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OLB_CONF_DIR", "OLB_DATA_DIR")}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    done = subprocess.run(["bash", "-euc", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rank_loss" in done.stdout  # olb.run's metrics
    assert "| mysensors |" in done.stdout and "| emotions |" in done.stdout  # the grid's table, both data sets


def test_own_config_dir_adds_to_olbs(tmp_path, monkeypatch):
    """Only a data set and an experiment of one's own: olb's data sets, experiments and primary config remain."""
    from olb.data import dataset_names, dataset_spec
    from olb.grid import compose

    (tmp_path / "dataset").mkdir()
    (tmp_path / "experiment").mkdir()
    emotions = yaml.safe_load((ROOT / "conf" / "dataset" / "emotions.yaml").read_text())
    (tmp_path / "dataset" / "mine.yaml").write_text(yaml.safe_dump({**emotions, "name": "mine", "embedded": False}))
    (tmp_path / "experiment" / "mine.yaml").write_text("# @package _global_\nname: mine\ndatasets: [mine]\nseeds: 2\n")
    monkeypatch.setenv("OLB_CONF_DIR", str(tmp_path))
    assert {"mine", "emotions", "yeast"} <= set(dataset_names())
    assert dataset_spec("mine").conf_file == tmp_path / "dataset" / "mine.yaml"
    cfg = compose(["+experiment=mine"])
    assert (cfg.name, list(cfg.datasets), cfg.seeds) == ("mine", ["mine"], 2)
    assert compose(["+experiment=table3"]).name == "table3"  # olb's experiments still there
