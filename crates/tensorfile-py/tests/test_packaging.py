"""How the package is built and what it brings with it: one abi3 wheel for CPython 3.9 and
later, ml_dtypes a dependency (not an extra), so bfloat16 tensors load as bfloat16 arrays out of the box."""

import json
import re
import struct
from importlib.metadata import distribution

import numpy as np

import tensorfile


def _name(requirement: str) -> str:
    """A requirement's project name, normalised (PEP 503)."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def test_wheel_is_abi3():
    wheel = distribution("tensorfile").read_text("WHEEL")
    assert wheel is not None, "no WHEEL metadata: the package was not installed from a wheel"
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    assert tags, wheel
    for tag in tags:
        python, abi, _platform = tag.split("-")
        assert abi == "abi3", f"{tag}: not a stable-ABI wheel"
        assert python.startswith("cp3"), tag


def test_requires_python_is_3_9():
    # The stable ABI of 3.9 (abi3-py39): numpy views through the array interface, not the
    # buffer protocol, which the stable ABI has only from 3.11.
    assert distribution("tensorfile").metadata["Requires-Python"] == ">=3.9"
    wheel = distribution("tensorfile").read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    assert tags and all(tag.startswith("cp39-abi3-") for tag in tags), tags


def test_ml_dtypes_is_a_dependency():
    requires = distribution("tensorfile").requires or []
    # Not under an extra: `ml_dtypes; extra == "bfloat16"` alone would not install it.
    unconditional = [r for r in requires if "extra" not in r.partition(";")[2]]
    assert "ml-dtypes" in {_name(r) for r in unconditional}, requires
    assert "numpy" in {_name(r) for r in unconditional}, requires


def _bf16_safetensors(values: list) -> bytes:
    """A safetensors file of one bfloat16 tensor, written by hand: bfloat16 is the top half of
    a float32's bits."""
    data = b"".join(struct.pack("<I", b)[2:] for b in np.array(values, np.float32).view(np.uint32))
    header = json.dumps({"x": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + data


def test_bfloat16_loads_without_anything_else_installed(tmp_path):
    values = [1.0, -2.5, 0.15625, 2.0**100]  # each exact in bfloat16
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(_bf16_safetensors(values))

    arrays = tensorfile.load_file(path)
    x = arrays["x"]
    assert x.dtype.name == "bfloat16"
    assert x.shape == (2, 2)
    assert x.astype(np.float32).ravel().tolist() == np.array(values, np.float32).tolist()

    # And back: the package writes what it read, bit for bit.
    out = tmp_path / "again.safetensors"
    tensorfile.save_file({"x": x}, out)
    again = tensorfile.load_file(out)["x"]
    assert again.dtype.name == "bfloat16"
    assert again.tobytes() == x.tobytes()
