"""Pairs of files for `tensorfile diff` and numpy's measure of how far their tensors are apart
(tests/fixtures/diff/), in float64:

  fp32.a.safetensors / fp32.b.safetensors   float32 tensors and a perturbed copy (numpy),
                                            with NaN, infinities and zeros facing each other
  bf16.a.safetensors / bf16.b.safetensors   torch's bfloat16 of float32 tensors (Tensor.to)
                                            against the float32 tensors themselves
  quant.a.gguf / quant.b.safetensors        gguf-py's Q8_0 quantization of float16 tensors,
                                            and Q4_K blocks, against float16 sources (the Q4_K
                                            source is gguf-py's dequantization, perturbed)
  records.json                              for each pair and tolerance, each tensor's metrics
                                            as numpy computes them (quantized tensors
                                            dequantized by `gguf.quants.dequantize`)

The metrics (b, from the second file, is the reference; pairs with a NaN enter none of the
four sums or maxima; cosine and NMSE are over the pairs where both are finite):
  max_abs_diff    max |a - b|, equal infinities 0
  max_rel_diff    max |a - b| / |b|: 0 where a = b, infinity where b = 0 or either is infinite
  cosine          sum(ab) / (|a| |b|): 1 when both are all zeros, 0 when one is
  nmse            sum((a - b)^2) / sum(b^2): 0 when a = b, infinity when only b is all zeros
  over_tolerance  not numpy.isclose(a, b, rtol, atol, equal_nan=True)
  nan_mismatches  pairs where exactly one side is NaN

Run alone (inside an environment with numpy, torch, safetensors and gguf):
  PYTHONPATH=scripts python -m fixturegen.diff_records tests/fixtures/diff
"""

import json
import sys
from pathlib import Path

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import save_file as save_torch

from .common import lcg_u32, pretty_json, sample

# numpy's default tolerance, and a looser one under which some tensors pass.
TOLERANCES = [(1e-8, 1e-5), (1e-3, 1e-3), (0.05, 0.01)]


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    pairs = [fp32_pair(out), bf16_pair(out), quant_pair(out)]
    producer = f"numpy {np.__version__}, torch {torch.__version__}, gguf-py {version()}"
    doc = {"producer": producer, "pairs": pairs}
    (out / "records.json").write_text(pretty_json(doc) + "\n", encoding="utf-8")
    print(f"wrote {out / 'records.json'}", flush=True)


def noise(name: str, shape: tuple, scale: float) -> np.ndarray:
    """Deterministic noise uniform in [-scale, scale)."""
    count = int(np.prod(shape))
    return (lcg_u32(name, count) / float(0xFFFFFFFF) * 2.0 - 1.0).reshape(shape) * scale


def fp32_pair(out: Path) -> dict:
    big = sample("big", np.dtype("float32"), (160, 128))
    # Mostly tiny changes (some within numpy's tolerance), one in a hundred larger.
    step = noise("big.noise", big.shape, 1e-4) * np.abs(big)
    step[::10, ::10] *= 300.0
    nan, inf = np.float32("nan"), np.float32("inf")
    a = {
        "big": big,
        "specials": np.array([nan, nan, 1, inf, inf, 1, 0, 0, 2, -inf, 5, -0.0, 7], dtype=np.float32),
        "zeros_in_a": np.zeros((4, 3), dtype=np.float32),
        "same": sample("same", np.dtype("float32"), (5,)),
        "small": sample("small", np.dtype("float32"), (3, 5)),
    }
    b = {
        "big": (big.astype(np.float64) + step).astype(np.float32),
        "specials": np.array([nan, 1, nan, inf, 1, inf, 0, 3, 0, inf, 5.00001, 0.0, 7.0001], dtype=np.float32),
        "zeros_in_a": sample("zeros_in_a", np.dtype("float32"), (4, 3)),
        "same": a["same"],
        "small": a["small"] + np.float32(0.0078125),
    }
    save_numpy(a, str(out / "fp32.a.safetensors"))
    save_numpy(b, str(out / "fp32.b.safetensors"))
    return pair_record("fp32.a.safetensors", "fp32.b.safetensors", a, b)


def bf16_pair(out: Path) -> dict:
    nan, inf = float("nan"), float("inf")
    source = {
        "big": torch.from_numpy(sample("bf16.big", np.dtype("float32"), (128, 160))),
        "specials": torch.tensor([nan, inf, -inf, 0.0, -0.0, 1e-40, 3.0, 1.00390625, 65504.0], dtype=torch.float32),
    }
    a = {k: v.to(torch.bfloat16) for k, v in source.items()}
    save_torch(a, str(out / "bf16.a.safetensors"))
    save_torch(source, str(out / "bf16.b.safetensors"))
    values_a = {k: v.to(torch.float64).numpy() for k, v in a.items()}
    values_b = {k: v.numpy() for k, v in source.items()}
    return pair_record("bf16.a.safetensors", "bf16.b.safetensors", values_a, values_b)


def quant_pair(out: Path) -> dict:
    w = GGUFWriter(out / "quant.a.gguf", "tensorfile-test")
    source16 = sample("q8_0.source", np.dtype("float16"), (8, 64))
    q8 = gguf.quants.quantize(source16.astype(np.float32), Q.Q8_0)
    w.add_tensor("q8_0", q8, raw_shape=q8.shape, raw_dtype=Q.Q8_0)
    # gguf-py cannot quantize Q4_K: random blocks with a small fp16 scale (bytes 0..2, ggml's
    # block_q4_K) and min scale (2..4), and as the source their values, perturbed.
    block, size = gguf.GGML_QUANT_SIZES[Q.Q4_K]
    rows, per_row = 4, 2
    q4 = (lcg_u32("q4_k.blocks", rows * per_row * size) & 0xFF).astype(np.uint8).reshape(rows, per_row * size)
    for r in range(rows):
        for k in range(per_row):
            at = k * size
            q4[r, at : at + 2] = np.frombuffer(np.float16(0.0125).tobytes(), dtype=np.uint8)
            q4[r, at + 2 : at + 4] = np.frombuffer(np.float16(0.00625).tobytes(), dtype=np.uint8)
    w.add_tensor("q4_k", q4, raw_shape=q4.shape, raw_dtype=Q.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    dq8 = gguf.quants.dequantize(q8, Q.Q8_0)
    dq4 = gguf.quants.dequantize(q4, Q.Q4_K)
    assert dq4.shape == (rows, per_row * block), dq4.shape
    source4 = (dq4.astype(np.float64) + noise("q4_k.noise", dq4.shape, 0.02)).astype(np.float16)
    b = {"q8_0": source16, "q4_k": source4}
    save_numpy(b, str(out / "quant.b.safetensors"))
    return pair_record("quant.a.gguf", "quant.b.safetensors", {"q8_0": dq8, "q4_k": dq4}, b)


def pair_record(file_a: str, file_b: str, a: dict, b: dict) -> dict:
    runs = []
    for atol, rtol in TOLERANCES:
        tensors = {name: metrics(a[name], b[name], atol, rtol) for name in a if not same(a[name], b[name])}
        runs.append({"atol": atol, "rtol": rtol, "tensors": tensors})
    identical = [name for name in a if same(a[name], b[name])]
    return {"a": file_a, "b": file_b, "identical": identical, "runs": runs}


def same(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.tobytes() == y.tobytes()


def metrics(x: np.ndarray, y: np.ndarray, atol: float, rtol: float) -> dict:
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    keep = ~(nan_a | nan_b)
    ak, bk = a[keep], b[keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(ak == bk, 0.0, np.abs(ak - bk))
        rel = np.where(d == 0, 0.0, np.where(np.isfinite(d) & (bk != 0), d / np.abs(bk), np.inf))
    finite = np.isfinite(ak) & np.isfinite(bk)
    af, bf = ak[finite], bk[finite]
    aa, bb = float(np.sum(af * af)), float(np.sum(bf * bf))
    err = float(np.sum((af - bf) ** 2))
    if aa == 0 and bb == 0:
        cosine = 1.0
    elif aa == 0 or bb == 0:
        cosine = 0.0
    else:
        cosine = float(np.sum(af * bf)) / (np.sqrt(aa) * np.sqrt(bb))
    nmse = 0.0 if err == 0 else (np.inf if bb == 0 else err / bb)
    return {
        "compared": int(a.size),
        "max_abs_diff": number(d.max() if d.size else 0.0),
        "max_rel_diff": number(rel.max() if rel.size else 0.0),
        "cosine": number(cosine),
        "nmse": number(nmse),
        "over_tolerance": int(np.count_nonzero(~close)),
        "nan_mismatches": int(np.count_nonzero(nan_a ^ nan_b)),
    }


def number(v) -> float | str:
    """JSON has no infinity: "inf", as tensorfile writes it."""
    v = float(v)
    return "inf" if v == np.inf else v


def version() -> str:
    from importlib.metadata import version as v

    return v("gguf")


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
