"""The grid's data, checked once in the driver before any cell runs: every data set's files found (or
downloaded), verified against the registered sha256, parsed (which proves they parse and have the
registered shape, and fills the parsed-array cache the cells read) and fingerprinted.

The fingerprint decides resume (:func:`matches_data`): a finished run is reused only if it was computed from
the same data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from olb.data import DataError, DatasetUnavailable, Provenance, load_with_provenance
from olb.grid.plan import Problems

FINGERPRINT_TAG = "olb.data_fingerprint"
FILES_TAG = "olb.data_files"


@dataclass
class DataCheck:
    """``sources``: data set -> the provenance of the files read; ``unavailable``: data set -> why."""

    sources: dict[str, Provenance] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def available(self) -> list[str]:
        return list(self.sources)


def check_data(datasets: list[str], data_dir, verify_checksums: bool, problems: Problems) -> DataCheck:
    """Load every data set once; checksum mismatches and malformed files go to ``problems`` (all of them),
    unavailable data sets to ``DataCheck.unavailable`` (the caller decides whether that is a problem)."""
    check = DataCheck()
    for name in datasets:
        try:
            check.sources[name] = load_with_provenance(name, data_dir, verify_checksums)[1]
        except DatasetUnavailable as err:
            check.unavailable[name] = str(err)
        except DataError as err:  # checksum mismatch, malformed file, shape differing from the registry
            problems.add(f"data set {name!r}: {err}")
    return check


def matches_data(tags: dict, source: Provenance | None) -> bool:
    """Whether a finished run (its MLflow tags) was computed from the data ``source`` describes.

    A run recorded before fingerprints existed (no tag) read the registered files, the only ones earlier
    versions were built for: it matches when the current files verified against the registered checksums.
    """
    if source is None:
        return False
    recorded = tags.get(FINGERPRINT_TAG)
    return source.verified if recorded is None else recorded == source.fingerprint


def provenance_tags(source: Provenance) -> dict[str, str]:
    """The MLflow tags that record which data a cell read."""
    return {FINGERPRINT_TAG: source.fingerprint, FILES_TAG: source.files_text()}
