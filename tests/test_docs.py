"""The docs speak to users: papers named by citation (conf/reference/papers.yaml), every paper key resolvable,
no file hashes or project diary in README.md and docs/, a citable CITATION.cff that matches the package; and the
code of docs/architecture.md runs."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import olb

ROOT = Path(__file__).resolve().parents[1]
PAPERS = yaml.safe_load((ROOT / "conf" / "reference" / "papers.yaml").read_text())
FILE_HASH = re.compile(r"0[0-9]{2}_[0-9a-f]{16}")
USER_DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def _paper_keys() -> set[str]:
    with open(ROOT / "conf" / "reference" / "paper_tables.csv", newline="") as f:
        keys = {row["paper"] for row in csv.DictReader(f)}
    for path in (ROOT / "conf" / "experiment").glob("*.yaml"):
        paper = ((yaml.safe_load(path.read_text()) or {}).get("reference") or {}).get("paper")
        keys |= {paper} if paper else set()
    return keys


def test_every_paper_key_has_a_citation_and_a_bibliography_entry():
    bib = (ROOT / "docs" / "references.bib").read_text()
    assert _paper_keys() <= set(PAPERS), f"keys without an entry in papers.yaml: {_paper_keys() - set(PAPERS)}"
    for key, paper in PAPERS.items():
        assert paper["cite"] and paper["title"] and isinstance(paper["authors"], list), key
        assert f"{{{paper['bibkey']},\n  title     = {{{paper['title']}}}" in bib, key
        assert key in bib  # the bibliography says which olb key it is


def test_the_grid_names_the_paper_by_its_citation():
    from olb.grid.planning.config import ReferenceConfig
    from olb.grid.reporting.references import reference_source

    source = reference_source(ReferenceConfig(paper="000_01d5ef94a9aabcf3", table="Table 3"))
    assert source == "Jung & Tewari (2018), Ada.OLMR and OnlineBMR, Table 3"
    assert reference_source(ReferenceConfig(paper="my_paper", table=None)) == "my_paper"  # an unlisted key as it is
    assert reference_source(ReferenceConfig(paper=None)) == ""


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: p.name)
def test_user_docs_have_no_file_hash_and_no_diary(path):
    if not path.is_file():
        pytest.skip(f"{path.name} is absent")
    text = path.read_text()
    assert not FILE_HASH.findall(text), f"{path.name} names papers by file hash; use the citation (docs/references.md)"
    diary = re.findall(r"(?i)issue [0-9]+|session [0-9]|\btoday\b", text)
    assert not diary, f"{path.name}: {diary}"


def test_readme_links_every_doc():
    readme = (ROOT / "README.md").read_text()
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if f"docs/{p.name}" not in readme]
    assert not missing, f"README.md's 'More documentation' lacks {missing}"


def test_citation_cff_has_the_required_keys_and_the_package_version():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(cff), sorted(cff)
    assert all(("family-names" in a or "name" in a) for a in cff["authors"]), cff["authors"]
    assert str(cff["version"]) == olb.__version__
    assert cff["license"] == "BSD-3-Clause" and "BSD 3-Clause" in (ROOT / "LICENSE").read_text()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(cff["date-released"]))
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{olb.__version__}]" in changelog, "CHANGELOG.md has no entry for this version"


def test_the_metric_glossary_defines_every_metric_name():
    from olb.metrics import METRICS

    glossary = (ROOT / "docs" / "metrics.md").read_text()
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \|", glossary, flags=re.M))
    assert rows == set(METRICS), f"missing: {set(METRICS) - rows}; not a metric: {rows - set(METRICS)}"
    for name, metric in METRICS.items():
        row = re.search(rf"^\| `{name}` \| (\w+) \|", glossary, flags=re.M)
        assert row.group(1) == metric.needs, (name, row.group(1), metric.needs)


def test_every_result_table_in_the_docs_is_what_its_result_file_gives():
    from olb.ops.doc_tables import main

    docs = [str(p.relative_to(ROOT)) for p in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))]
    assert main(["--check", "--root", str(ROOT), *[str(ROOT / d) for d in docs]]) == 0, "run `make docs`"


def test_a_number_changed_by_hand_in_a_generated_table_fails_the_check(tmp_path, capsys):
    from olb.ops.doc_tables import main

    docs = [
        p for p in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))) if "<!-- olb:table " in p.read_text()
    ]
    if not docs:
        pytest.skip("no generated table in the docs")
    text = docs[0].read_text()
    start = text.index("<!-- olb:table ")
    digit = re.compile(r"\d\.(\d)").search(text, text.index("\n|", start))
    assert digit is not None
    i = digit.start(1)
    edited = text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]
    copy = tmp_path / docs[0].name
    copy.write_text(edited)
    assert main(["--check", "--root", str(ROOT), str(copy)]) == 1
    assert f"{copy}:" in capsys.readouterr().err


def guide_script(markdown: str) -> str:
    """The Python blocks of ``markdown`` as one script, each line at its line number in the document (every other
    line blank), so that a traceback points into the document."""
    kept, inside = [], False
    for line in markdown.splitlines():
        closes = inside and line.strip() == "```"
        kept.append(line if inside and not closes else "")
        inside = line.strip() == "```python" or (inside and not closes)
    return "\n".join(kept) + "\n"


def test_the_guide_script_keeps_each_python_line_at_its_line():
    markdown = "intro\n```python\nx = 1\n```\nprose\n```bash\nls\n```\n```python\nassert x == 1\n```\n"
    assert guide_script(markdown).splitlines() == ["", "", "x = 1", "", "", "", "", "", "", "assert x == 1", ""]


@pytest.mark.e2e
def test_the_architecture_guides_code_runs(tmp_path):
    """docs/architecture.md's Python blocks run in order, as one script in a process of their own (what they
    register stays there), kernels under numba's JIT (no extension to build)."""
    script = tmp_path / "architecture_md.py"
    script.write_text(guide_script((ROOT / "docs" / "architecture.md").read_text()))
    assert script.read_text().strip(), "docs/architecture.md has no Python block"
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": pythonpath, "OLB_KERNELS": "jit"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"docs/architecture.md (its line numbers):\n{done.stderr[-3000:]}"
