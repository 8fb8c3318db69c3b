"""The workloads of the quantized part of the benchmark (`scripts/bench --only quant`), made
here (nothing downloaded) into the benchmark's cache folder:

  gguf-llama   Llama-3.2-1B's tensor shapes as a GGUF in a mix like llama.cpp's Q4_K_M
               (attention q/k/o and MLP gate/up Q4_K; v, down and the embedding Q6_K; norms
               F32): about 0.84 GB (--quick: 2 layers, a 32,000-word vocabulary)
  llama-bf16   the same Llama-3.2-1B shapes in bfloat16 (norms F32), normal(0, 0.02), with the
               llama key/values llama-quantize reads: the 2.47 GB input both quantizers are
               timed on (the quantize part, `quantize.py`; --quick: 2 layers, 32,000 words)
  ggml-types   one 2048 x 3840 tensor (30 MiB as float32, under glibc's largest mmap
               threshold; --quick: 512 x 1024) of every ggml type gguf-py dequantizes, named
               after its type

Written by gguf-py's GGUFWriter. Types gguf-py quantizes (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0,
TQ2_0, MXFP4) are normal(0, 0.02) values quantized by `gguf.quants.quantize`; the others are
random blocks whose scales are set to small normal half floats (E4M3 bytes of 1/8 to 1 for
NVFP4), so that they decode to finite values as a real file's would.

Run with the gguf environment's interpreter (tfvenv.GGUF_VENV), from `scripts/`:
`python -m benchlib.quantwork gguf-llama|llama-bf16|ggml-types OUT [--quick]`; the zTensor 2 copies are
made by `ztensor.convert` in the zTensor 2 environment (`quant.py`).
"""

import sys
from pathlib import Path

import numpy as np

# Offsets of the fp16 scale fields in one block, for the types filled with random blocks.
F16_SCALES = {
    "Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
    "IQ2_XXS": (0,), "IQ2_XS": (0,), "IQ2_S": (0,), "IQ3_XXS": (0,), "IQ3_S": (0,),
    "IQ1_S": (0,), "IQ4_NL": (0,), "IQ4_XS": (0,),
}
QUANTIZED_BY_GGUF_PY = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4")
# Every type gguf-py 0.19 dequantizes, in ggml's order.
TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS",
         "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "IQ1_M", "TQ1_0", "TQ2_0",
         "MXFP4", "NVFP4")
# (elements, bytes) of one block of each type (ggml's type table).
BLOCK = {
    "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34),
    "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
    "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74), "IQ3_XXS": (256, 98), "IQ1_S": (256, 50), "IQ4_NL": (32, 18),
    "IQ3_S": (256, 110), "IQ2_S": (256, 82), "IQ4_XS": (256, 136), "IQ1_M": (256, 56), "TQ1_0": (256, 54),
    "TQ2_0": (256, 66), "MXFP4": (32, 17), "NVFP4": (64, 36),
}


def bits_per_element(kind: str) -> float:
    elements, nbytes = BLOCK[kind]
    return nbytes * 8 / elements


def small_halves(rng, n: int) -> np.ndarray:
    """`n` half floats between 2^-13 and 2^-7 (normal, positive), as their bits."""
    return (2.0 ** rng.uniform(-13, -7, n)).astype(np.float16).view(np.uint16)


def blocks(rng, kind: str, rows: int, cols: int) -> np.ndarray:
    """A `rows` x `cols` tensor of ggml type `kind` as its stored bytes (rows of blocks)."""
    import gguf

    qtype = gguf.GGMLQuantizationType[kind]
    per_block, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    if kind in QUANTIZED_BY_GGUF_PY:
        out = np.empty((rows, cols // per_block * block_bytes), np.uint8)
        step = max(1, (16 << 20) // (cols * 4))  # 16 MiB of floats at a time
        for r in range(0, rows, step):
            values = rng.standard_normal((min(step, rows - r), cols), dtype=np.float32) * 0.02
            out[r:r + step] = gguf.quants.quantize(values, qtype)
        return out
    n = rows * cols // per_block
    raw = rng.integers(0, 256, (n, block_bytes), dtype=np.uint8)
    if kind in F16_SCALES:
        for at in F16_SCALES[kind]:
            raw[:, at:at + 2] = small_halves(rng, n).reshape(n, 1).view(np.uint8)
    elif kind == "IQ1_M":
        # Its fp16 scale is the top nibbles of the four u16 at bytes 48..56, lowest first.
        d = small_halves(rng, n).astype(np.uint16)
        scales = raw[:, 48:56].copy().view("<u2")
        for k in range(4):
            scales[:, k] = (scales[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
        raw[:, 48:56] = scales.view(np.uint8)
    elif kind == "NVFP4":
        raw[:, 0:4] = rng.integers(0x30, 0x38, (n, 4), dtype=np.uint8)  # UE4M3: 1 to 1.875
    else:
        raise SystemExit(f"no recipe for {kind}")
    return raw.reshape(rows, -1)


def llama_tensors(quick: bool) -> list:
    """(name, ggml type, (rows, columns)) of a Llama-3.2-1B in a Q4_K_M-like mix, GGUF names."""
    hidden, inter, kv, vocab, layers = 2048, 8192, 512, 128256, 16
    if quick:
        vocab, layers = 32000, 2
    out = [("token_embd.weight", "Q6_K", (vocab, hidden))]
    for i in range(layers):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", "F32", (1, hidden)),
            (p + "attn_q.weight", "Q4_K", (hidden, hidden)),
            (p + "attn_k.weight", "Q4_K", (kv, hidden)),
            (p + "attn_v.weight", "Q6_K", (kv, hidden)),
            (p + "attn_output.weight", "Q4_K", (hidden, hidden)),
            (p + "ffn_norm.weight", "F32", (1, hidden)),
            (p + "ffn_gate.weight", "Q4_K", (inter, hidden)),
            (p + "ffn_up.weight", "Q4_K", (inter, hidden)),
            (p + "ffn_down.weight", "Q6_K", (hidden, inter)),
        ]
    out.append(("output_norm.weight", "F32", (1, hidden)))
    return out


def write_gguf(path: Path, tensors: list, rng) -> None:
    """A GGUF of `tensors` ((name, type, (rows, cols))), through a temporary name."""
    import gguf

    tmp = path.with_name(path.name + ".partial")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_block_count(sum(1 for n, _, _ in tensors if n.endswith("attn_q.weight")))
    w.add_context_length(131072)
    for name, kind, (rows, cols) in tensors:
        if kind == "F32":
            w.add_tensor(name, np.ones(cols, np.float32))
        else:
            b = blocks(rng, kind, rows, cols)
            w.add_tensor(name, b, raw_shape=b.shape, raw_dtype=gguf.GGMLQuantizationType[kind])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.rename(path)


def write_llama_bf16(path: Path, quick: bool, rng) -> None:
    """Llama-3.2-1B's tensors in bfloat16 (norms F32) with its hyperparameters as keys."""
    import gguf

    V = gguf.GGUFValueType
    tensors = llama_tensors(quick)
    tmp = path.with_name(path.name + ".partial")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_key_value("general.name", "llama-1b (tensorfile benchmark)", V.STRING)
    w.add_key_value("general.file_type", 32, V.UINT32)  # MOSTLY_BF16
    for key, value in (("block_count", sum(1 for n, _, _ in tensors if n.endswith("attn_q.weight"))),
                       ("context_length", 131072), ("embedding_length", 2048), ("feed_forward_length", 8192),
                       ("attention.head_count", 32), ("attention.head_count_kv", 8), ("rope.dimension_count", 64)):
        w.add_key_value(f"llama.{key}", value, V.UINT32)
    w.add_key_value("llama.attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32)
    w.add_key_value("llama.rope.freq_base", 500000.0, V.FLOAT32)
    for name, kind, (rows, cols) in tensors:
        if kind == "F32":
            w.add_tensor(name, np.ones(cols, np.float32))
        else:
            bits = ((rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).view(np.uint32) >> 16)
            w.add_tensor(name, bits.astype(np.uint16), raw_shape=[rows, cols], raw_dtype=gguf.GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.rename(path)


def main() -> None:
    what, out = sys.argv[1], Path(sys.argv[2])
    quick = "--quick" in sys.argv[3:]
    rng = np.random.default_rng(7)
    if what == "gguf-llama":
        write_gguf(out, llama_tensors(quick), rng)
    elif what == "llama-bf16":
        write_llama_bf16(out, quick, rng)
    elif what == "ggml-types":
        rows, cols = (512, 1024) if quick else (2048, 3840)
        write_gguf(out, [(kind.lower(), kind, (rows, cols)) for kind in TYPES], rng)
    else:
        raise SystemExit(f"unknown workload {what}")


if __name__ == "__main__":
    main()
