"""Quantized tensors from Python: their stored blocks as views of the map, their values
dequantized (and cast) by the library, and a clear refusal where blocks would pass for
values. Checked on the GGUF fixture gguf-py wrote (tests/fixtures/gguf/blocks.gguf)."""

from pathlib import Path

import numpy as np
import pytest

import tensorfile

BLOCKS = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "gguf" / "blocks.gguf"


def q8_0_reference(blocks: np.ndarray) -> np.ndarray:
    """Q8_0 by its formula, independently of the library: each 34-byte block is an f16 scale
    and 32 int8 codes; a value is the scale (widened to f32) times its code."""
    rows = blocks.reshape(-1, 34)
    scale = rows[:, :2].copy().view(np.float16).astype(np.float32)
    codes = rows[:, 2:].copy().view(np.int8).astype(np.float32)
    return (scale * codes).reshape(-1)


def test_a_quantized_tensor_is_its_blocks_and_dequantizes_to_float32():
    with tensorfile.open(str(BLOCKS)) as f:
        t = f["q8_0"]
        assert t.quantization == "ggml.q8_0" and t.layout == "ggml.q8_0"
        assert t.dtype == "float32" and t.shape == [2, 64]
        parts = t.parts()
        assert list(parts) == ["blocks"]
        blocks = parts["blocks"]
        assert blocks.dtype == np.uint8 and blocks.shape == (2 * 64 // 32 * 34,)
        assert blocks.flags.writeable and not t.parts(readonly=True)["blocks"].flags.writeable
        assert np.array_equal(t.parts(readonly=True)["blocks"], blocks)
        ((_, _, _, buffer),) = t.layout_parts(shared=True)
        assert buffer.is_mapped(), "the blocks are a view of the file's map"
        values = t.dequantize()
        assert values.dtype == np.float32 and values.shape == (2, 64)
        expected = q8_0_reference(blocks).reshape(2, 64)
        assert values.view(np.uint32).tobytes() == expected.view(np.uint32).tobytes()
        assert (t.dense().view(np.uint32) == values.view(np.uint32)).all()


def test_dequantize_casts_as_asked():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with tensorfile.open(str(BLOCKS)) as f:
        t = f["q8_0"]
        values = t.dequantize()
        as_bf16 = t.dequantize(dtype="bfloat16")
        assert as_bf16.dtype == np.dtype(ml_dtypes.bfloat16) and as_bf16.shape == (2, 64)
        # Finite values: round to nearest even, as numpy's ml_dtypes does too.
        assert as_bf16.view(np.uint16).tobytes() == values.astype(ml_dtypes.bfloat16).view(np.uint16).tobytes()
        assert t.dequantize(dtype="float16").dtype == np.float16
        with pytest.raises(tensorfile.UsageError, match="the target dtype is one of"):
            t.dequantize(dtype="int8")


def test_numpy_and_torch_refuse_blocks_saying_what_to_call():
    with tensorfile.open(str(BLOCKS)) as f:
        t = f["q4_k"]
        with pytest.raises(tensorfile.UnsupportedError, match=r"quantized \(ggml\.q4_k\): dequantize\(\)"):
            t.numpy()
        with pytest.raises(tensorfile.UnsupportedError, match="quantized"):
            np.asarray(t)


def test_a_type_without_a_reference_dequantization_is_carried_and_refuses_to_decode():
    with tensorfile.open(str(BLOCKS)) as f:
        # ggml has no dequantization of Q8_1 (its dequantize_row_q8_1 is left out).
        t = f["q8_1"]
        assert t.parts()["blocks"].nbytes == int(np.prod(t.shape)) // 32 * 40
        with pytest.raises(tensorfile.UnsupportedError, match="no reference dequantization"):
            t.dequantize()
        # Q8_K and Q1_0 dequantize as ggml's dequantize_row_q8_K / dequantize_row_q1_0 do.
        for name in ["q8_k", "q1_0"]:
            t = f[name]
            assert t.dequantize().shape == tuple(t.shape)
