"""GGUF files as gguf-py's GGUFReader reads them: plain elements as arrays, GGML blocks as
bytes."""

from pathlib import Path

import numpy as np
from gguf import GGUFReader

from reading import Raw, Reading


def read(path: Path) -> Reading:
    reader = GGUFReader(path)
    entries = {}
    for t in reader.tensors:
        data = np.asarray(t.data)
        if t.tensor_type.name in ("F32", "F16", "F64", "I8", "I16", "I32", "I64"):
            entries[t.name] = data
        else:
            entries[t.name] = Raw(t.tensor_type.name, data.tobytes())
    return Reading("gguf", entries)
