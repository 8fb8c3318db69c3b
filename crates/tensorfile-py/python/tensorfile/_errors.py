"""The exceptions the package raises. Each carries the library's message, and the attributes
`rule` (the format rule a bad file breaks, e.g. "out-of-bounds"), `path` and `tensor` when
they are known, and `hint`: what the caller can do about it ("skip-unsupported",
"program-data"...), which the message words as this package's keyword arguments. A file that
does not open also has `diagnosis`: what it really is ("lfs-pointer", "html", "json", "text",
"zeros", "truncated", "mismatch", "foreign"), which the message puts in words."""


class Error(Exception):
    """Anything tensorfile refuses or fails to do."""

    rule: "str | None" = None
    path: "str | None" = None
    tensor: "str | None" = None
    hint: "str | None" = None
    diagnosis: "str | None" = None


class FileError(Error, OSError):
    """Reading or writing failed at the operating-system level."""


class RemoteError(FileError):
    """A remote file (http(s)://, s3://, gs://, az://) could not be fetched: the network, the
    server or the credentials, after retries."""


class InvalidFileError(Error):
    """The file breaks a rule of its format (`rule` says which)."""


class UnsupportedError(Error):
    """Valid, but not something this library (or the target format) can represent."""


class TensorNotFoundError(Error, KeyError):
    """No tensor of that name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return Exception.__str__(self)


class UsageError(Error, ValueError):
    """An impossible request: a bad option, data that does not match its dtype and shape."""
