"""One row of the quantize part (scripts/benchlib/quantize.py): ggml's own quantizer,
`ggml_quantize_chunk` of the `libggml-base` that `scripts/llama-tools` builds (the code
llama-quantize runs), on the float32 rows of a `.npy` file, without an importance matrix, on
one thread (the function is single-threaded), timed around the call alone. The output is
fresh memory (numpy's `empty`), as our kernel row's is: both pay its page faults. Run with
the gguf environment's Python (gguf-py names the type numbers), from `scripts/`:

  python -m benchlib.ggml_quantize LIBGGML_BASE TYPE ROWS.npy
"""

import ctypes
import json
import sys
import time

import numpy as np
from gguf import GGMLQuantizationType


def main() -> None:
    library, name, path = sys.argv[1:4]
    qtype = GGMLQuantizationType[name].value
    lib = ctypes.CDLL(library)
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    lib.ggml_quantize_init.restype = None
    lib.ggml_quantize_init.argtypes = [ctypes.c_int]
    rows = np.ascontiguousarray(np.load(path), dtype=np.float32)
    nrows, n_per_row = rows.shape
    lib.ggml_quantize_init(qtype)  # the grids some types search, made once (untimed)
    out = np.empty(lib.ggml_row_size(qtype, n_per_row) * nrows, dtype=np.uint8)
    start = time.perf_counter()
    written = lib.ggml_quantize_chunk(qtype, rows.ctypes.data, out.ctypes.data, 0, nrows, n_per_row, None)
    seconds = time.perf_counter() - start
    if written != out.nbytes:
        sys.exit(f"ggml_quantize_chunk wrote {written} bytes of {out.nbytes}")
    print(json.dumps({"seconds": seconds, "bytes": rows.nbytes, "tensors": 1, "out_bytes": int(written)}))


if __name__ == "__main__":
    main()
