"""Interop of the `tensorfile` binary with llama.cpp's `llama-gguf-split` and gguf-py on split GGUF
models: for a generated model of several megabytes (plain and block tensor types, keys of
every value type, a long token list), our split (`convert --split-max-tensors`,
`--max-shard-size`, `--no-tensor-first-split`) has the tool's bytes, part for part; our merge
of any part has the bytes of the tool's `--merge`; the tool merges our parts; gguf-py's
`GGUFReader` reads every part we wrote with the split keys the tool writes and the tensors of
the model.

Needs the tools built by `scripts/llama-tools` (skipped when they are not: they take 10-20
minutes to build, never in CI) and `gguf numpy pytest`; run by `scripts/interop`. The binary
is $TENSORFILE_BIN, else target/release/tensorfile or target/debug/tensorfile.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFWriter
from gguf import GGUFValueType as V

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]


def llama_tools() -> dict:
    found = subprocess.run([sys.executable, str(ROOT / "scripts" / "llama-tools"), "--print"],
                           capture_output=True, text=True, check=False)
    if found.returncode != 0:
        pytest.skip(f"scripts/llama-tools --print failed: {found.stderr}", allow_module_level=True)
    tools = json.loads(found.stdout)
    if not tools.get("built"):
        pytest.skip("llama.cpp's tools are not built: run scripts/llama-tools", allow_module_level=True)
    return tools


TOOLS = llama_tools()

# (name of the run, llama-gguf-split's options, ours)
RUNS = [
    ("tensors7", ["--split-max-tensors", "7"], ["--split-max-tensors", "7"]),
    ("tensors1", ["--split-max-tensors", "1"], ["--split-max-tensors", "1"]),
    ("tensors-nofirst", ["--split-max-tensors", "5", "--no-tensor-first-split"],
     ["--split-max-tensors", "5", "--no-tensor-first-split"]),
    ("size1", ["--split-max-size", "1M"], ["--max-shard-size", "1MB"]),
    ("size2-nofirst", ["--split-max-size", "2M", "--no-tensor-first-split"],
     ["--max-shard-size", "2000000", "--no-tensor-first-split"]),
    ("one", ["--split-max-tensors", "1000"], ["--split-max-tensors", "1000"]),
]


def rng(name: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))


def make_model(path: Path) -> None:
    """A model of about 4 MB: keys of every value type, plain tensors of every ggml type, block
    tensors quantized by gguf-py and random blocks of the K types, odd sizes (padding), a tensor
    of shape (1, N) and a 0-d one."""
    w = GGUFWriter(path, "llama")
    w.add_name("split interop")
    w.add_block_count(4)
    w.add_context_length(2048)
    w.add_uint8("x.u8", 7)
    w.add_int8("x.i8", -7)
    w.add_uint16("x.u16", 65535)
    w.add_int16("x.i16", -32768)
    w.add_uint32("x.u32", 4_000_000_000)
    w.add_int32("x.i32", -5)
    w.add_float32("x.f32", float(np.float32(1.1)))
    w.add_uint64("x.u64", 2**64 - 1)
    w.add_int64("x.i64", -(2**62))
    w.add_float64("x.f64", 1e300)
    w.add_bool("x.bool", False)
    w.add_string("x.string", "ünïcode 🦀 and \"quotes\"")
    tokens = [f"tok{i}_{chr(0x3000 + i % 500)}" for i in range(3000)]
    w.add_token_list(tokens)
    w.add_token_scores([float(s) for s in rng("scores").standard_normal(3000).astype(np.float32)])
    w.add_token_types([int(t) for t in rng("types").integers(1, 6, 3000)])
    w.add_key_value("x.bools", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_key_value("x.u64s", [1, 2**64 - 1], V.ARRAY, sub_type=V.UINT64)
    w.add_key_value("x.f64s", [0.5, -2.0], V.ARRAY, sub_type=V.FLOAT64)
    w.add_key_value("x.i8s", [-1, 1], V.ARRAY, sub_type=V.INT8)
    # The first tensor small: the tool refuses a first tensor larger than the size; a later
    # one (the embeddings, 1.5 MB) gets a part of its own.
    w.add_tensor("output_norm.weight", rng("norm").standard_normal((1, 64)).astype(np.float32))
    w.add_tensor("token_embd.weight", rng("emb").standard_normal((3000, 256)).astype(np.float16))
    w.add_tensor("rope.scalar", np.array(1.5, dtype=np.float32))
    w.add_tensor("odd.f32", rng("odd").standard_normal(37).astype(np.float32))
    for name, dtype in [("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("i64", np.int64), ("f64", np.float64)]:
        w.add_tensor(f"plain.{name}", (rng(name).integers(-100, 100, 1001)).astype(dtype))
    bf16 = gguf.quants.quantize(rng("bf16").standard_normal((64, 96)).astype(np.float32), Q.BF16)
    w.add_tensor("plain.bf16", bf16, raw_shape=bf16.shape, raw_dtype=Q.BF16)
    for layer in range(4):
        for k, qtype in enumerate([Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1]):
            values = rng(f"{layer}.{k}").standard_normal((256, 512)).astype(np.float32)
            q = gguf.quants.quantize(values, qtype)
            w.add_tensor(f"blk.{layer}.{qtype.name.lower()}.weight", q, raw_shape=q.shape, raw_dtype=qtype)
        for qtype in [Q.Q4_K, Q.Q6_K]:
            _, size = gguf.GGML_QUANT_SIZES[qtype]
            blocks = rng(f"{layer}.{qtype.name}").integers(0, 256, (32, 2 * size), dtype=np.uint8)
            # Small normal float16 scales: the `d` of every block (offset 0 of Q4_K, 208 of Q6_K).
            at = 0 if qtype == Q.Q4_K else 208
            for b in range(2):
                blocks[:, b * size + at: b * size + at + 2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
            w.add_tensor(f"blk.{layer}.{qtype.name.lower()}.weight", blocks, raw_shape=blocks.shape, raw_dtype=qtype)
        w.add_tensor(f"blk.{layer}.attn_norm.weight", rng(f"n{layer}").standard_normal(64).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.gguf"
    make_model(path)
    assert path.stat().st_size > 3_000_000
    return path


def llama(*args) -> None:
    env = dict(os.environ, LD_LIBRARY_PATH=TOOLS["lib_dir"])
    done = subprocess.run([TOOLS["llama_gguf_split"], *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"llama-gguf-split {args}: {done.stdout}{done.stderr}"


def tensorfile(*args) -> dict:
    done = subprocess.run([str(BINARY), *map(str, args), "--json"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, f"tensorfile {args}: {done.stdout}{done.stderr}"
    return json.loads(done.stdout)


def parts_of(folder: Path, prefix: str) -> list:
    return sorted(folder.glob(f"{prefix}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].gguf"))


def tensors_of(paths: list) -> list:
    """(name, type, shape, bytes) of every tensor of the parts, in order, as gguf-py reads them."""
    out = []
    for path in paths:
        for t in GGUFReader(path).tensors:
            out.append((t.name, t.tensor_type.name, [int(d) for d in t.shape], t.data.tobytes()))
    return out


@pytest.mark.parametrize("run,theirs,ours", RUNS, ids=[r[0] for r in RUNS])
def test_split_and_merge_match_llama_gguf_split(tmp_path, model, run, theirs, ours):
    (tmp_path / "theirs").mkdir()
    (tmp_path / "ours").mkdir()
    llama("--split", *theirs, model, tmp_path / "theirs" / run)
    their_parts = parts_of(tmp_path / "theirs", run)
    done = tensorfile("convert", model, tmp_path / "ours" / f"{run}.gguf", *ours)
    our_parts = [Path(f) for f in done["files"]]
    assert [p.name for p in our_parts] == [p.name for p in their_parts]
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == [p.name for p in our_parts]
    for mine, theirs_part in zip(our_parts, their_parts):
        assert mine.read_bytes() == theirs_part.read_bytes(), mine.name

    # The merge: theirs of their parts, ours of a part (the last one: any part reads as the model).
    llama("--merge", their_parts[0], tmp_path / "theirs.merged.gguf")
    tensorfile("convert", our_parts[-1], tmp_path / "ours.merged.gguf")
    assert (tmp_path / "ours.merged.gguf").read_bytes() == (tmp_path / "theirs.merged.gguf").read_bytes()

    # gguf-py reads our parts: the split keys as the tool writes them, the model's tensors.
    count = len(our_parts)
    for no, part in enumerate(our_parts):
        fields = GGUFReader(part).fields
        keys = [k for k in fields if not k.startswith("GGUF.")]
        assert keys[-3:] == ["split.no", "split.tensors.count", "split.count"]
        assert fields["split.no"].types == [V.UINT16] and int(fields["split.no"].parts[-1][0]) == no
        assert fields["split.count"].types == [V.UINT16] and int(fields["split.count"].parts[-1][0]) == count
        assert fields["split.tensors.count"].types == [V.INT32]
        assert ("general.name" in fields) == (no == 0), "the model's keys in the first part only"
    original = GGUFReader(model).tensors
    assert int(GGUFReader(our_parts[0]).fields["split.tensors.count"].parts[-1][0]) == len(original)
    read = tensors_of(our_parts)
    assert [r[0] for r in read] == [t.name for t in original]
    for (name, qtype, _, data), t in zip(read, original):
        assert qtype == t.tensor_type.name, name
        assert data == t.data.tobytes(), name


def test_llama_gguf_split_merges_our_parts(tmp_path, model):
    done = tensorfile("convert", model, tmp_path / "m.gguf", "--max-shard-size", "1500KB", "--no-tensor-first-split")
    parts = [Path(f) for f in done["files"]]
    assert len(parts) > 3
    llama("--merge", parts[0], tmp_path / "theirs.gguf")
    tensorfile("convert", parts[1], tmp_path / "ours.gguf")
    assert (tmp_path / "theirs.gguf").read_bytes() == (tmp_path / "ours.gguf").read_bytes()
    # And what both merged splits again into our parts.
    (tmp_path / "again").mkdir()
    llama("--split", "--split-max-size", "1M", tmp_path / "theirs.gguf", tmp_path / "again" / "x")
    ours = tensorfile("convert", tmp_path / "ours.gguf", tmp_path / "x.gguf", "--max-shard-size", "1MB")
    theirs = parts_of(tmp_path / "again", "x")
    assert [Path(f).read_bytes() for f in ours["files"]] == [p.read_bytes() for p in theirs]


def test_every_part_reads_as_the_model(tmp_path, model):
    llama("--split", "--split-max-tensors", "9", model, tmp_path / "p")
    parts = parts_of(tmp_path, "p")
    whole = subprocess.run([str(BINARY), "ls", "--json", model], capture_output=True, text=True, check=True)
    names = [row["name"] for row in json.loads(whole.stdout)]
    for part in parts:
        rows = json.loads(subprocess.run([str(BINARY), "ls", "--json", part], capture_output=True, text=True,
                                         check=True).stdout)
        assert [row["name"] for row in rows] == names
    verified = subprocess.run([str(BINARY), "verify", "--deep", parts[1]], capture_output=True, text=True, check=False)
    assert verified.returncode == 0 and verified.stdout.startswith("OK "), verified.stdout + verified.stderr
