"""One row of the quantize part (scripts/benchlib/quantize.py): gguf-py's numpy quantizer
(`gguf.quants.quantize`) on the float32 rows of a `.npy` file, timed from after the file is
read to the blocks made (one thread: numpy's element-wise work). Run with the gguf
environment's Python, from `scripts/`:

  python -m benchlib.ggufpy_quantize TYPE ROWS.npy
"""

import json
import sys
import time

import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import quantize


def main() -> None:
    qtype = GGMLQuantizationType[sys.argv[1]]
    rows = np.load(sys.argv[2])
    start = time.perf_counter()
    blocks = quantize(rows, qtype)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "bytes": rows.nbytes, "tensors": 1, "out_bytes": blocks.nbytes}))


if __name__ == "__main__":
    main()
