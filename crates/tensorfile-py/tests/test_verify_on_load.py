"""Verify on load: `load_file` and `open` check the checksums a file stores on every tensor
read (by default), and with `verify=True` the file's sha256 where it is known (a `.sha256`
file beside it, `expect_sha256`), beside the load; a mismatch raises naming the file and the
tensor, and nothing is returned."""

import hashlib
import shutil

import pytest

import tensorfile
from conftest import FIXTURES


def flipped_copy(src, tmp_path, name):
    """`src` copied with one byte of the tensor `name`'s stored bytes flipped."""
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    with tensorfile.open(dst) as f:
        entry = next(e for e in f.entries() if e["name"] == name)
    data = bytearray(dst.read_bytes())
    at = entry["offset"] + entry["stored_bytes"] // 2
    data[at] ^= 1
    dst.write_bytes(bytes(data))
    return dst


def test_a_zt_files_checksums_are_checked_by_default(tmp_path):
    src = FIXTURES / "zt1" / "checksums.zt"
    with tensorfile.open(src) as f:
        name = next(iter(f))
    broken = flipped_copy(src, tmp_path, name)
    with pytest.raises(tensorfile.InvalidFileError, match=name):
        tensorfile.load_file(broken)
    # Unchecked, the flipped byte is handed over.
    assert name in tensorfile.load_file(broken, verify=False)
    assert set(tensorfile.load_file(src)) == set(tensorfile.load_file(src, verify=False))


def test_a_sha256_beside_the_file_is_checked_with_verify_true(tmp_path):
    path = tmp_path / "model.safetensors"
    shutil.copyfile(FIXTURES / "safetensors" / "dtypes.safetensors", path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "model.safetensors.sha256").write_text(f"{digest}  model.safetensors\n")
    sound = tensorfile.load_file(path, verify=True)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(tensorfile.InvalidFileError, match=digest):
        tensorfile.load_file(path, verify=True)
    # The default checks what the file stores (safetensors: nothing), not the digest.
    assert set(tensorfile.load_file(path)) == set(sound)
    with pytest.raises(tensorfile.InvalidFileError, match="sha256"):
        tensorfile.load_file(path, expect_sha256=digest)
    assert set(tensorfile.load_file(path, expect_sha256=hashlib.sha256(bytes(data)).hexdigest())) == set(sound)
    with pytest.raises(tensorfile.UsageError):
        tensorfile.load_file(path, verify="sometimes")


def test_the_staging_path_checks_stored_checksums(tmp_path):
    """The GPU path (run with copies into host memory): a flipped byte of a `.zt` tensor stops
    the load, naming the tensor; unchecked, it is carried."""
    import numpy as np

    from tensorfile import _staging

    src = FIXTURES / "zt1" / "checksums.zt"
    with tensorfile.open(src) as f:
        name = next(iter(f))
    broken = flipped_copy(src, tmp_path, name)

    def staged(verify):
        with tensorfile.open(broken, verify=verify) as f:
            tensors = [f[n] for n in f]
            outputs = [np.zeros(t.nbytes, np.uint8) for t in tensors]
            _staging.load(f._file, tensors, outputs, _staging.HostTransfer(), 2 * 16384, "never")

    with pytest.raises(tensorfile.InvalidFileError, match=name):
        staged("checksums")
    staged(False)


def test_the_remote_cache_takes_sizes_as_the_command_line_does(tmp_path):
    tensorfile.set_remote_cache(tmp_path, "20MB")
    tensorfile.set_remote_cache(tmp_path, 1 << 20)
    for bad in ("20XB", -5, True, 1.5):
        with pytest.raises(tensorfile.UsageError):
            tensorfile.set_remote_cache(tmp_path, bad)
    tensorfile.set_remote_cache(None)
