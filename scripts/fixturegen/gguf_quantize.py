"""llama.cpp's `llama-quantize` on small GGUF models: the inputs (made with gguf-py), importance
matrices (made by `llama-imatrix`, or written in its two layouts), and one record per run of
what `llama-quantize` wrote: every tensor's name, type, shape and offset, every key/value in
order, the data offset and the sha256 of the header and of the whole file (see
tests/fixtures/README.md, "llama-quantize").

Inputs (committed, in OUT):
  tiny.gguf        a llama model llama.cpp runs: 2 layers, n_embd 256, 4 heads, 2 KV heads,
                   n_ff 96 (ffn_down rows are not whole 256-blocks), the first 384 tokens of
                   llama.cpp's models/ggml-vocab-llama-spm.gguf with every other tokenizer key
                   of it, an untied output; layer 0 F16, layer 1 BF16, norms F32
  thin80.gguf      llama key/values of an 80-layer model with grouped-query attention (a "70B"
                   to llama.cpp), tensors named as llama's but of 2 rows each, embeddings tied,
                   a (1, 64) tensor (written with 2 dimensions, 1 in the output), no file type
  moe.gguf         llama with 8 experts in layers 6 and 7 (3-D expert tensors), dense FFNs
                   before, odd rows (160 for the embeddings, 48 and 352 in two tensors)
  falcon.gguf      falcon key/values of 16 layers, fused QKV, 2 rows per tensor
  prequant.gguf    llama, tensors already Q8_0 and Q4_0 among F32/F16/BF16 ones, infos not in
                   name order, general.alignment 64, split keys of a one-file set
  empty.gguf       llama with 8 experts in one layer, tensors with a dimension of 0 (an expert
                   tensor and a matrix of no rows, which llama-quantize writes as their new type
                   with no bytes) beside one expert tensor of values
  falcon-split-0000N-of-00003.gguf
                   falcon.gguf split by llama-gguf-split (24 tensors a file)
  and the models of the architectures whose rules differ, with their runs and importance
  matrices: see fixturegen.gguf_quantize_archs

Importance matrices (committed): imatrix-tiny.gguf and imatrix-tiny.dat, by llama-imatrix on
tiny.gguf; imatrix-moe.gguf (some experts never counted) written with gguf-py in the layout
llama-imatrix writes; imatrix-empty.dat (the legacy layout) for empty.gguf's experts;
imatrix-bad-size.dat and imatrix-nan.dat, legacy files llama-quantize refuses.

The outputs of llama-quantize stay in ~/.cache/tensorfile/gguf-quantize/; runs/<run>.json
record them. Every run is made with the working directory there and relative names, so that the
paths llama-quantize writes into the output (quantize.imatrix.file) are the names recorded.

Runs in the gguf environment (gguf-py and numpy) with the built llama.cpp tools:
  python -m fixturegen.gguf_quantize OUT TOOLS_JSON
where TOOLS_JSON is what `scripts/llama-tools --print` prints. Deterministic: seeded data,
llama-imatrix on one thread.
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFValueType as V, GGUFWriter
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

CACHE = Path.home() / ".cache" / "tensorfile" / "gguf-quantize"
# The tokens of the tiny model: llama-spm's first (its 3 special tokens, 256 bytes, 125 pieces).
VOCAB = 384
LONG = 16
THREADS = "2"

# llama-quantize's presets, in the order of tools/quantize/quantize.cpp's table.
PRESETS = [
    "Q1_0", "Q2_0", "Q4_0", "Q4_1", "MXFP4_MOE", "Q5_0", "Q5_1", "IQ2_XXS", "IQ2_XS", "IQ2_S",
    "IQ2_M", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0", "Q2_K", "Q2_K_S", "IQ3_XXS", "IQ3_S", "IQ3_M",
    "Q3_K", "IQ3_XS", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_NL", "IQ4_XS", "Q4_K", "Q4_K_S",
    "Q4_K_M", "Q5_K", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0", "F16", "BF16", "F32", "COPY",
]
# The mixes whose rules look at layer counts, grouped-query attention and the architecture:
# what the thin 80-layer model is quantized with (Q2_K_S and IQ2_M refuse without an
# importance matrix).
THIN80 = ["Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_M", "Q5_K_M", "IQ3_M", "IQ4_XS", "IQ2_M",
          "COPY"]
# The mixes and plain presets of the thin MoE model without an importance matrix.
MOE = ["Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",
       "IQ3_XS", "IQ3_S", "IQ3_M", "IQ4_NL", "IQ4_XS", "Q4_0", "COPY", "MXFP4_MOE", "IQ2_XXS"]
# Falcon's rules, and the presets whose blocks are not 32 elements (its rows are whole 256s).
FALCON = ["Q3_K_M", "Q3_K_L", "Q4_K_M", "Q5_K_M", "Q2_K", "Q4_K_S", "COPY", "Q1_0", "Q2_0", "TQ1_0",
          "TQ2_0", "Q4_1", "Q5_1", "MXFP4_MOE", "F32", "BF16", "Q8_0"]

# ggml's type names and (block elements, block bytes); gguf-py 0.19 lacks Q2_0 (42).
TYPE_NAMES = {int(t): t.name for t in Q} | {42: "Q2_0"}
TYPE_SIZES = {int(t): size for t, size in GGML_QUANT_SIZES.items()} | {42: (64, 18)}
VALUE_TYPES = {
    0: ("u8", "<B"), 1: ("i8", "<b"), 2: ("u16", "<H"), 3: ("i16", "<h"), 4: ("u32", "<I"),
    5: ("i32", "<i"), 6: ("f32", "<f"), 7: ("bool", "<B"), 8: ("string", None), 9: ("array", None),
    10: ("u64", "<Q"), 11: ("i64", "<q"), 12: ("f64", "<d"),
}


def rng(name: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))


def weights(name: str, shape) -> np.ndarray:
    return (rng(name).standard_normal(shape) * 0.05).astype(np.float32)


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 to bfloat16 bits, rounded to nearest even (as torch and ggml round finite values)."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def add(w: GGUFWriter, name: str, kind: str, shape) -> None:
    """A tensor of numpy `shape` (outermost first) stored as `kind`."""
    data = weights(name, shape)
    if kind == "F32":
        w.add_tensor(name, data)
    elif kind == "F16":
        w.add_tensor(name, data.astype(np.float16))
    elif kind == "BF16":
        w.add_tensor(name, bf16_bits(data), raw_shape=list(shape), raw_dtype=Q.BF16)
    else:
        qtype = Q[kind]
        blocks = quants.quantize(data, qtype)
        w.add_tensor(name, blocks, raw_dtype=qtype)


def write(w: GGUFWriter) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def vocabulary(tree: Path, keep: int | None) -> list:
    """The tokenizer key/values of llama.cpp's llama-spm vocabulary, the token lists cut to
    their first `keep` entries."""
    reader = GGUFReader(tree / "models" / "ggml-vocab-llama-spm.gguf")
    out = []
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        value = field.contents()
        vtype = field.types[0]
        sub = field.types[1] if vtype == V.ARRAY else None
        if sub is not None and keep is not None:
            value = value[:keep]
        out.append((key, value, vtype, sub))
    return out


def llama_keys(w: GGUFWriter, *, layers, ctx, embd, ff, heads, kv_heads, name, file_type=None, extra=()):
    w.add_key_value("general.type", "model", V.STRING)
    w.add_key_value("general.name", name, V.STRING)
    if file_type is not None:
        w.add_key_value("general.file_type", file_type, V.UINT32)
    arch = w.arch if hasattr(w, "arch") else "llama"
    w.add_key_value(f"{arch}.block_count", layers, V.UINT32)
    w.add_key_value(f"{arch}.context_length", ctx, V.UINT32)
    w.add_key_value(f"{arch}.embedding_length", embd, V.UINT32)
    w.add_key_value(f"{arch}.feed_forward_length", ff, V.UINT32)
    w.add_key_value(f"{arch}.attention.head_count", heads, V.UINT32)
    w.add_key_value(f"{arch}.attention.head_count_kv", kv_heads, V.UINT32)
    for key, value, vtype in extra:
        w.add_key_value(key, value, vtype)


def tiny(path: Path, tree: Path) -> None:
    w = GGUFWriter(path, "llama")
    llama_keys(w, layers=2, ctx=256, embd=256, ff=96, heads=4, kv_heads=2, name="tensorfile tiny llama",
               file_type=1, extra=[("llama.rope.freq_base", 10000.0, V.FLOAT32),
                                   ("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32),
                                   ("llama.vocab_size", VOCAB, V.UINT32),
                                   ("llama.rope.dimension_count", 64, V.UINT32)])
    for key, value, vtype, sub in vocabulary(tree, VOCAB):
        w.add_key_value(key, value, vtype, sub_type=sub)
    w.add_key_value("general.quantization_version", 2, V.UINT32)
    add(w, "token_embd.weight", "F16", (VOCAB, 256))
    for i, kind in enumerate(["F16", "BF16"]):
        b = f"blk.{i}."
        add(w, b + "attn_norm.weight", "F32", (256,))
        add(w, b + "attn_q.weight", kind, (256, 256))
        add(w, b + "attn_k.weight", kind, (128, 256))
        add(w, b + "attn_v.weight", kind, (128, 256))
        add(w, b + "attn_output.weight", kind, (256, 256))
        add(w, b + "ffn_norm.weight", "F32", (256,))
        add(w, b + "ffn_gate.weight", kind, (96, 256))
        add(w, b + "ffn_up.weight", kind, (96, 256))
        add(w, b + "ffn_down.weight", kind, (256, 96))
    add(w, "output_norm.weight", "F32", (256,))
    add(w, "output.weight", "BF16", (VOCAB, 256))
    write(w)


def thin80(path: Path) -> None:
    w = GGUFWriter(path, "llama")
    llama_keys(w, layers=80, ctx=4096, embd=8192, ff=28672, heads=64, kv_heads=8, name="thin 80-layer llama",
               extra=[("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32)])
    add(w, "token_embd.weight", "F16", (2, 256))
    add(w, "rope_freqs.weight", "F32", (1, 64))
    for i in range(80):
        kind = "BF16" if i % 5 == 4 else "F16"
        for t in ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]:
            add(w, f"blk.{i}.{t}.weight", kind, (2, 256))
    add(w, "output_norm.weight", "F32", (256,))
    write(w)


def moe(path: Path) -> None:
    w = GGUFWriter(path, "llama")
    llama_keys(w, layers=8, ctx=4096, embd=4096, ff=14336, heads=32, kv_heads=8, name="thin mixture of experts",
               file_type=1, extra=[("llama.expert_count", 8, V.UINT32), ("llama.expert_used_count", 2, V.UINT32),
                                   ("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32)])
    add(w, "token_embd.weight", "F16", (4, 160))
    for i in range(8):
        b = f"blk.{i}."
        add(w, b + "attn_q.weight", "F16", (2, 256))
        add(w, b + "attn_k.weight", "F16", (2, 48 if i == 7 else 256))
        add(w, b + "attn_v.weight", "F16", (2, 256))
        add(w, b + "attn_output.weight", "F16", (2, 256))
        if i < 6:
            for t in ["ffn_gate", "ffn_up", "ffn_down"]:
                add(w, b + t + ".weight", "F16", (2, 256))
        else:
            add(w, b + "ffn_gate_inp.weight", "F32", (8, 256))
            add(w, b + "ffn_gate_exps.weight", "F16", (8, 2, 256))
            add(w, b + "ffn_up_exps.weight", "BF16", (8, 2, 256))
            add(w, b + "ffn_down_exps.weight", "F16", (8, 2, 352 if i == 6 else 256))
    add(w, "output_norm.weight", "F32", (160,))
    add(w, "output.weight", "F16", (4, 160))
    write(w)


def falcon(path: Path) -> None:
    w = GGUFWriter(path, "falcon")
    llama_keys(w, layers=16, ctx=2048, embd=4544, ff=18176, heads=71, kv_heads=1, name="thin falcon",
               extra=[("falcon.attention.layer_norm_epsilon", 1e-5, V.FLOAT32)])
    add(w, "token_embd.weight", "F16", (2, 256))
    for i in range(16):
        for t in ["attn_qkv", "attn_output", "ffn_up", "ffn_down"]:
            add(w, f"blk.{i}.{t}.weight", "F16", (2, 256))
    add(w, "output.weight", "F16", (2, 256))
    write(w)


def prequant(path: Path) -> None:
    w = GGUFWriter(path, "llama")
    w.add_custom_alignment(64)
    llama_keys(w, layers=2, ctx=512, embd=256, ff=512, heads=4, kv_heads=4, name="partly quantized",
               file_type=7, extra=[("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32),
                                   ("split.no", 0, V.UINT16), ("split.count", 1, V.UINT16),
                                   ("split.tensors.count", 13, V.INT32)])
    # Infos in an order that is not llama.cpp's (layer, then name).
    add(w, "output.weight", "Q8_0", (2, 256))
    add(w, "blk.1.ffn_down.weight", "F16", (2, 256))
    add(w, "blk.0.attn_q.weight", "Q8_0", (2, 256))
    add(w, "blk.0.attn_k.weight", "F32", (2, 256))
    add(w, "blk.0.attn_v.weight", "Q4_0", (2, 256))
    add(w, "blk.0.attn_output.weight", "BF16", (2, 256))
    add(w, "token_embd.weight", "F16", (2, 256))
    add(w, "blk.0.ffn_gate.weight", "F16", (2, 256))
    add(w, "blk.0.ffn_up.weight", "F16", (2, 256))
    add(w, "blk.0.ffn_down.weight", "F16", (2, 256))
    add(w, "blk.1.attn_q.weight", "F16", (2, 256))
    add(w, "blk.1.attn_v.weight", "F16", (2, 256))
    add(w, "output_norm.weight", "F32", (256,))
    write(w)


def empty(path: Path) -> None:
    w = GGUFWriter(path, "llama")
    llama_keys(w, layers=1, ctx=512, embd=256, ff=512, heads=4, kv_heads=4, name="empty tensors",
               file_type=1, extra=[("llama.expert_count", 8, V.UINT32), ("llama.expert_used_count", 2, V.UINT32),
                                   ("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32)])
    add(w, "blk.0.attn_v.weight", "F16", (0, 256))
    add(w, "blk.0.ffn_up_exps.weight", "F16", (8, 0, 256))
    add(w, "blk.0.ffn_down_exps.weight", "F16", (8, 2, 256))
    write(w)


def imatrix_moe(path: Path, model: Path) -> None:
    """An importance matrix for moe.gguf in llama-imatrix's GGUF layout: per weight matrix
    `<name>.in_sum2` (F32, one row of sums per expert) and `<name>.counts` (F32, one count per
    expert), and the keys it writes. Some experts are never counted (count 0)."""
    reader = GGUFReader(model)
    w = GGUFWriter(path, "llama")
    w.add_key_value("general.type", "imatrix", V.STRING)
    w.add_key_value("imatrix.datasets", ["synthetic moe activations"], V.ARRAY, sub_type=V.STRING)
    w.add_key_value("imatrix.chunk_count", 3, V.UINT32)
    w.add_key_value("imatrix.chunk_size", 512, V.UINT32)
    names = sorted(t.name for t in reader.tensors if t.name.startswith("blk.") and len(t.shape) > 1)
    for name in names:
        t = next(t for t in reader.tensors if t.name == name)
        ne0 = int(t.shape[0])
        nmat = int(t.shape[2]) if len(t.shape) > 2 else 1
        g = rng("imatrix " + name)
        sums = (g.random((nmat, ne0)) * 40.0 + 0.5).astype(np.float32)
        counts = np.full((nmat, 1), 1536.0, dtype=np.float32)
        if nmat > 1:
            counts[::3] = 0.0
            counts[1, 0] = 1537.4
        w.add_tensor(name + ".in_sum2", sums)
        w.add_tensor(name + ".counts", counts)
    write(w)


def imatrix_dat(path: Path, entries, chunks: int | None, dataset: str | None) -> None:
    """A legacy importance matrix: i32 entry count, then per entry i32 name length, name, i32
    call count, i32 value count, f32 values; then (optional) i32 chunk count, i32 dataset name
    length, dataset name."""
    out = struct.pack("<i", len(entries))
    for name, ncall, values in entries:
        raw = name.encode()
        out += struct.pack("<i", len(raw)) + raw + struct.pack("<ii", ncall, len(values))
        out += np.asarray(values, dtype="<f4").tobytes()
    if chunks is not None:
        out += struct.pack("<i", chunks)
        raw = (dataset or "").encode()
        out += struct.pack("<i", len(raw)) + raw
    path.write_bytes(out)


CALIBRATION = """The quick brown fox jumps over the lazy dog while the river runs to the sea.
A tensor is an array of numbers with a shape, a type and a place in a file. Quantization
stores those numbers in fewer bits, block by block, each block with its own scale.
Importance matrices weigh each column by how much the activations that meet it matter.
"""


def calibration(path: Path) -> None:
    paragraphs = []
    for i in range(24):
        paragraphs.append(f"Paragraph {i}: " + CALIBRATION.replace("river", ["river", "road", "wind"][i % 3]))
    path.write_text("\n".join(paragraphs))


# ---------------------------------------------------------------------------------------------
# Reading what llama-quantize wrote.


class Cursor:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        b = self.data[self.pos:self.pos + n]
        if len(b) != n:
            raise ValueError("truncated")
        self.pos += n
        return b

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> bytes:
        return self.take(self.unpack("<Q"))


def value(c: Cursor, vtype: int):
    """A value of `vtype` as recorded: (type name, JSON value or summary)."""
    name, fmt = VALUE_TYPES[vtype]
    if vtype == 8:
        raw = c.string()
        try:
            return {"type": "string", "value": raw.decode("utf-8")}
        except UnicodeDecodeError:
            return {"type": "string", "hex": raw.hex()}
    if vtype == 9:
        element = c.unpack("<I")
        count = c.unpack("<Q")
        start = c.pos
        items = [value(c, element) for _ in range(count)]
        raw = c.data[start:c.pos]
        record = {"type": "array", "element": VALUE_TYPES[element][0], "len": count,
                  "sha256": hashlib.sha256(raw).hexdigest()}
        if count <= LONG:
            record["value"] = [i.get("value", i.get("hex")) for i in items]
        return record
    raw = c.unpack(fmt)
    if vtype == 7:
        raw = bool(raw)
    return {"type": name, "value": raw}


def read_output(path: Path) -> dict:
    data = path.read_bytes()
    c = Cursor(data)
    assert c.take(4) == b"GGUF"
    version = c.unpack("<I")
    n_tensors = c.unpack("<Q")
    n_kv = c.unpack("<Q")
    metadata = []
    alignment = 32
    for _ in range(n_kv):
        key = c.string().decode("utf-8")
        record = value(c, c.unpack("<I"))
        metadata.append({"key": key, **record})
        if key == "general.alignment" and record["type"] == "u32":
            alignment = record["value"]
    tensors = []
    for _ in range(n_tensors):
        name = c.string().decode("utf-8")
        ne = [c.unpack("<Q") for _ in range(c.unpack("<I"))]
        ggml_type = c.unpack("<I")
        offset = c.unpack("<Q")
        tensors.append([name, TYPE_NAMES.get(ggml_type, str(ggml_type)), ne, offset, ggml_type])
    # llama-quantize lays the data out at 32 bytes, whatever general.alignment says.
    data_offset = (c.pos + 31) // 32 * 32
    tensor_sha256 = []
    for t in tensors:
        per_block, block_bytes = TYPE_SIZES[t.pop()]
        nbytes = int(np.prod(t[2], dtype=np.uint64)) // per_block * block_bytes
        start = data_offset + t[3]
        tensor_sha256.append(hashlib.sha256(data[start:start + nbytes]).hexdigest())
    return {
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "version": version,
        "general_alignment": alignment,
        "data_offset": data_offset,
        "header_sha256": hashlib.sha256(data[:data_offset]).hexdigest(),
        "metadata": metadata,
        "tensors": tensors,
        "tensor_sha256": tensor_sha256,
    }


# ---------------------------------------------------------------------------------------------
# Running llama-quantize.


def arguments(options: dict) -> list:
    args = []
    if options.get("leave_output_tensor"):
        args.append("--leave-output-tensor")
    if options.get("pure"):
        args.append("--pure")
    if options.get("allow_requantize"):
        args.append("--allow-requantize")
    if options.get("keep_split"):
        args.append("--keep-split")
    if "imatrix" in options:
        args += ["--imatrix", options["imatrix"]]
    for name in options.get("include_weights", []):
        args += ["--include-weights", name]
    for name in options.get("exclude_weights", []):
        args += ["--exclude-weights", name]
    if "output_tensor_type" in options:
        args += ["--output-tensor-type", options["output_tensor_type"]]
    if "token_embedding_type" in options:
        args += ["--token-embedding-type", options["token_embedding_type"]]
    for pattern, kind in options.get("tensor_types", []):
        args += ["--tensor-type", f"{pattern}={kind}"]
    for text in options.get("override_kv", []):
        args += ["--override-kv", text]
    if "prune_layers" in options:
        args += ["--prune-layers", ",".join(str(i) for i in options["prune_layers"])]
    return args


def failure(stderr: str) -> dict:
    """What llama-quantize said when it refused: its message and the tensor it names."""
    message = ""
    tensor = None
    for line in stderr.splitlines():
        if "failed to quantize:" in line:
            message = line.split("failed to quantize:", 1)[1].strip()
        if "offending tensor:" in line:
            tensor = line.split("offending tensor:", 1)[1].strip()
    if message.startswith("Missing importance matrix for tensor "):
        tensor = message.split("for tensor ", 1)[1].split(" ")[0]
    if " for blk." in message or " for token_embd" in message or " for output" in message:
        tensor = message.rsplit(" for ", 1)[1].strip()
    return {"error": message, "tensor": tensor}


def run(tools: dict, name: str, input_name: str, options: dict, runs: Path) -> None:
    out_name = f"out-{name}.gguf"
    produced = CACHE / out_name
    for old in CACHE.glob(f"out-{name}*.gguf"):
        old.unlink()
    args = [tools["llama_quantize"], *arguments(options), input_name, out_name, options["preset"], THREADS]
    env = dict(os.environ, LD_LIBRARY_PATH=tools["lib_dir"])
    done = subprocess.run(args, cwd=CACHE, env=env, capture_output=True, text=True)
    record = {"input": input_name, "options": options, "arguments": args[1:], "exit_code": done.returncode}
    if done.returncode == 0 and options.get("keep_split"):
        outputs = sorted(CACHE.glob(f"out-{name}-0*-of-0*.gguf"))
        record["outputs"] = [{"file": p.name, **read_output(p)} for p in outputs]
    elif done.returncode == 0:
        record["output"] = read_output(produced)
    else:
        record.update(failure(done.stderr))
        if not record["error"]:
            sys.exit(f"llama-quantize {name} failed without saying why:\n{done.stderr[-3000:]}")
    (runs / f"{name}.json").write_text(compact_json(record))


def compact_json(record: dict) -> str:
    """The record, one key/value and one tensor a line."""
    def output(out: dict, indent: str) -> str:
        parts = [f"{indent}  {json.dumps(k)}: {json.dumps(v)}" for k, v in out.items() if k not in ("metadata", "tensors")]
        meta = ",\n".join(f"{indent}    " + json.dumps(m, ensure_ascii=False) for m in out["metadata"])
        tensors = ",\n".join(f"{indent}    " + json.dumps(t) for t in out["tensors"])
        parts.append(f'{indent}  "metadata": [\n{meta}\n{indent}  ]')
        parts.append(f'{indent}  "tensors": [\n{tensors}\n{indent}  ]')
        return "{\n" + ",\n".join(parts) + f"\n{indent}}}"

    head = {k: v for k, v in record.items() if k not in ("output", "outputs")}
    items = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in head.items()]
    if "output" in record:
        items.append('  "output": ' + output(record["output"], "  "))
    if "outputs" in record:
        items.append('  "outputs": [\n' + ",\n".join("    " + output(o, "    ") for o in record["outputs"]) + "\n  ]")
    return "{\n" + ",\n".join(items) + "\n}\n"


def plan_runs() -> list:
    """(run name, input, options) of every run."""
    runs = []
    for preset in PRESETS:
        runs.append((f"tiny-{preset}", "tiny.gguf", {"preset": preset}))
        if preset != "COPY":
            runs.append((f"tiny-{preset}-imatrix", "tiny.gguf", {"preset": preset, "imatrix": "imatrix-tiny.gguf"}))
        runs.append((f"moe-{preset}-imatrix", "moe.gguf", {"preset": preset, "imatrix": "imatrix-moe.gguf"}))
    for preset in ["Q4_0", "Q5_0", "IQ2_XXS", "IQ3_XXS", "Q2_K_S", "IQ4_NL", "Q4_K_M"]:
        runs.append((f"tiny-{preset}-imatrix-dat", "tiny.gguf", {"preset": preset, "imatrix": "imatrix-tiny.dat"}))
    runs += [(f"thin80-{p}", "thin80.gguf", {"preset": p}) for p in THIN80]
    runs += [(f"moe-{p}", "moe.gguf", {"preset": p}) for p in MOE]
    runs += [(f"falcon-{p}", "falcon.gguf", {"preset": p}) for p in FALCON]
    split = "falcon-split-00001-of-00003.gguf"
    runs.append(("falcon-split-Q4_K_M", split, {"preset": "Q4_K_M"}))
    runs.append(("falcon-split-Q4_K_M-keep-split", split, {"preset": "Q4_K_M", "keep_split": True}))
    runs.append(("falcon-split-COPY-keep-split", split, {"preset": "COPY", "keep_split": True}))
    options = [
        ("tiny-Q4_K_M-pure", {"preset": "Q4_K_M", "pure": True}),
        ("tiny-Q4_K-pure", {"preset": "Q4_K", "pure": True}),
        ("tiny-Q6_K-leave-output", {"preset": "Q6_K", "leave_output_tensor": True}),
        ("tiny-Q4_K_M-output-type", {"preset": "Q4_K_M", "output_tensor_type": "q8_0"}),
        ("tiny-Q4_K_M-embedding-type", {"preset": "Q4_K_M", "token_embedding_type": "Q3_K"}),
        ("tiny-F16-both-types", {"preset": "F16", "output_tensor_type": "bf16", "token_embedding_type": "q8_0"}),
        ("tiny-Q4_K_M-tensor-types", {"preset": "Q4_K_M", "tensor_types": [
            ["ATTN_V", "q8_0"], [r"blk\.1\.ffn_(up|gate)", "iq4_nl"], ["ffn_down", "q5_0"], ["attn_q", "Q4_K"]]}),
        ("tiny-F16-tensor-types-ignored", {"preset": "F16", "tensor_types": [["attn_v", "q4_0"]]}),
        ("tiny-Q4_0-override-kv", {"preset": "Q4_0", "override_kv": [
            "general.name=str:renamed by override", "llama.block_count=int:2", "tensorfile.flag=bool:true",
            "tensorfile.scale=float:0.3", "tensorfile.negative=int:-7", "general.file_type=int:99"]}),
        ("tiny-Q4_K_S-imatrix-include", {"preset": "Q4_K_S", "imatrix": "imatrix-tiny.gguf",
                                          "include_weights": ["attn_v", "blk.1."]}),
        ("tiny-IQ4_XS-imatrix-exclude", {"preset": "IQ4_XS", "imatrix": "imatrix-tiny.dat",
                                          "exclude_weights": ["ffn_down", "output"]}),
        ("tiny-Q4_0-imatrix-exclude-all", {"preset": "Q4_0", "imatrix": "imatrix-tiny.gguf",
                                            "exclude_weights": ["blk", "output"]}),
        ("tiny-Q4_K_M-bad-size", {"preset": "Q4_K_M", "imatrix": "imatrix-bad-size.dat"}),
        ("tiny-Q8_0-nan", {"preset": "Q8_0", "imatrix": "imatrix-nan.dat"}),
        ("tiny-Q4_K_M-keep-split", {"preset": "Q4_K_M", "keep_split": True}),
        ("tiny-Q4_K_M-prune", {"preset": "Q4_K_M", "prune_layers": [0]}),
        ("thin80-Q4_K_M-imatrix-tiny", {"preset": "Q4_K_M", "imatrix": "imatrix-tiny.gguf"}),
        ("moe-Q4_K_M-tensor-types", {"preset": "Q4_K_M", "tensor_types": [["exps", "q8_0"], ["blk\\.[0-3]\\.", "q6_k"]]}),
        ("moe-Q2_K-output-type", {"preset": "Q2_K", "output_tensor_type": "q4_k", "imatrix": "imatrix-moe.gguf"}),
        ("prequant-Q4_K_M", {"preset": "Q4_K_M"}),
        ("prequant-Q4_K_M-allow", {"preset": "Q4_K_M", "allow_requantize": True}),
        ("prequant-Q8_0", {"preset": "Q8_0"}),
        ("prequant-Q8_0-pure-allow", {"preset": "Q8_0", "pure": True, "allow_requantize": True}),
        ("prequant-F16-allow", {"preset": "F16", "allow_requantize": True}),
        ("prequant-COPY", {"preset": "COPY"}),
        ("prequant-Q6_K-allow-keep-split", {"preset": "Q6_K", "allow_requantize": True, "keep_split": True}),
        ("prequant-Q8_0-leave-output", {"preset": "Q8_0", "leave_output_tensor": True}),
        ("empty-Q4_K_M-imatrix", {"preset": "Q4_K_M", "imatrix": "imatrix-empty.dat"}),
        ("empty-Q8_0", {"preset": "Q8_0"}),
    ]
    runs += [(name, name.split("-")[0] + ".gguf", o) for name, o in options]
    from fixturegen import gguf_quantize_archs  # here: it is imported by name, this may be __main__
    return runs + gguf_quantize_archs.plan_runs()


def generate(out: Path, tools: dict) -> None:
    tree = Path(tools["tree"])
    shutil.rmtree(out, ignore_errors=True)
    (out / "runs").mkdir(parents=True)
    shutil.rmtree(CACHE, ignore_errors=True)
    CACHE.mkdir(parents=True)
    tiny(out / "tiny.gguf", tree)
    thin80(out / "thin80.gguf")
    moe(out / "moe.gguf")
    falcon(out / "falcon.gguf")
    prequant(out / "prequant.gguf")
    empty(out / "empty.gguf")
    from fixturegen import gguf_quantize_archs
    for name, (make, _, _) in gguf_quantize_archs.models(add, write).items():
        make(out / name)
    for name in gguf_quantize_archs.imatrix_inputs():
        imatrix_moe(out / f"imatrix-{name}", out / name)
    imatrix_moe(out / "imatrix-moe.gguf", out / "moe.gguf")
    imatrix_dat(out / "imatrix-bad-size.dat", [("blk.0.attn_q.weight", 4, [1.0] * 128)], 4, "short.txt")
    imatrix_dat(out / "imatrix-empty.dat", [(f"blk.0.ffn_{t}_exps.weight", 3, weights(f"imatrix {t}", 8 * 256) ** 2)
                                            for t in ["up", "down"]], 3, "empty.txt")
    imatrix_dat(out / "imatrix-nan.dat", [("blk.1.attn_k.weight", 1, [1.0] * 255 + [float("nan")])], None, None)
    env = dict(os.environ, LD_LIBRARY_PATH=tools["lib_dir"])
    split = [tools["llama_gguf_split"], "--split", "--split-max-tensors", "24", str(out / "falcon.gguf"),
             str(out / "falcon-split")]
    subprocess.run(split, check=True, env=env, capture_output=True)
    for f in out.glob("*.gguf"):
        shutil.copy(f, CACHE / f.name)
    for f in out.glob("*.dat"):
        shutil.copy(f, CACHE / f.name)
    calibration(CACHE / "calibration.txt")
    for fmt, name in [("gguf", "imatrix-tiny.gguf"), ("dat", "imatrix-tiny.dat")]:
        args = [tools["llama_imatrix"], "-m", "tiny.gguf", "-f", "calibration.txt", "-o", name,
                "--output-format", fmt, "-c", "64", "-b", "64", "-t", "1", "--no-ppl", "--chunks", "6",
                "--seed", "1"]
        done = subprocess.run(args, cwd=CACHE, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"llama-imatrix failed:\n{done.stderr[-4000:]}")
        shutil.copy(CACHE / name, out / name)
    for name, input_name, options in plan_runs():
        run(tools, name, input_name, options, out / "runs")
    print(f"gguf-quantize: {len(list((out / 'runs').glob('*.json')))} runs recorded in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m fixturegen.gguf_quantize OUT TOOLS_JSON")
    generate(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()))
