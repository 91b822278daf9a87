"""The errors of the data layer. Every message names the file (or data set) and the problem."""


class DataError(Exception):
    """Base class of every data-layer error."""


class UnknownDatasetError(DataError, LookupError):
    """The name is not in the registry (``conf/dataset/*.yaml``)."""


class DatasetUnavailable(DataError, FileNotFoundError):
    """The data set's files are neither local nor downloadable."""


class DownloadError(DatasetUnavailable):
    """A download failed: unreachable server, HTTP error or checksum mismatch."""


class DataFormatError(DataError, ValueError):
    """A file (or a registry entry) is malformed or does not match its registry entry."""


class IncompleteDataDir(DataError, FileNotFoundError):
    """A data dir holds some but not all of a data set's files (never silently replaced by another copy)."""


class DataDirWarning(UserWarning):
    """A data dir that was named (``data_dir``, ``$OLB_DATA_DIR``) does not exist."""
