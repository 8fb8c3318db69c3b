"""A file's pages in the page cache, for the benchmark's warm and cold rows: dropped (after
its dirty pages are written) or read in whole."""

import os


def drop_cache(path) -> None:
    """`path`'s pages dropped from the page cache (fsync, then posix_fadvise DONTNEED)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_whole(path) -> None:
    """`path` read from start to end (into the page cache), 64 MiB at a time."""
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass
