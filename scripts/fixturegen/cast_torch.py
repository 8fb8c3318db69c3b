"""Reference records for casting floating-point tensors (`tensorfile convert --dtype`): values of
each floating source dtype and what torch's `Tensor.to(target)` makes of them on the CPU, as raw
little-endian files under tests/fixtures/cast/ with one record, `record.json` (not an
`X.expected.json`: it records no one fixture file).

Inputs, per source dtype: for the 8-bit dtypes every bit pattern; for the wider ones special
values (zeros, infinities, NaNs with various signs and payloads, the source's own extremes)
and, for every target, its largest finite value, its smallest subnormal, its smallest normal,
the ties around them and around 1 (round-half-even cases), each nudged up and down, all with
both signs; then 4096 pseudo-random values spanning every exponent (the generator of
`common.lcg_u32`).

torch's CPU casts give NaNs other bits on its scalar path (0-d tensors, the last few elements
of a tensor, non-contiguous ones) than on its vectorized path, which every element of a large
contiguous tensor takes. The records are those of the vectorized path: each value is cast
within a run of `COPIES` copies of itself on one thread, and every copy must come out the same.

The record also gives, for `safetensors/dtypes.safetensors` (made before this module runs),
what each of its tensors becomes converted to each target dtype: floating tensors cast with
`.to()`, the others (integers, bool, complex) unchanged.
"""

import hashlib
import math
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open

from .common import SAFETENSORS_DTYPES, lcg_u32, pretty_json

# Every floating dtype tensorfile can cast from that this torch has, in record order.
SOURCES = [
    d
    for d in (
        "float64 float32 float16 bfloat16 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz float8_e8m0fnu"
    ).split()
    if hasattr(torch, d)
]
TARGETS = "float32 float16 bfloat16 float8_e4m3fn float8_e5m2".split()

# (bits, mantissa bits, exponent bias) of the IEEE-like dtypes whose special values are built.
IEEE = {
    "float64": (64, 52, 1023),
    "float32": (32, 23, 127),
    "float16": (16, 10, 15),
    "bfloat16": (16, 7, 127),
}

# Targets: (mantissa bits, smallest normal exponent, largest finite value).
TARGET_RANGE = {
    "float32": (23, -126, float(np.finfo(np.float32).max)),
    "float16": (10, -14, 65504.0),
    "bfloat16": (7, -126, 3.3895313892515355e38),
    "float8_e4m3fn": (3, -6, 448.0),
    "float8_e5m2": (2, -14, 57344.0),
}

SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
TORCH_SIGNED = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

RANDOM_COUNT = 4096
COPIES = 64


def generate(out: Path, safetensors_dir: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    record = {
        "producer": f"torch {torch.__version__.split('+')[0]}",
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "copies": COPIES,
        "inputs": [],
        "pairs": [],
    }
    for source in SOURCES:
        bits = inputs(source)
        x = torch.from_numpy(bits).view(getattr(torch, source))
        record["inputs"].append(raw_file(out, f"{source}.bin", source, bits.tobytes()))
        for target in TARGETS:
            if target == source:
                entry = {"from": source, "to": target, **record["inputs"][-1]}
            else:
                data = cast(x, target)
                entry = {"from": source, "to": target, **raw_file(out, f"{source}.to.{target}.bin", target, data)}
            del entry["dtype"]
            record["pairs"].append(entry)
    record["safetensors"] = converted(safetensors_dir / "dtypes.safetensors")
    path = out / "record.json"
    path.write_text(pretty_json(record) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(Path.cwd())}", flush=True)


def raw_file(out: Path, name: str, dtype: str, data: bytes) -> dict:
    (out / name).write_bytes(data)
    width = torch.tensor([], dtype=getattr(torch, dtype)).element_size()
    return {"dtype": dtype, "file": name, "count": len(data) // width, "sha256": hashlib.sha256(data).hexdigest()}


def cast(x: torch.Tensor, target: str) -> bytes:
    """`x.to(target)`, each element cast within `COPIES` copies of itself (the vectorized path);
    an error if the copies disagree."""
    y = x.repeat_interleave(COPIES).to(getattr(torch, target))
    codes = y.view(TORCH_SIGNED[y.element_size()]).reshape(-1, COPIES)
    if not bool((codes == codes[:, :1]).all()):
        raise SystemExit(f"{x.dtype} -> {target}: copies of one value cast to different bits")
    return codes[:, 0].contiguous().numpy().tobytes()


def inputs(source: str) -> np.ndarray:
    """The input bit patterns of `source`, as signed integers of its width."""
    if source not in IEEE:
        return np.arange(256, dtype=np.int64).astype(np.uint8).view(np.int8)
    width, _, _ = IEEE[source]
    unsigned = np.dtype(f"u{width // 8}")
    patterns = [*special_bits(source), *(to_bits(v, source) for v in ties())]
    patterns = patterns + [p | (1 << (width - 1)) for p in patterns]
    bulk = random_bits(source)
    return np.concatenate([np.array(patterns, dtype=np.uint64).astype(unsigned), bulk]).view(SIGNED[width // 8])


def special_bits(source: str) -> list[int]:
    """Positive bit patterns: zero, the source's extremes, infinity, NaNs of several payloads."""
    width, m, bias = IEEE[source]
    exp_all = ((1 << (width - 1 - m)) - 1) << m
    mant_all = (1 << m) - 1
    quiet = 1 << (m - 1)
    return [
        0,
        1,  # smallest subnormal
        mant_all,  # largest subnormal
        1 << m,  # smallest normal
        bias << m,  # 1
        exp_all - 1,  # largest finite
        exp_all,  # infinity
        exp_all | quiet,  # quiet NaN
        exp_all | 1,  # signaling NaN, smallest payload
        exp_all | (quiet >> 1),  # signaling NaN, high payload
        exp_all | mant_all,  # every bit of the payload
        exp_all | quiet | (0x5A5A5A5A5A5A5A5A & (quiet - 1)),  # quiet NaN, mixed payload
    ]


def ties() -> list[float]:
    """Values at and around every target's rounding boundaries (positive; float64)."""
    values = [0.1, 1 / 3, math.pi, 1e-3, 1e3, 65536.0, 2.0**-149, 2.0**-150, 3 * 2.0**-150]
    for m, emin, top in TARGET_RANGE.values():
        top_ulp = 2.0 ** (math.floor(math.log2(top)) - m)
        sub = 2.0 ** (emin - m)
        boundaries = [
            top - top_ulp / 2,  # tie between the two largest finite values
            top + top_ulp / 2,  # tie between the largest finite value and overflow
            sub / 2,  # tie between 0 and the smallest subnormal
            sub * 1.5,  # tie between the two smallest subnormals
            2.0**emin - sub / 2,  # tie between the largest subnormal and the smallest normal
            1 + 2.0 ** -(m + 1),  # tie rounding down to 1 (even)
            1 + 3 * 2.0 ** -(m + 1),  # tie rounding up (even)
        ]
        values += [top, top + top_ulp, 2 * top, sub, sub / 4, sub * 2.5, 2.0**emin, 2.0**emin * 1.5]
        for b in boundaries:
            values.append(b)
            for k in (5, 9, 13, 20, 27, 40):
                values += [b * (1 + 2.0**-k), b * (1 - 2.0**-k)]
    return values


def to_bits(value: float, source: str) -> int:
    """The bit pattern of `value` rounded to `source` (to nearest, ties to even; overflow to
    infinity)."""
    if source == "bfloat16":
        # float64 -> float32 -> bfloat16 may round twice: inputs need not be exact, only valid.
        t = torch.tensor([value], dtype=torch.float64).to(torch.float32).to(torch.bfloat16)
        return int(t.view(torch.int16).item()) & 0xFFFF
    with np.errstate(over="ignore"):
        a = np.array([value], dtype=np.float64).astype(source)
    return int(a.view(f"u{a.itemsize}")[0])


def random_bits(source: str) -> np.ndarray:
    """`RANDOM_COUNT` bit patterns of `source`: half of them every bit random (every exponent,
    NaNs and infinities among them), half with an exponent where the targets' ranges are
    (wider sources: around float32's, float16's and the float8s')."""
    width, m, bias = IEEE[source]
    draws = lcg_u32(f"cast.{source}", 3 * RANDOM_COUNT).astype(object)
    exp_bits = width - 1 - m
    out = []
    for i in range(RANDOM_COUNT):
        a, b, c = (int(v) for v in draws[3 * i : 3 * i + 3])
        full = ((a << 32) | b) & ((1 << width) - 1)
        if i % 2 == 0:
            out.append(full)
            continue
        low, high = (-160, 140) if source == "float64" else (-30, 20)
        exponent = low + c % (high - low + 1)
        biased = min(max(exponent + bias, 0), (1 << exp_bits) - 2)
        sign = c >> 31
        out.append((sign << (width - 1)) | (biased << m) | (full & ((1 << m) - 1)))
    return np.array(out, dtype=np.uint64).astype(f"u{width // 8}")


def converted(path: Path) -> dict:
    """What each tensor of the safetensors file `path` becomes converted to each target."""
    with safe_open(str(path), framework="pt") as f:
        names = list(f.offset_keys())
        tensors = {n: f.get_tensor(n) for n in names}
        dtypes = {n: SAFETENSORS_DTYPES[f.get_slice(n).get_dtype()] for n in names}
    by_target = {}
    for target in TARGETS:
        rows = []
        for name in names:
            t = tensors[name]
            if t.dtype.is_floating_point:
                t = t.to(getattr(torch, target))
                dtype = target
            else:
                dtype = dtypes[name]
            data = t.reshape(-1).view(torch.uint8).numpy().tobytes()
            rows.append({"name": name, "dtype": dtype, "sha256": hashlib.sha256(data).hexdigest()})
        by_target[target] = rows
    return {"file": f"{path.parent.name}/{path.name}", "converted": by_target}
