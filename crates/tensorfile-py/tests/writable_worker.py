"""Run by test_writable.py in a fresh interpreter (a crash is then the test's failure, not
the runner's): writes to every array and torch tensor that each entry point of the package
hands out for the tensors of the files named on the command line, and checks that each write
lands in that array alone, never in the file nor in what is read next. Prints, as JSON, how
many writes each entry point took."""

import json
import sys
from collections import Counter

import numpy as np

import tensorfile

try:
    import torch
except ImportError:
    torch = None

writes = Counter()


def flip_numpy(array: np.ndarray, where: str) -> None:
    """Invert every byte of `array` in place and check the write landed."""
    assert array.flags.writeable, f"{where}: not writable"
    if array.size == 0:
        writes[where.split(":")[0]] += 1
        return
    flat = np.atleast_1d(array).view(np.uint8)
    before = flat.copy()
    flat ^= 0xFF
    assert np.array_equal(flat, before ^ 0xFF), f"{where}: the write did not land"
    writes[where.split(":")[0]] += 1


def flip_torch(t, where: str) -> None:
    if t.numel() == 0:
        writes[where.split(":")[0]] += 1
        return
    flat = t.reshape(-1).view(torch.uint8)
    before = flat.clone()
    flat.bitwise_not_()
    assert torch.equal(flat, before.bitwise_not()), f"{where}: the write did not land"
    if t.dtype.is_floating_point and t.dtype.itemsize >= 2:
        t.add_(1)  # what an optimizer step does
    writes[where.split(":")[0]] += 1


def check_file(path: str) -> None:
    with tensorfile.open(path) as f:
        names = list(f)
        plain = [n for n in names if not f[n].is_sparse and f[n].quantization is None]
        expected = {n: f[n].tobytes() for n in plain}
        for name in names:
            where = f"{path}: {name}"
            print(f"writing {where}", flush=True)
            t = f[name]
            if t.is_sparse:
                flip_numpy(t.dense(), f"dense: {where}")
                flip_numpy(t.sparse()["values"], f"sparse: {where}")
                for part in t.parts().values():
                    flip_numpy(part, f"parts: {where}")
                continue
            if t.quantization is not None:
                try:
                    values = t.dequantize()
                except tensorfile.UnsupportedError:
                    values = None  # a type with no reference dequantization: its blocks only
                if values is not None:
                    flip_numpy(values, f"dequantize: {where}")
                    flip_numpy(t.dequantize("float16"), f"dequantize: {where}")
                for part in t.parts().values():
                    flip_numpy(part, f"parts: {where}")
                continue
            try:
                array = f.get_tensor(name)
            except tensorfile.UnsupportedError:
                # Packed sub-byte elements (int4, float4...): no numpy type holds them; the
                # array interface gives the packed bytes.
                flip_numpy(np.asarray(f[name]), f"asarray: {where}")
                assert f[name].tobytes() == expected[name], f"{where}: a write reached the file's bytes"
                continue
            flip_numpy(array, f"get_tensor: {where}")
            flip_numpy(f[name].numpy(), f"numpy: {where}")
            flip_numpy(np.asarray(f[name]), f"asarray: {where}")
            if t.shape and t.shape[0] > 0:
                flip_numpy(f.get_slice(name)[0:1], f"get_slice: {where}")
            if torch is not None:
                flip_torch(f.get_tensor(name, framework="torch"), f"get_tensor_torch: {where}")
                flip_torch(f[name].torch(), f"torch: {where}")
                if t.shape and t.shape[0] > 0 and f[name].numpy().dtype.kind != "V":
                    flip_torch(f.get_slice(name, framework="torch")[0:1], f"get_slice_torch: {where}")
            # What is read next is the file's bytes, whatever was written before.
            assert f[name].tobytes() == expected[name], f"{where}: a write reached the file's bytes"
            readonly = f.get_tensor(name, readonly=True)
            assert not readonly.flags.writeable and readonly.tobytes() == expected[name], where
    if len(plain) < len(names) or any(f_dtype_packed(path, n) for n in plain):
        return  # load_file refuses sparse and quantized tensors (it names what decodes them)
    loaded = tensorfile.load_file(path)
    for name, array in loaded.items():
        flip_numpy(array, f"load_file: {path}: {name}")
    if torch is not None:
        for name, t in tensorfile.load_file(path, framework="torch").items():
            flip_torch(t, f"load_file_torch: {path}: {name}")
    # Arrays kept after the file is closed stay writable memory of their own.
    with tensorfile.open(path) as f:
        kept = {n: f.get_tensor(n) for n in plain}
    for name, array in kept.items():
        flip_numpy(array, f"after_close: {path}: {name}")
        assert array.tobytes() == bytes(b ^ 0xFF for b in expected[name]), f"{path}: {name}"


def f_dtype_packed(path: str, name: str) -> bool:
    """Whether the tensor's elements are packed below a byte (load_file refuses them)."""
    with tensorfile.open(path) as f:
        try:
            f[name].numpy(readonly=True)
        except tensorfile.UnsupportedError:
            return True
    return False


def main() -> None:
    for path in sys.argv[1:]:
        check_file(path)
    print(json.dumps({"torch": torch is not None, "writes": dict(writes)}))


if __name__ == "__main__":
    main()
