"""numpy (and torch) -> save_file -> load_file for every dtype each format holds, and
convert."""

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES

ml_dtypes = pytest.importorskip("ml_dtypes")

# dtype -> formats that hold it (zTensor 0.1: 13 dtypes; .pt, .ptd and safetensors more).
COMMON = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "bfloat16"]
EXTRA = ["complex64", "float8_e4m3fn", "float8_e5m2"]
FORMATS = {"zt": COMMON, "safetensors": COMMON + EXTRA, "pt": COMMON + EXTRA + ["complex128"], "ptd": COMMON}


def sample(dtype: str, shape) -> np.ndarray:
    rng = np.random.default_rng(abs(hash(dtype)) % 2**32)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = rng.uniform(-8, 8, shape)
    if dtype.startswith("complex"):
        return (values + 1j * rng.uniform(-8, 8, shape)).astype(dtype)
    np_dtype = getattr(ml_dtypes, dtype) if hasattr(ml_dtypes, dtype) and not hasattr(np, dtype) else dtype
    return values.astype(np_dtype)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_numpy_round_trips_every_dtype(fmt, tmp_path):
    tensors = {}
    for i, dtype in enumerate(FORMATS[fmt]):
        shape = [(3, 4), (2, 3, 2), (5,), ()][i % 4]
        tensors[f"t.{dtype}"] = sample(dtype, shape)
    tensors["empty"] = np.zeros((0, 3), np.float32)
    path = tmp_path / f"out.{fmt}"
    tensorfile.save_file(tensors, path)
    loaded = tensorfile.load_file(path)
    assert sorted(loaded) == sorted(tensors)
    for name, array in tensors.items():
        got = loaded[name]
        assert got.dtype == array.dtype and got.shape == array.shape, name
        assert got.tobytes() == array.tobytes(), name


@pytest.mark.parametrize("options", [{"compress": "zstd"}, {"checksum": "sha256"}, {"checksum": "none"}])
def test_zt_options(options, tmp_path):
    tensors = {"a": np.arange(1000, dtype=np.float32).reshape(10, 100), "b": np.ones(7, np.int16)}
    path = tmp_path / "out.zt"
    tensorfile.save_file(tensors, path, **options)
    with tensorfile.open(path) as f:
        assert f.verify()["ok"] and f.verify()["problems"] == []
        entry = {e["name"]: e for e in f.entries()}["a"]
        if "compress" in options:
            assert entry["stored_bytes"] < 4000
        for name, array in tensors.items():
            assert np.array_equal(f[name].numpy(), array)


def test_big_endian_and_non_contiguous_arrays_are_stored_as_their_values(tmp_path):
    tensors = {"be": np.arange(6, dtype=">i4").reshape(2, 3), "t": np.arange(12.0).reshape(3, 4).T}
    path = tmp_path / "out.safetensors"
    tensorfile.save_file(tensors, path, metadata={"who": "test"})
    with tensorfile.open(path) as f:
        assert f.metadata["metadata"] == {"who": "test"}
        for name, array in tensors.items():
            assert np.array_equal(f[name].numpy(), array)


def test_bad_input_raises_usage_errors(tmp_path):
    with pytest.raises(tensorfile.UsageError):
        tensorfile.save_file({"a": np.zeros(2)}, tmp_path / "out.unknown")
    with pytest.raises(tensorfile.UnsupportedError):
        tensorfile.save_file({"a": np.array(["text"])}, tmp_path / "out.zt")
    assert not (tmp_path / "out.zt").exists()


def test_convert(tmp_path):
    src = FIXTURES / "safetensors" / "dtypes.safetensors"
    report = tensorfile.convert(src, tmp_path / "out.zt", skip_unsupported=True, compress="zstd")
    assert report["tensors"] + len(report["skipped"]) == 16 and report["skipped"]
    with tensorfile.open(src) as a, tensorfile.open(tmp_path / "out.zt") as b:
        for name in b:
            assert a[name].tobytes() == b[name].tobytes()
    with pytest.raises(tensorfile.UnsupportedError):
        tensorfile.convert(src, tmp_path / "strict.zt")


def test_verify_finds_a_flipped_byte_at_either_depth(tmp_path):
    path = tmp_path / "crc.zt"
    tensorfile.save_file({"a": np.arange(100, dtype=np.float32)}, path, checksum="crc32c")
    with tensorfile.open(path) as f:
        assert f.verify()["ok"] and f.verify(deep=False)["ok"]
        offset = f.entries()[0]["offset"]
    data = bytearray(path.read_bytes())
    data[offset] ^= 1
    path.write_bytes(bytes(data))
    with tensorfile.open(path) as f:
        for report in (f.verify(), f.verify(deep=False)):
            assert not report["ok"], report
            (problem,) = report["problems"]
            assert problem["rule"] == "checksum-mismatch" and problem["tensor"] == "a", problem
            assert "[checksum-mismatch]" in problem["error"]


def test_the_writer_takes_bytes_or_a_callable_returning_them(tmp_path):
    from tensorfile import _native

    path = tmp_path / "raw.safetensors"
    a = np.arange(6, dtype=np.float32)
    _native.write_file(str(path), [("a", "float32", [6], a.tobytes()), ("b", "float32", [6], a.tobytes)])
    with tensorfile.open(path) as f:
        assert f["a"].tobytes() == f["b"].tobytes() == a.tobytes()
    with pytest.raises(tensorfile.UsageError, match="bytes"):
        _native.write_file(str(tmp_path / "bad.safetensors"), [("a", "float32", [6], lambda: a)])
    with pytest.raises(tensorfile.UsageError, match="bytes given"):
        _native.write_file(str(tmp_path / "short.safetensors"), [("a", "float32", [6], b"\0" * 4)])


def test_zt_is_zt2_only_when_asked(tmp_path):
    """`.zt` is zTensor v0.1 unless zt_version=2 (or format="zt2"); zTensor 2 is written in
    canonical form, the same bytes whatever order the tensors are given in."""
    tensors = {"b": np.arange(6, dtype=np.float32), "a": np.ones((2, 2), dtype=np.int64)}
    tensorfile.save_file(tensors, tmp_path / "v01.zt")
    assert (tmp_path / "v01.zt").read_bytes()[:8] == b"ZTEN0001"
    tensorfile.save_file(tensors, tmp_path / "v2.zt", zt_version=2)
    reordered = {"a": tensors["a"], "b": tensors["b"]}
    tensorfile.save_file(reordered, tmp_path / "v2b.zt", format="zt2")
    v2 = (tmp_path / "v2.zt").read_bytes()
    assert v2[:8] == b"\x89ZT2\r\n\x1a\n" and v2 == (tmp_path / "v2b.zt").read_bytes()
    src = FIXTURES / "safetensors" / "names.safetensors"
    tensorfile.convert(src, tmp_path / "names.zt", zt_version="2")
    assert (tmp_path / "names.zt").read_bytes()[:8] == b"\x89ZT2\r\n\x1a\n"
    with pytest.raises(tensorfile.UsageError, match="zTensor version"):
        tensorfile.convert(src, tmp_path / "bad.zt", zt_version="3")
    with pytest.raises(tensorfile.UsageError, match="not zTensor"):
        tensorfile.convert(src, tmp_path / "x.safetensors", zt_version=2)
