"""Interop of the `tensorfile` binary with the real pip tools ztensor 0.1.4 and safetensors:
what tensorfile writes must read back in the reference readers unchanged, and it must list
every committed fixture as the fixture's producer recorded it.

Needs only `ztensor==0.1.4 safetensors numpy ml_dtypes pytest`; run by `scripts/interop`. The
binary is $TENSORFILE_BIN, else target/release/tensorfile or target/debug/tensorfile.
"""

import json
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors
import ztensor
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

# The zTensor dtypes, with safetensors' names for them.
SAFETENSORS_NAMES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint64": "U64",
    "uint32": "U32",
    "uint16": "U16",
    "uint8": "U8",
    "bool": "BOOL",
}
ZT_DTYPES = list(SAFETENSORS_NAMES)
# safetensors.numpy has no bfloat16.
NUMPY_SAFETENSORS_DTYPES = [d for d in ZT_DTYPES if d != "bfloat16"]


# --- running tensorfile -------------------------------------------------------------------


def tensorfile(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=60, check=False)


def convert_and_verify(src: Path, dst: Path, *options: str) -> None:
    """`tensorfile convert`, which must succeed, then `tensorfile verify` on its output."""
    converted = tensorfile("convert", src, dst, *options)
    assert converted.returncode == 0, f"convert {src.name} {dst.name} {options}: {converted.stderr}"
    verified = tensorfile("verify", dst)
    assert verified.returncode == 0, f"verify rejects {dst.name}: {verified.stdout}{verified.stderr}"


def ls_json(path: Path) -> list:
    listed = tensorfile("ls", path, "--json")
    assert listed.returncode == 0, f"ls {path.name}: {listed.stderr}"
    return json.loads(listed.stdout)


# --- test data ----------------------------------------------------------------------------


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)


def sample(name: str, dtype: str, shape: tuple) -> np.ndarray:
    """A deterministic array seeded by `name`: finite floats, integers over their whole range."""
    dt = numpy_dtype(dtype)
    rng = np.random.default_rng(list(name.encode()))
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    return rng.uniform(-100, 100, shape).astype(dt)


def arrays_of(dtype: str) -> dict:
    """Arrays of one dtype in several shapes, a zero-size one among them, under awkward names."""
    shapes = {"layers.0/weight": (3, 4), "bias": (5,), "empty": (0, 3), "ünïcode.名前": (2, 2, 2)}
    return {name: sample(f"{dtype}:{name}", dtype, shape) for name, shape in shapes.items()}


def arrays_for_safetensors() -> dict:
    """Every dtype safetensors.numpy and zTensor share, plus a scalar and a zero-size array."""
    arrays = {f"{d}.matrix": sample(d, d, (2, 3)) for d in NUMPY_SAFETENSORS_DTYPES}
    arrays["scalar"] = sample("scalar", "float32", ())
    arrays["empty/zero_size"] = sample("empty", "int32", (0, 4))
    arrays["ünïcode.名前"] = sample("unicode", "float16", (3,))
    return arrays


def write_ztensor(path: Path, arrays: dict) -> None:
    with ztensor.Writer(str(path)) as writer:
        for name, array in arrays.items():
            writer.add_tensor(name, array)


def read_ztensor(path: Path) -> dict:
    reader = ztensor.Reader(str(path))
    return {meta.name: np.array(reader.read_tensor(meta.name)) for meta in reader.list_tensors()}


def load_safetensors(path: Path) -> dict:
    """`safetensors.numpy.load_file`; files with bfloat16, which it cannot give, are read with
    safetensors' framework-free `deserialize` and viewed with ml_dtypes."""
    raw = safetensors.deserialize(path.read_bytes())
    if all(info["dtype"] != "BF16" for _, info in raw):
        return load_file(str(path))
    dtypes = {st: numpy_dtype(name) for name, st in SAFETENSORS_NAMES.items()}
    return {
        name: np.frombuffer(bytes(info["data"]), dtype=dtypes[info["dtype"]]).reshape(info["shape"])
        for name, info in raw
    }


def assert_same_arrays(actual: dict, expected: dict) -> None:
    """Same names, and per name the same dtype, shape and bytes (so NaN and -0.0 count)."""
    assert sorted(actual) == sorted(expected)
    for name, want in expected.items():
        got = actual[name]
        assert (got.dtype, got.shape) == (want.dtype, want.shape), name
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), name


# --- zTensor -> safetensors -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ZT_DTYPES)
def test_ztensor_converts_to_safetensors_that_safetensors_loads(tmp_path, dtype):
    arrays = arrays_of(dtype)
    src, out = tmp_path / "in.zt", tmp_path / "out.safetensors"
    write_ztensor(src, arrays)
    convert_and_verify(src, out)
    assert_same_arrays(load_safetensors(out), arrays)


def test_safetensors_from_ztensor_reads_with_safe_open(tmp_path):
    arrays = {f"{d}/{name}": a for d in NUMPY_SAFETENSORS_DTYPES for name, a in arrays_of(d).items()}
    src, out = tmp_path / "in.zt", tmp_path / "out.safetensors"
    write_ztensor(src, arrays)
    convert_and_verify(src, out)
    with safe_open(str(out), framework="numpy") as f:
        read = {name: f.get_tensor(name) for name in f.keys()}
    assert_same_arrays(read, arrays)


# --- safetensors -> zTensor -----------------------------------------------------------------

# id: (convert options, the encoding every tensor must then have, the prefix its checksum
# must have: "" for none; None where the contract leaves it open).
ZT_OUTPUTS = {
    "defaults": ([], None, None),
    "crc32c": (["--checksum", "crc32c"], None, "crc32c:"),
    "zstd": (["--compress", "zstd"], "zstd", None),
    "zstd-19": (["--compress", "zstd:19"], "zstd", None),
    # The pip reader warns that it does not know sha256 checksums, and reads on.
    "sha256": (["--checksum", "sha256"], None, "sha256:"),
    "no-checksum": (["--checksum", "none"], None, ""),
}


@pytest.mark.parametrize(("options", "encoding", "checksum"), ZT_OUTPUTS.values(), ids=ZT_OUTPUTS.keys())
def test_safetensors_converts_to_ztensor_that_ztensor_reads(tmp_path, options, encoding, checksum):
    arrays = arrays_for_safetensors()
    src, out = tmp_path / "in.safetensors", tmp_path / "out.zt"
    save_file(arrays, str(src))
    convert_and_verify(src, out, *options)
    assert_same_arrays(read_ztensor(out), arrays)
    for meta in ztensor.Reader(str(out)).list_tensors():
        if encoding is not None:
            assert meta.encoding == encoding, meta.name
        if checksum == "":
            assert meta.checksum is None, meta.name
        elif checksum is not None:
            assert (meta.checksum or "").startswith(checksum), meta.name


def test_a_large_compressed_tensor_in_several_frames_reads_in_the_reference(tmp_path):
    """A tensor of 8 MiB or more is stored as independent 4 MiB zstd frames (compressed in
    parallel, decoded in pieces); the reference reads the concatenation with its one
    decoder, also when the writer gets it in pieces from another zstd .zt."""
    rng = np.random.default_rng(5)
    arrays = {"big": rng.standard_normal((2600, 1024)).astype(np.float32),
              "small": np.arange(10, dtype=np.int16)}
    src, out, again = tmp_path / "in.safetensors", tmp_path / "out.zt", tmp_path / "again.zt"
    save_file(arrays, str(src))
    convert_and_verify(src, out, "--compress", "zstd")
    assert_same_arrays(read_ztensor(out), arrays)
    big = next(m for m in ztensor.Reader(str(out)).list_tensors() if m.name == "big")
    assert big.encoding == "zstd"
    stored = out.read_bytes()[big.offset:big.offset + big.size]
    assert stored.count(b"\x28\xb5\x2f\xfd") >= 3, "several zstd frames"
    convert_and_verify(out, again, "--compress", "zstd")
    assert again.read_bytes() == out.read_bytes()


# --- safetensors -> safetensors -------------------------------------------------------------


def test_safetensors_metadata_survives_conversion(tmp_path):
    arrays = arrays_for_safetensors()
    metadata = {"format": "np", "note": 'ünïcode ✓ and "quotes"', "empty": ""}
    src, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    save_file(arrays, str(src), metadata=metadata)
    convert_and_verify(src, out)
    with safe_open(str(out), framework="numpy") as f:
        assert f.metadata() == metadata
    assert_same_arrays(load_file(str(out)), arrays)


# --- extract ------------------------------------------------------------------------------


def test_extract_writes_npy_files_and_raw_bfloat16(tmp_path):
    arrays = {"layer/weight": sample("w", "float32", (2, 3)), "ids": sample("i", "int64", (4,))}
    norm = sample("n", "bfloat16", (5,))
    src, out = tmp_path / "in.zt", tmp_path / "extracted"
    write_ztensor(src, {**arrays, "norm": norm})
    extracted = tensorfile("extract", src, "-o", out)
    assert extracted.returncode == 0, extracted.stderr
    assert_same_arrays({"layer/weight": np.load(out / "layer%2Fweight.npy"), "ids": np.load(out / "ids.npy")}, arrays)
    assert (out / "norm.bfloat16.bin").read_bytes() == norm.tobytes()


# --- the committed fixtures ---------------------------------------------------------------


def committed_fixtures() -> list:
    """Every committed .zt and .safetensors file with its record (the shards of sharded/ have
    one record for the set, beside its index: tests/interop/test_shards.py; the zTensor 1 and 2
    files of zt1/, zt2/ and zt2_canonical/ records of their own: crates/tensorfile/tests/library/zt1.rs,
    zt2.rs and zt2_canonical.rs; the files of diff/, show/ and stats/ are checked against numpy's
    records of what the commands print; diagnose/ holds files that are not what they are named;
    rewritten/ holds replacement weights, whose records are of what consumers read from the
    files `update` makes with them: crates/tensorfile-cli/tests/commands/rewritten.rs; hf-gguf/,
    hf-gguf-more/ and hf-gguf-ternary/ hold Hugging Face checkpoints, whose records are of what
    llama.cpp's converter wrote from them: crates/tensorfile/tests/library/hf_gguf*.rs)."""
    found = (p for p in FIXTURES.rglob("*") if p.suffix in (".zt", ".safetensors"))
    skipped = {"sharded", "zt1", "zt2", "zt2_canonical", "diagnose", "diff", "show", "stats", "rewritten", "hf-gguf",
               "hf-gguf-more", "hf-gguf-ternary"}
    return sorted(p for p in found if not skipped & set(p.relative_to(FIXTURES).parts))


def fixture_id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def test_the_committed_fixtures_are_all_there():
    """The parametrized tests below would pass on no fixtures at all."""
    found = committed_fixtures()
    # 12 zTensor files of the Rust crate, 6 of the pip package, 7 safetensors files.
    assert len(found) >= 25, f"{len(found)} fixtures: run scripts/fixtures"
    for path in found:
        record = path.with_name(path.name + ".expected.json")
        assert record.is_file(), f"{path}: no record {record.name}"


@pytest.mark.parametrize("path", committed_fixtures(), ids=fixture_id)
def test_ls_agrees_with_the_producer_record(path):
    record = json.loads(path.with_name(path.name + ".expected.json").read_text(encoding="utf-8"))
    listed = {entry["name"]: entry for entry in ls_json(path)}
    assert sorted(listed) == sorted(t["name"] for t in record["tensors"])
    for t in record["tensors"]:
        assert t["layout"] in ("dense", "sparse_coo", "sparse_csr"), f"{path.name}: {t['name']}: {t['layout']!r}"
        if t["layout"] == "dense":
            entry = listed[t["name"]]
            assert (entry["kind"], entry["dtype"], entry["shape"]) == ("tensor", t["dtype"], t["shape"]), t["name"]


@pytest.mark.parametrize("path", committed_fixtures(), ids=fixture_id)
def test_verify_accepts_committed_fixture(path):
    verified = tensorfile("verify", path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_verify_rejects_a_checksum_mismatch(tmp_path):
    data = bytearray((FIXTURES / "zt" / "rust" / "crc32c.zt").read_bytes())
    data[64] ^= 0xFF  # the first byte of the first tensor, which has a crc32c
    corrupted = tmp_path / "corrupted.zt"
    corrupted.write_bytes(data)
    assert tensorfile("verify", corrupted).returncode == 1
