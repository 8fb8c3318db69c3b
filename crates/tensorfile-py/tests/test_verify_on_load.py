"""Verify on load: `load_file` and `open` check the checksums a file stores on every tensor
read (by default), and with `verify=True` the file's sha256 where it is known (a `.sha256`
file beside it, `expect_sha256`), beside the load; a mismatch raises naming the file and the
tensor, and nothing is returned."""

import hashlib
import re
import shutil
import struct
import zipfile

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


def member_start(path, member):
    """Where the bytes of zip member `member` (stored) start in the file at `path`."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    raw = path.read_bytes()
    name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
    return info.header_offset + 30 + name_len + extra_len


def flipped_member(src, tmp_path, member, at):
    """`src` copied with byte `at` of zip member `member` flipped (the lowest bit)."""
    dst = tmp_path / src.name
    data = bytearray(src.read_bytes())
    data[member_start(src, member) + at] ^= 1
    dst.write_bytes(bytes(data))
    return dst


@pytest.mark.parametrize("digit", [0, 3])
def test_a_flipped_byte_of_an_npy_members_header_is_refused_by_default(tmp_path, digit):
    """The header of an `.npz` member is covered by the member's CRC: its shape `(2, 3)` made
    `(3, 3)` (more bytes than the member holds: the entry unreadable) or `(2, 2)` (fewer: read
    as another tensor) is refused by `load_file`'s default verification, naming the file;
    unverified, the tensor is left out or read with the other shape."""
    src = FIXTURES / "numpy" / "savez.npz"
    member = "encoder/block_1/conv2d/kernel:0.npy"
    with zipfile.ZipFile(src) as z:
        head = z.read(member)[:128]
    at = head.index(b"'shape': (2, 3)") + len(b"'shape': (") + digit
    broken = flipped_member(src, tmp_path, member, at)
    with pytest.raises(tensorfile.InvalidFileError, match=re.escape(broken.name)):
        tensorfile.load_file(broken)
    unverified = tensorfile.load_file(broken, verify=False)
    name = member.removesuffix(".npy")
    assert name not in unverified or unverified[name].shape != (2, 3)


def test_a_flipped_byte_of_a_pt_files_pickle_is_refused_by_default(tmp_path):
    """`data.pkl` (the names, dtypes, shapes and storages of a `torch.save` file) is covered by
    its member's CRC: a byte flipped in its middle is refused, naming the file."""
    src = FIXTURES / "pytorch" / "dtypes.pt"
    with zipfile.ZipFile(src) as z:
        size = z.getinfo("dtypes/data.pkl").file_size
    broken = flipped_member(src, tmp_path, "dtypes/data.pkl", size // 2)
    with pytest.raises(tensorfile.InvalidFileError, match=re.escape(broken.name)):
        tensorfile.load_file(broken)


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
