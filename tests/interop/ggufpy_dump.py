"""Prints, as one line of JSON, what gguf-py's GGUFReader reads of a GGUF file: every key/value
(name, types, value as `ReaderField.contents()` gives it) and every tensor (name, type, shape,
offset, size, sha256 of the bytes `ReaderTensor.data` holds, which reads each one through).

Run by test_hf_gguf.py in a process of its own, with PYTHONPATH set to the gguf-py of llama.cpp's
tree (the one its convert_hf_to_gguf.py imports), never a pip `gguf`: it checks which one it got.

Usage: PYTHONPATH=TREE/gguf-py python ggufpy_dump.py FILE.gguf
"""

import hashlib
import json
import os
import sys
from pathlib import Path

import gguf
import numpy as np


def value(field) -> object:
    try:
        return field.contents()
    except UnicodeDecodeError:
        # Not UTF-8: kept comparable (and visible) rather than refused.
        return ["bytes", bytes(np.concatenate([np.asarray(field.parts[i]).reshape(-1).view(np.uint8)
                                               for i in field.data])).hex()]


def main() -> None:
    wanted = Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve()
    if Path(gguf.__file__).resolve().parent.parent != wanted:
        sys.exit(f"gguf imported from {gguf.__file__}, not from {wanted}")
    reader = gguf.GGUFReader(sys.argv[1])
    kv = []
    for field in reader.fields.values():
        types = [gguf.GGUFValueType(t).name for t in field.types]
        kv.append({"name": field.name, "types": types, "value": value(field)})
    tensors = []
    for t in reader.tensors:
        data = np.ascontiguousarray(t.data).view(np.uint8).reshape(-1)
        if data.size != t.n_bytes:
            sys.exit(f"{t.name}: {data.size} bytes read, {t.n_bytes} expected")
        tensors.append({"name": t.name, "type": gguf.GGMLQuantizationType(t.tensor_type).name,
                        "shape": [int(x) for x in t.shape], "offset": int(t.data_offset), "n_bytes": int(t.n_bytes),
                        "sha256": hashlib.sha256(data.tobytes()).hexdigest()})
    print(json.dumps({"alignment": int(reader.alignment), "data_offset": int(reader.data_offset), "kv": kv,
                      "tensors": tensors}))


if __name__ == "__main__":
    main()
