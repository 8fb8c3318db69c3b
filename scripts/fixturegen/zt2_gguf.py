"""The GGUF file the zTensor 2 fixtures convert (`ztensor.convert`), written by gguf-py: plain
tensors, quantized ones (Q8_0 and Q4_0 by gguf-py's quantizer, Q4_K as random blocks with
small normal scales) and key/values of several types.

Runs in an environment with gguf-py and numpy (`tfvenv.GGUF_VENV`):
`python -m fixturegen.zt2_gguf OUT.gguf`. The data is deterministic.
"""

import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants


def main(path: str) -> None:
    w = gguf.GGUFWriter(path, "llama")
    w.add_uint32("test.u32", 7)
    w.add_int64("test.i64", -5)
    w.add_float32("test.f32", 1.5)
    w.add_bool("test.bool", True)
    w.add_string("test.text", "zTensor")
    w.add_array("test.array", [1, 2, 3])
    values = (np.arange(4 * 64, dtype=np.float32) / 37.0 - 3.0).reshape(4, 64)
    w.add_tensor("f32", values)
    w.add_tensor("f16", values.astype(np.float16))
    w.add_tensor("i32", np.arange(6, dtype=np.int32).reshape(2, 3))
    for name, kind in [("q8_0", T.Q8_0), ("q4_0", T.Q4_0)]:
        q = quants.quantize(values, kind)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=kind)
    # Q4_K: 2 blocks of 144 bytes whose f16 scales (bytes 0 and 2) are small normal values.
    rng = np.random.default_rng(7)
    blocks = rng.integers(0, 256, size=(2, 144), dtype=np.uint8)
    for at in (0, 2):
        blocks[:, at : at + 2] = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    w.add_tensor("q4_k", blocks, raw_shape=blocks.shape, raw_dtype=T.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1])
