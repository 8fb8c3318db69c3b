"""Interop of `tensorfile convert ... --zt-version 2` with the real zTensor 2 consumer, pip
`ztensor` 2.1.2: what tensorfile writes must open in it with every part readable and every
digest verified (`ztensor.verify(deep=True)`), hold the bytes the source's producer recorded,
and be the canonical file ztensor itself writes: byte for byte the file `ztensor.convert`
makes from the same source where it converts it, and unchanged when ztensor re-canonicalizes
it. A GGUF file made here with gguf-py must convert to the same objects, layouts
(`gguf.<type>/1`) and block bytes as `ztensor.convert` gives.

ztensor 2.1.2 cannot share an environment with ztensor 0.1.4, so it runs in its own
(`~/.cache/tensorfile/venv-zt2`, which `scripts/interop` makes) as a subprocess: its Python is
$TENSORFILE_ZT2_PYTHON, and this module is skipped without it. The GGUF tests need `gguf`
(gguf-py) in the environment running pytest, and a tensorfile that reads GGUF.
"""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PROBE = Path(__file__).resolve().parent / "zt2_probe.py"

ZT2_PYTHON = os.environ.get("TENSORFILE_ZT2_PYTHON")
if not ZT2_PYTHON:
    pytest.skip(
        "TENSORFILE_ZT2_PYTHON is not set (a Python with ztensor==2.1.2; scripts/interop sets it)",
        allow_module_level=True,
    )

# Record dtypes (torch's names) as zTensor 2 stores them: (storage dtype, logical type).
ZT2_TYPES = {
    "float64": ("f64", None),
    "float32": ("f32", None),
    "float16": ("f16", None),
    "bfloat16": ("bf16", None),
    "int64": ("i64", None),
    "int32": ("i32", None),
    "int16": ("i16", None),
    "int8": ("i8", None),
    "uint64": ("u64", None),
    "uint32": ("u32", None),
    "uint16": ("u16", None),
    "uint8": ("u8", None),
    "bool": ("u8", "bool"),
    "float8_e4m3fn": ("u8", "f8_e4m3fn"),
    "float8_e5m2": ("u8", "f8_e5m2"),
    "complex64": ("f32", "complex64"),
}


def tensorfile(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def probe(*args) -> dict:
    done = subprocess.run([ZT2_PYTHON, str(PROBE), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"ztensor 2.1.2 {args[0]} {Path(str(args[1])).name}: {done.stderr}"
    return json.loads(done.stdout)


def ztensor_convert(src: Path, dst: Path) -> "str | None":
    """`ztensor.convert`; None when it converts, its error when it refuses the source."""
    done = subprocess.run([ZT2_PYTHON, str(PROBE), "convert", str(src), str(dst)], capture_output=True, text=True)
    return None if done.returncode == 0 else done.stderr.strip().splitlines()[-1]


def convert_zt2(src: Path, dst: Path) -> dict:
    """`tensorfile convert SRC DST --zt-version 2`, then what ztensor 2.1.2 reads of DST: every
    part read and every digest checked."""
    converted = tensorfile("convert", src, dst, "--zt-version", "2")
    assert converted.returncode == 0, f"convert {src.name}: {converted.stderr}"
    assert dst.read_bytes()[:8] == b"\x89ZT2\r\n\x1a\n"
    read = probe("read", dst)
    parts = sum(len(o["parts"]) for o in read["objects"].values())
    assert (read["checked"], read["undigested"]) == (parts, 0), "every part carries a digest that verifies"
    return read


def committed_fixtures() -> list:
    """The committed safetensors and zTensor v0.1 files with their records."""
    found = sorted(FIXTURES.glob("safetensors/*.safetensors")) + sorted(FIXTURES.glob("zt/*/*.zt"))
    assert len(found) >= 25, f"{len(found)} fixtures: run scripts/fixtures"
    return found


def fixture_id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def u64s(values) -> bytes:
    return b"".join(int(v).to_bytes(8, "little") for v in values)


@pytest.mark.parametrize("path", committed_fixtures(), ids=fixture_id)
def test_ztensor_2_reads_what_the_producer_recorded(path, tmp_path):
    record = json.loads(path.with_name(path.name + ".expected.json").read_text(encoding="utf-8"))
    read = convert_zt2(path, tmp_path / "out.zt")
    objects = read["objects"]
    assert sorted(objects) == sorted(t["name"] for t in record["tensors"])
    for t in record["tensors"]:
        o = objects[t["name"]]
        storage, logical = ZT2_TYPES[t["dtype"]]
        if t["layout"] == "dense":
            assert (o["layout"], o["shape"]) == ("dense", t["shape"]), t["name"]
            data = o["parts"]["data"]
            assert (data["dtype"], data["logical"]) == (storage, logical), t["name"]
            assert data["sha256"] == t["sha256"], t["name"]
            continue
        values = o["parts"]["values"]
        assert (values["dtype"], values["logical"], values["sha256"]) == (storage, logical, t["values_sha256"])
        if t["layout"] == "sparse_coo":
            assert (o["layout"], sorted(o["parts"])) == ("zt.sparse_coo/1", ["coords", "values"])
            coords = u64s(i for row in t["indices"] for i in row)
            assert o["parts"]["coords"]["sha256"] == hashlib.sha256(coords).hexdigest()
        else:
            assert (o["layout"], sorted(o["parts"])) == ("zt.sparse_csr/1", ["indices", "indptr", "values"])
            assert o["parts"]["indptr"]["sha256"] == hashlib.sha256(u64s(t["indptr"])).hexdigest()
            assert o["parts"]["indices"]["sha256"] == hashlib.sha256(u64s(t["indices"])).hexdigest()
    assert (read["attributes"] or {}) == record.get("metadata", {})


@pytest.mark.parametrize("path", committed_fixtures(), ids=fixture_id)
def test_ztensor_2_rewrites_our_files_unchanged(path, tmp_path):
    """ztensor.convert of a zTensor 2 file writes its canonical form: ours already is."""
    ours = tmp_path / "ours.zt"
    convert_zt2(path, ours)
    assert ztensor_convert(ours, tmp_path / "again.zt") is None
    assert (tmp_path / "again.zt").read_bytes() == ours.read_bytes()


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("safetensors/*.safetensors")), ids=fixture_id)
def test_we_write_what_ztensor_2_writes_from_the_same_file(path, tmp_path):
    ours, theirs = tmp_path / "ours.zt", tmp_path / "theirs.zt"
    convert_zt2(path, ours)
    refused = ztensor_convert(path, theirs)
    if refused is not None:
        # ztensor 2.1.2 projects no complex safetensors dtype; tensorfile stores complex64 as
        # f32 parts of logical type complex64 (Appendix A).
        assert "C64" in refused, refused
        return
    assert ours.read_bytes() == theirs.read_bytes()


# --- GGUF ---------------------------------------------------------------------------------


def reads_gguf() -> bool:
    listed = tensorfile("formats", "--json")
    return listed.returncode == 0 and "gguf" in listed.stdout


def make_gguf(path: Path) -> None:
    """Dense and quantized tensors (quantized by gguf-py where it can; K-quant blocks random
    with small fp16 scales), and metadata of several types."""
    gguf = pytest.importorskip("gguf", reason="gguf-py is not installed")
    q = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.block_count", 2)
    w.add_float32("llama.rope.freq_base", 10000.0)
    # A float32 that is no float64 of few digits: kept as the float32 it is.
    w.add_float32("general.f32", 0.1)
    w.add_array("general.f32s", [0.1, -2.5, 1e-3])
    w.add_int64("general.i64", -(2**40))
    w.add_string("general.name", "tiny")
    w.add_bool("general.flag", True)
    w.add_array("tokenizer.ggml.tokens", ["a", "b", "c"])
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w.add_tensor("token_embd.weight", x)
    w.add_tensor("output_norm.weight", x[0].astype(np.float16))
    for t in (q.Q4_0, q.Q4_1, q.Q5_0, q.Q5_1, q.Q8_0):
        blocks = gguf.quants.quantize(x, t)
        w.add_tensor(f"blk.0.{t.name.lower()}.weight", blocks, raw_shape=blocks.shape, raw_dtype=t)
    # K-quants: fp16 scale fields (byte offsets in the block) set to small normal values.
    for t, size, scales in ((q.Q4_K, 144, (0, 2)), (q.Q6_K, 210, (208,))):
        blocks = rng.integers(0, 256, size=(2, size), dtype=np.uint8)
        for at in scales:
            blocks[:, at : at + 2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
        w.add_tensor(f"blk.1.{t.name.lower()}.weight", blocks, raw_shape=blocks.shape, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture
def gguf_pair(tmp_path):
    if not reads_gguf():
        pytest.skip("this tensorfile reads no GGUF files")
    src = tmp_path / "tiny.gguf"
    make_gguf(src)
    ours = convert_zt2(src, tmp_path / "ours.zt")
    assert ztensor_convert(src, tmp_path / "theirs.zt") is None
    return ours, probe("read", tmp_path / "theirs.zt"), tmp_path


def test_gguf_converts_to_ztensors_own_objects_and_blocks(gguf_pair):
    ours, theirs, _ = gguf_pair
    assert sorted(ours["objects"]) == sorted(theirs["objects"])
    layouts = {name: o["layout"] for name, o in ours["objects"].items()}
    assert layouts["blk.0.q4_0.weight"] == "gguf.q4_0/1" and layouts["blk.1.q6_k.weight"] == "gguf.q6_k/1"
    for name, o in theirs["objects"].items():
        # Same layout, logical shape, part names, types and bytes: the blocks verbatim.
        assert ours["objects"][name] == o, name


def test_gguf_metadata_becomes_the_same_attributes(gguf_pair):
    ours, theirs, tmp_path = gguf_pair
    assert ours["attributes"] == theirs["attributes"]
    assert (tmp_path / "ours.zt").read_bytes() == (tmp_path / "theirs.zt").read_bytes()


def committed_gguf() -> list:
    return sorted(FIXTURES.glob("gguf/*.gguf"))


@pytest.mark.parametrize("path", committed_gguf(), ids=fixture_id)
def test_committed_gguf_files_convert_as_ztensor_converts_them(path, tmp_path):
    """Byte for byte ztensor.convert's file where ztensor converts the GGUF file; where it
    refuses it (a big-endian file, a type no gguf profile registers), ours still reads and
    verifies in ztensor, the tensors without a profile left out by --skip-unsupported."""
    if not reads_gguf():
        pytest.skip("this tensorfile reads no GGUF files")
    ours, theirs = tmp_path / "ours.zt", tmp_path / "theirs.zt"
    converted = tensorfile("convert", path, ours, "--zt-version", "2", "--skip-unsupported")
    assert converted.returncode == 0, converted.stderr
    read = probe("read", ours)
    assert read["checked"] == sum(len(o["parts"]) for o in read["objects"].values()) and read["undigested"] == 0
    refused = ztensor_convert(path, theirs)
    if refused is None:
        assert ours.read_bytes() == theirs.read_bytes()
    elif "has no registered projection" in refused:
        assert "registers no gguf.<type>/1 profile" in converted.stderr, converted.stderr
    else:
        assert "little-endian" in refused, refused


# Every type `convert --quantize` makes without an importance matrix (IQ2_XXS, IQ2_XS and IQ1_S
# need one: tests/interop/test_llama_cpp.py covers them into GGUF).
QUANTIZED = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q1_0", "Q2_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
             "Q6_K", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_M"]


@pytest.mark.parametrize("qtype", QUANTIZED)
def test_quantized_into_ztensor_2_as_ztensor_converts_our_gguf(qtype: str, tmp_path: Path):
    """`convert --quantize TYPE` straight into zTensor 2: ztensor 2.1.2 reads and verifies it,
    and it holds the objects (layout `gguf.<type>/1`, shape, blocks) that `ztensor.convert`
    makes of our `.gguf` quantized to the same type; where ztensor registers no profile for the
    type, both refuse it."""
    if not reads_gguf():
        pytest.skip("this tensorfile reads no GGUF files")
    from safetensors.numpy import save_file

    g = np.random.default_rng(sum(qtype.encode()))
    src = tmp_path / "in.safetensors"
    save_file({"blk.0.w": (g.standard_normal((4, 512)) * 0.05).astype(np.float32),
               "blk.0.v": (g.standard_normal((2, 256)) * 3).astype(np.float32),
               "blk.0.norm": np.ones(512, np.float32)}, str(src))
    ours, gguf_file, theirs = tmp_path / "ours.zt", tmp_path / "ours.gguf", tmp_path / "theirs.zt"
    direct = tensorfile("convert", src, ours, "--zt-version", "2", "--quantize", qtype)
    made = tensorfile("convert", src, gguf_file, "--quantize", qtype)
    assert made.returncode == 0, made.stderr
    refused = ztensor_convert(gguf_file, theirs)
    if refused is not None:
        assert "has no registered projection" in refused, refused
        assert direct.returncode != 0 and f"registers no gguf.<type>/1 profile for {qtype}" in direct.stderr, \
            direct.stderr
        return
    assert direct.returncode == 0, direct.stderr
    read = probe("read", ours)
    assert read["checked"] == sum(len(o["parts"]) for o in read["objects"].values()) and read["undigested"] == 0
    expected = probe("read", theirs)["objects"]
    assert read["objects"] == expected
    if qtype not in ("F16", "BF16"):
        assert read["objects"]["blk.0.w"]["layout"] == f"gguf.{qtype.lower()}/1"


@pytest.mark.parametrize("name", ["attributes.zt", "dtypes.zt", "gguf.zt", "quant.zt"])
def test_ztensor_reads_edited_attributes(name: str, tmp_path: Path):
    """`tensorfile meta` on a zTensor 2 file: ztensor 2.1.2 reads the new attributes with their
    types, every object and part as before, and verifies every digest."""
    src = FIXTURES / "zt2" / name
    before = probe("read", src)
    out = tmp_path / name
    edited = tensorfile("meta", src, "-o", out, "--set", "general.name=tiny", "--set", "count:u32=7",
                        "--set", "ratio:f64=0.25", "--set", 'tags:[str]=["a", "b"]')
    assert edited.returncode == 0, edited.stderr
    after = probe("read", out)
    assert after["attributes"] == {**(before["attributes"] or {}), "general.name": "tiny", "count": 7, "ratio": 0.25,
                                   "tags": ["a", "b"]}
    assert after["objects"] == before["objects"]
    assert after["checked"] == before["checked"]
    removed = tmp_path / f"none-{name}"
    keys = [k for k in after["attributes"]]
    deleted = tensorfile("meta", out, "-o", removed, *[a for k in keys for a in ("--delete", k)])
    assert deleted.returncode == 0, deleted.stderr
    assert not probe("read", removed)["attributes"]
