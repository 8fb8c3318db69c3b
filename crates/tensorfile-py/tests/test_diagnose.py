"""A file that does not open says what it really is in the exception's message, in the
library's words (crates/tensorfile/tests/library/diagnose.rs checks them all), with the rule
kept and the kind of diagnosis as `diagnosis`."""

import os
import subprocess

import pytest
import tensorfile
from conftest import FIXTURES

DIAGNOSE = FIXTURES / "diagnose"


def test_lfs_pointer():
    with pytest.raises(tensorfile.InvalidFileError) as info:
        tensorfile.open(DIAGNOSE / "lfs_pointer.safetensors")
    e = info.value
    assert e.rule == "unknown-format"
    assert e.diagnosis == "lfs-pointer"
    assert str(e).endswith(
        "lfs_pointer.safetensors: a Git LFS pointer to an object of 1,682 bytes, not the file "
        "(oid sha256:d0dbdd97d531…; `git lfs pull` fetches it) [unknown-format]"
    )


def test_html_page():
    with pytest.raises(tensorfile.InvalidFileError) as info:
        tensorfile.open(DIAGNOSE / "not_found.safetensors")
    assert info.value.diagnosis == "html"
    assert 'an HTML page, not a tensor file (title "404 – Model Hub") [unknown-format]' in str(info.value)


def test_truncated(tmp_path):
    whole = (FIXTURES / "safetensors" / "dtypes.safetensors").read_bytes()
    cut = tmp_path / "model.safetensors"
    cut.write_bytes(whole[:841])
    with pytest.raises(tensorfile.InvalidFileError) as info:
        tensorfile.open(cut)
    e = info.value
    assert e.rule == "truncated"
    assert e.diagnosis == "truncated"
    assert "truncated: 841 bytes present, its header needs 1,072 (a safetensors file); " in str(e)


def test_zeros(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(bytes(8192))
    with pytest.raises(tensorfile.InvalidFileError) as info:
        tensorfile.open(path)
    assert info.value.diagnosis == "zeros"
    assert "all 8,192 bytes are zero: a sparse file or a failed download [unknown-format]" in str(info.value)


def test_a_file_that_opens_has_no_diagnosis(tmp_path):
    with pytest.raises(tensorfile.TensorNotFoundError) as info:
        tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors")["no such tensor"]
    assert info.value.diagnosis is None


@pytest.mark.parametrize("path", sorted(p for p in DIAGNOSE.iterdir() if not p.name.endswith(".json")), ids=str)
def test_the_command_line_says_the_same(path):
    """`tensorfile ls` prints the exception's message, word for word."""
    binary = os.environ.get("TENSORFILE_BIN")
    if not binary:
        pytest.skip("TENSORFILE_BIN is not set (the path of the tensorfile binary): no command line to compare with")
    listed = subprocess.run([binary, "ls", str(path)], capture_output=True, text=True, timeout=60)
    with pytest.raises(tensorfile.Error) as info:
        tensorfile.open(path)
    assert listed.returncode == 1
    assert listed.stderr == f"tensorfile: {info.value}\n"
    assert info.value.diagnosis is not None
