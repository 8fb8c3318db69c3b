"""Write options: the library's defaults (the same as the command line's), warnings naming
the keywords a format ignores, and hints worded as keyword arguments."""

import warnings

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES


def test_convert_takes_the_librarys_default_checksum(tmp_path):
    out = tmp_path / "out.zt"
    tensorfile.convert(FIXTURES / "safetensors" / "metadata.safetensors", out)
    rows = tensorfile.open(out).entries()
    assert rows and all(r["checksum"].startswith("crc32c:") for r in rows)
    tensorfile.convert(FIXTURES / "safetensors" / "metadata.safetensors", out, checksum="none")
    assert all(r["checksum"] is None for r in tensorfile.open(out).entries())


def test_options_a_format_ignores_are_named_as_keywords(tmp_path):
    src = FIXTURES / "safetensors" / "metadata.safetensors"
    with pytest.warns(UserWarning) as caught:
        tensorfile.convert(src, tmp_path / "out.safetensors", compress="zstd", checksum="sha256", big_endian=True)
    messages = [str(w.message) for w in caught]
    assert [m.split(" ")[0] for m in messages] == ["compress=", "checksum=", "big_endian="], messages
    assert all("has no effect" in m for m in messages)
    with pytest.warns(UserWarning, match="metadata= has no effect"):
        tensorfile.save_file({"a": np.zeros(2, np.float32)}, tmp_path / "a.zt", metadata={"k": "v"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defaults, and what the format stores: no warning
        tensorfile.save_file({"a": np.zeros(2, np.float32)}, tmp_path / "b.safetensors")
        tensorfile.convert(src, tmp_path / "c.zt", compress="zstd", checksum="sha256")
        tensorfile.convert(src, tmp_path / "d.safetensors", compress="none", checksum="none")


def test_hints_are_worded_as_keyword_arguments(tmp_path):
    with pytest.raises(tensorfile.UnsupportedError) as refused:
        tensorfile.convert(FIXTURES / "safetensors" / "dtypes.safetensors", tmp_path / "strict.zt")
    assert refused.value.hint == "skip-unsupported"
    assert "skip_unsupported=True" in str(refused.value) and "--" not in str(refused.value)
