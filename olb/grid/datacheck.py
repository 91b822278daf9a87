"""The grid's data, checked once in the driver before any cell runs: every data set's files found (or
downloaded), verified against the registered sha256, parsed (which proves they parse and have the
registered shape, and fills the parsed-array cache the cells read) and fingerprinted.

The fingerprint decides resume (:func:`matches_data`): a finished run is reused only if it was computed from
the same data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

from olb.data import DataDirs, DataDirWarning, DataError, DatasetUnavailable, Provenance, load_with_provenance
from olb.data.registry import FileSpec
from olb.grid.planning.plan import Problems

FINGERPRINT_TAG = "olb.data_fingerprint"
FILES_TAG = "olb.data_files"


@dataclass
class DataCheck:
    """``sources``: data set -> the provenance of the files read; ``unavailable``: data set -> why."""

    sources: dict[str, Provenance] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    to_download: dict[str, list[str]] = field(default_factory=dict)  # without download: data set -> its URLs

    @property
    def available(self) -> list[str]:
        return list(self.sources)


def check_data(
    datasets: list[str], data_dir: DataDirs, verify_checksums: bool, problems: Problems, download: bool = True
) -> DataCheck:
    """Load every data set once; checksum mismatches and malformed files go to ``problems`` (all of them),
    unavailable data sets to ``DataCheck.unavailable`` (the caller decides whether that is a problem). Without
    ``download``, a data set whose files would be downloaded goes to ``DataCheck.to_download`` instead."""
    check = DataCheck()
    for name in datasets:
        try:
            urls = [] if download else urls_to_download(name, data_dir, verify_checksums)
            if urls:
                check.to_download[name] = urls
                continue
            check.sources[name] = load_with_provenance(name, data_dir, verify_checksums)[1]
        except DatasetUnavailable as err:
            check.unavailable[name] = str(err)
        except DataError as err:  # checksum mismatch, malformed file, shape differing from the registry
            problems.add(f"data set {name!r}: {err}")
    return check


def urls_to_download(name: str, data_dir: DataDirs, verify_checksums: bool) -> list[str]:
    """The URLs loading ``name`` would download (:func:`olb.data.files.locate`'s search: the data dirs, the
    embedded copy, the download cache); none when every file is local, or when loading refuses before any
    download (no URL, no sha256 to check one against, a partial data dir: loading it reports why)."""
    from olb.data.files import locate
    from olb.grid.planning.cost import registry_entry

    spec = registry_entry(name)
    fetched = {role: f for role, f in spec.files.items() if not _in_cache(f)}
    refused = any(not f.url for f in spec.files.values()) or (
        verify_checksums and any(not f.sha256 for f in spec.files.values())
    )
    if spec.format == "synthetic" or spec.embedded or refused or not fetched:
        return []
    offline = {role: replace(f, url=None) if role in fetched else f for role, f in spec.files.items()}
    try:  # locate refuses a file without a URL before downloading anything: found locally, or would download
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataDirWarning)  # the load that follows warns once
            locate(replace(spec, files=offline), data_dir, verify_checksums)
    except DatasetUnavailable:
        return [str(f.url) for f in fetched.values()]
    except DataError:  # a partial data dir: loading refuses it, before any download
        pass
    return []


def _in_cache(file: FileSpec) -> bool:
    """Whether the download cache holds ``file`` as registered (a download of it would be skipped)."""
    from olb.cache import cache_dir
    from olb.data.provenance import file_sha256

    path = cache_dir() / file.path
    return path.is_file() and (not file.sha256 or file_sha256(path) == file.sha256)


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
