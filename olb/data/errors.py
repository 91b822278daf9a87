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
