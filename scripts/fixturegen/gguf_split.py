"""Split GGUF models made by llama.cpp's `llama-gguf-split` (built by `scripts/llama-tools` from
the llama.cpp tree of the pinned llama-cpp-python sdist), from inputs written by gguf-py's
`GGUFWriter`, with a record of every file the tool made.

  model.gguf                 gguf-py: keys of every scalar and array type, tensors of plain
                             and block types, a 0-d one and one of shape (1, 16) (ggml writes
                             its `ne` with one dimension less)
  model-0000K-of-00004.gguf  `llama-gguf-split --split --split-max-tensors 3 model.gguf model`
  big.gguf                   gguf-py: three tensors of 1,000,000 bytes together (low-entropy
                             values, so that git stores it small) and two small ones: what
                             `--split-max-size 1M` (1,000,000 bytes) cuts exactly at the limit
  splits.expected.json       every split and merge run: its arguments, and each file it wrote
                             with its size and sha256 (the parts of the other runs are not
                             committed: tensorfile's split of the same input must have these
                             digests)

`model.gguf` and each committed part have their `X.expected.json`, what gguf-py's `GGUFReader`
reads back (`fixturegen.gguf_files.record`).

`scripts/fixtures` runs it when `scripts/llama-tools --print` says the tools are built; alone,
from the repository root, in the tools' environment:
`PYTHONPATH=scripts python -m fixturegen.gguf_split tests/fixtures/gguf-split` (the tool found
through `scripts/llama-tools --print`).
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

from .common import pretty_json, sample
from .gguf_files import Writer, bf16, random_blocks, record, save

RECORD = "splits.expected.json"
MAX_TENSORS = 3


def generate(out: Path, tool: Path, lib_dir: Path) -> None:
    """Writes the inputs, runs the tool on them and writes the committed parts and the record
    into `out` (emptied first)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model_file(out / "model.gguf")
    record(out / "model.gguf")
    big_file(out / "big.gguf")
    env = dict(os.environ, LD_LIBRARY_PATH=str(lib_dir))
    runs = [
        ("model", "model.gguf", ["--split-max-tensors", str(MAX_TENSORS)]),
        ("model-no-first", "model.gguf", ["--split-max-tensors", "4", "--no-tensor-first-split"]),
        ("model-one", "model.gguf", ["--split-max-tensors", "100"]),
        ("big", "big.gguf", ["--split-max-size", "1M"]),
        ("big-no-first", "big.gguf", ["--split-max-size", "1M", "--no-tensor-first-split"]),
    ]
    splits = []
    merges = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for prefix, source, args in runs:
            command = [str(tool), "--split", *args, str(out / source), str(work / prefix)]
            subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
            parts = sorted(work.glob(f"{prefix}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].gguf"))
            splits.append({"output": prefix, "input": source, "args": args, "parts": [digest(p) for p in parts]})
            merged = work / f"{prefix}.merged.gguf"
            command = [str(tool), "--merge", str(parts[0]), str(merged)]
            subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            merges.append({"input": parts[0].name, **digest(merged)})
            if prefix == "model":
                for part in parts:
                    shutil.copyfile(part, out / part.name)
                    record(out / part.name)
    doc = {
        "producer": f"llama-gguf-split (llama.cpp of llama-cpp-python 0.3.36); inputs by gguf-py {gguf_version()}",
        "splits": splits,
        "merges": merges,
    }
    (out / RECORD).write_text(pretty_json(doc) + "\n", encoding="utf-8")
    print(f"wrote {out / RECORD}", flush=True)


def digest(path: Path) -> dict:
    data = path.read_bytes()
    return {"file": path.name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def model_file(path: Path) -> None:
    """A small model: keys of every type llama.cpp copies, tensors of plain and block types."""
    w = Writer(path, "llama")
    w.add_name("tensorfile split test")
    w.add_uint8("test.u8", 250)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 65000)
    w.add_int16("test.i16", -32000)
    w.add_uint32("test.u32", 4_000_000_000)
    w.add_int32("test.i32", -2_000_000_000)
    w.add_float32("test.f32", 0.1)
    w.add_uint64("test.u64", 2**64 - 1)
    w.add_int64("test.i64", -(2**63))
    w.add_float64("test.f64", -1e-300)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "Üñíçødé 🦀")
    for vtype, values in [
        (V.UINT8, [0, 255]),
        (V.INT16, [-32768, 32767]),
        (V.UINT32, [1, 2, 3]),
        (V.INT32, [-1, 7]),
        (V.FLOAT32, [0.5, -1.25]),
        (V.BOOL, [True, False]),
        (V.STRING, ["a", "", "ü🦀"]),
        (V.UINT64, [2**64 - 1]),
        (V.FLOAT64, [2.5]),
    ]:
        w.add_key_value(f"test.array.{vtype.name.lower()}", values, V.ARRAY, sub_type=vtype)
    w.add_key_value("test.array.empty", [], V.ARRAY, sub_type=V.INT32)
    w.add_tensor("token_embd.weight", sample("token_embd.weight", np.dtype("float16"), (8, 32)))
    w.add_tensor("output_norm.weight", sample("output_norm.weight", np.dtype("float32"), (1, 16)))
    w.add_tensor("scalar", sample("scalar", np.dtype("float32"), ()))
    w.add_tensor("blk.0.attn_q.bf16", bf16(sample("bf16", np.dtype("float32"), (4, 8))), raw_dtype=Q.BF16)
    for qtype in (Q.Q8_0, Q.Q4_0):
        q = gguf.quants.quantize(sample(qtype.name, np.dtype("float32"), (2, 64)), qtype)
        w.add_tensor(f"blk.0.{qtype.name.lower()}", q, raw_shape=q.shape, raw_dtype=qtype)
    block, size = gguf.GGML_QUANT_SIZES[Q.Q4_K]
    q4k = random_blocks(Q.Q4_K, 2, size).reshape(2, size)
    w.add_tensor("blk.0.q4_k", q4k, raw_shape=q4k.shape, raw_dtype=Q.Q4_K)
    for name, dtype, shape in [("i8", "int8", (5,)), ("i32", "int32", (2, 3)), ("f64", "float64", (3,)), ("i16", "int16", (7,))]:
        w.add_tensor(f"blk.1.{name}", sample(name, np.dtype(dtype), shape))
    save(w)


def big_file(path: Path) -> None:
    """Tensors whose sizes padded to 32 bytes are 500,000 + 499,968 + 32 = 1,000,000 (kept in one
    part: only more than the limit cuts), then 480 and 32 bytes (a second part)."""
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tensorfile split size test")
    pattern = lambda n, dtype: (np.arange(n) % 7).astype(dtype)  # noqa: E731 (short and local)
    w.add_tensor("a", pattern(125_000, np.float32))
    w.add_tensor("b", pattern(499_967, np.int8))
    w.add_tensor("c", pattern(3, np.int8))
    w.add_tensor("d", pattern(120, np.float32))
    w.add_tensor("e", pattern(8, np.float16))
    save(w)


def gguf_version() -> str:
    from importlib.metadata import version

    return version("gguf")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m fixturegen.gguf_split OUT")
    found = json.loads(subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "llama-tools"), "--print"],
        check=True, capture_output=True, text=True).stdout)
    if not found.get("built"):
        sys.exit("the llama.cpp tools are not built: run scripts/llama-tools first")
    generate(Path(sys.argv[1]), Path(found["llama_gguf_split"]), Path(found["lib_dir"]))
