"""`load_file(..., dequantize=DTYPE)`: every quantized tensor of a GGUF file dequantized as
gguf-py's `dequantize` does (float32 bit for bit: the records of tests/fixtures/gguf/blocks.gguf
hold gguf-py's digests), then cast; numpy and torch; refused without it, naming the way."""

import hashlib
import json

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES

BLOCKS = FIXTURES / "gguf" / "blocks.gguf"


def without_q8_1(tmp_path):
    """blocks.gguf less its Q8_1 tensor (which neither ggml nor gguf-py dequantizes)."""
    out = tmp_path / "blocks.gguf"
    tensorfile.convert(str(BLOCKS), str(out), exclude="q8_1")
    return out


def test_every_quantized_tensor_is_gguf_py_s_float32(tmp_path):
    path = without_q8_1(tmp_path)
    record = {t["name"]: t for t in json.loads((FIXTURES / "gguf" / "blocks.gguf.expected.json").read_text())["tensors"]}
    with pytest.raises(tensorfile.Error, match="dequantize"):
        tensorfile.load_file(path)
    arrays = tensorfile.load_file(path, dequantize="float32")
    checked = 0
    for name, array in arrays.items():
        want = record[name].get("dequantized_sha256")
        assert array.dtype == np.float32 and array.flags.writeable, name
        if want is not None:
            assert hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest() == want, name
            checked += 1
    assert checked >= 10


def test_dequantized_in_another_dtype_and_into_torch(tmp_path):
    path = without_q8_1(tmp_path)
    f32 = tensorfile.load_file(path, dequantize="float32")
    f16 = tensorfile.load_file(path, dequantize="float16")
    for name, array in f16.items():
        assert array.dtype == np.float16
        np.testing.assert_array_equal(array, f32[name].astype(np.float16), err_msg=name)
    torch = pytest.importorskip("torch")
    bf16 = tensorfile.load_file(path, framework="torch", dequantize=torch.bfloat16)
    for name, t in bf16.items():
        assert t.dtype == torch.bfloat16
        assert torch.equal(t, torch.from_numpy(f32[name]).to(torch.bfloat16)), name
    with pytest.raises(tensorfile.UsageError):
        tensorfile.load_file(path, dequantize="int8")
    with pytest.raises(tensorfile.Error, match="q8_1"):
        tensorfile.load_file(BLOCKS, dequantize="float32")
