"""Reference dequantizations of ggml's block types, made by gguf-py's `gguf.quants`.

For every quantized type gguf-py can dequantize, `<TYPE>.blocks` holds some blocks and
`<TYPE>.f32` what `gguf.quants.dequantize` makes of them (little-endian float32), with one
record, `quants.expected.json`, of each type's shape and the digests of both files.

The blocks of a type gguf-py can quantize come from quantizing random floats with gguf-py;
the others are random bytes whose scale fields hold small normal float16 values. Every type
then gets a few more blocks whose scale fields hold special values (infinities, NaNs with
payloads, subnormals, signed zeros; for the byte scales of MXFP4 and NVFP4 their extremes),
copies of the first block with only those fields changed.

Runs in the gguf environment (gguf-py and numpy only): `python -m fixturegen.gguf_quants OUT`.
The data is deterministic: a generator seeded by each type's name.
"""

import hashlib
import json
import sys
import zlib
from importlib.metadata import version
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGML_QUANT_SIZES
from gguf import quants

RECORD = "quants.expected.json"

# Blocks of random content per type, by the elements a block holds (the special blocks come on
# top): enough to exercise every position of a block, small enough to commit.
RANDOM_BLOCKS = {32: 32, 64: 16, 256: 8}

# Where each type's scale fields sit in its block, and what they are: `f16` (one float16 at
# that byte offset), `iq1m` (IQ1_M's float16 spread over the top nibbles of the four
# little-endian u16 at that offset), `e8m0` (MXFP4's exponent byte), `ue4m3` (NVFP4's four
# scale bytes from that offset). From ggml's block layouts.
SCALES = {
    "Q4_0": [("f16", 0)],
    "Q4_1": [("f16", 0), ("f16", 2)],
    "Q5_0": [("f16", 0)],
    "Q5_1": [("f16", 0), ("f16", 2)],
    "Q8_0": [("f16", 0)],
    "Q2_K": [("f16", 80), ("f16", 82)],
    "Q3_K": [("f16", 108)],
    "Q4_K": [("f16", 0), ("f16", 2)],
    "Q5_K": [("f16", 0), ("f16", 2)],
    "Q6_K": [("f16", 208)],
    "IQ2_XXS": [("f16", 0)],
    "IQ2_XS": [("f16", 0)],
    "IQ2_S": [("f16", 0)],
    "IQ3_XXS": [("f16", 0)],
    "IQ3_S": [("f16", 0)],
    "IQ1_S": [("f16", 0)],
    "IQ1_M": [("iq1m", 48)],
    "IQ4_NL": [("f16", 0)],
    "IQ4_XS": [("f16", 0)],
    "TQ1_0": [("f16", 52)],
    "TQ2_0": [("f16", 64)],
    "MXFP4": [("e8m0", 0)],
    "NVFP4": [("ue4m3", 0)],
}

# float16 bit patterns: +inf, -inf, quiet NaN, negative quiet NaN with a payload, a signalling
# NaN, the smallest subnormal, the largest negative subnormal, -0, +0, the largest finite.
F16_SPECIAL = [0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7C01, 0x0001, 0x83FF, 0x8000, 0x0000, 0x7BFF]
# Pairs for types with two scales (d and a minimum): NaNs meeting NaNs, infinities meeting
# infinities, and the odd ones against ordinary values.
F16_SPECIAL_PAIRS = [
    (0x7C00, 0x7E00),
    (0x7E01, 0xFE02),
    (0xFE02, 0x7E01),
    (0x7C00, 0x7C00),
    (0xFC00, 0x7C00),
    (0x8000, 0xFC00),
    (0x7C01, 0x0000),
    (0x0001, 0x8001),
    (0x7BFF, 0xFBFF),
    (0x3C00, 0x7E00),
]
E8M0_SPECIAL = [0x00, 0x01, 0x02, 0x7F, 0xFE, 0xFF]
UE4M3_SPECIAL = [(0x00, 0x7F, 0xFF, 0x80), (0x01, 0x07, 0x08, 0x7E), (0xFE, 0x81, 0x38, 0x40)]


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    records = []
    for qtype in dequantized_types():
        name = qtype.name
        if name not in SCALES:
            sys.exit(f"gguf-py dequantizes {name}, whose scale fields this generator does not know")
        blocks, shape = make_blocks(qtype)
        with np.errstate(all="ignore"):
            values = quants.dequantize(blocks.reshape(shape[0], -1), qtype)
        values = np.ascontiguousarray(values, dtype="<f4")
        assert values.shape == shape, (name, values.shape, shape)
        raw, f32 = blocks.tobytes(), values.tobytes()
        (out / f"{name}.blocks").write_bytes(raw)
        (out / f"{name}.f32").write_bytes(f32)
        records.append(
            {
                "type": name,
                "shape": list(shape),
                "blocks_sha256": hashlib.sha256(raw).hexdigest(),
                "f32_sha256": hashlib.sha256(f32).hexdigest(),
            }
        )
    producer = f"gguf {version('gguf')} (numpy {np.__version__})"
    # One line per type, so that a regenerated set reads well in a diff.
    lines = ",\n".join(f"    {json.dumps(r)}" for r in records)
    text = f'{{\n  "producer": {json.dumps(producer)},\n  "types": [\n{lines}\n  ]\n}}\n'
    (out / RECORD).write_text(text, encoding="utf-8")
    print(f"wrote {len(records)} quantized types to {out}", flush=True)


def dequantized_types() -> list:
    """The block-quantized types `gguf.quants.dequantize` knows, in the order of their numbers."""
    known = set(quants._type_traits) | {GGMLQuantizationType.F32, GGMLQuantizationType.F16}
    plain = {GGMLQuantizationType.F32, GGMLQuantizationType.F16, GGMLQuantizationType.BF16}
    return sorted((t for t in known if t not in plain), key=lambda t: t.value)


def make_blocks(qtype) -> tuple:
    """The blocks of one type, as an (n, type_size) uint8 array, and the float shape they hold."""
    block_elems, type_size = GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(zlib.crc32(qtype.name.encode()))
    count = RANDOM_BLOCKS[block_elems]
    try:
        floats = (rng.standard_normal(count * block_elems) * 2.0).astype(np.float32)
        # One block of zeros: the quantizers' zero-scale path.
        floats[:block_elems] = 0.0
        random = quants.quantize(floats.reshape(1, -1), qtype).reshape(count, type_size)
    except NotImplementedError:
        random = rng.integers(0, 256, size=(count, type_size), dtype=np.uint8)
        for kind, offset in SCALES[qtype.name]:
            for block in random:
                set_scale(block, kind, offset, rng)
    special = [patched(random[-1], qtype.name, values) for values in special_values(qtype.name)]
    blocks = np.ascontiguousarray(np.concatenate([random, np.stack(special)]))
    total = blocks.shape[0]
    per_row = 4 if total % 4 == 0 else 2 if total % 2 == 0 else 1
    return blocks, (total // per_row, per_row * block_elems)


def set_scale(block: np.ndarray, kind: str, offset: int, rng) -> None:
    """Gives a random block a sane scale: a small normal float16, or a middling byte scale."""
    if kind in ("f16", "iq1m"):
        value = np.float16(rng.uniform(0.001, 0.1) * rng.choice([-1.0, 1.0]))
        put_scale(block, kind, offset, int(value.view(np.uint16)))
    elif kind == "e8m0":
        block[offset] = rng.integers(110, 135)
    else:
        block[offset : offset + 4] = rng.integers(0x20, 0x60, size=4)


def special_values(name: str) -> list:
    fields = SCALES[name]
    kind = fields[0][0]
    if kind == "e8m0":
        return [(v,) for v in E8M0_SPECIAL]
    if kind == "ue4m3":
        return [(v,) for v in UE4M3_SPECIAL]
    if len(fields) == 2:
        return F16_SPECIAL_PAIRS
    return [(v,) for v in F16_SPECIAL]


def patched(block: np.ndarray, name: str, values: tuple) -> np.ndarray:
    block = block.copy()
    for (kind, offset), value in zip(SCALES[name], values):
        put_scale(block, kind, offset, value)
    return block


def put_scale(block: np.ndarray, kind: str, offset: int, value) -> None:
    if kind == "f16":
        block[offset : offset + 2] = np.array([value], dtype="<u2").view(np.uint8)
    elif kind == "iq1m":
        words = block[offset : offset + 8].copy().view("<u2")
        for k in range(4):
            words[k] = (int(words[k]) & 0x0FFF) | (((value >> (4 * k)) & 0xF) << 12)
        block[offset : offset + 8] = words.view(np.uint8)
    elif kind == "e8m0":
        block[offset] = value
    else:
        block[offset : offset + 4] = value


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m fixturegen.gguf_quants OUT")
    generate(Path(sys.argv[1]))
