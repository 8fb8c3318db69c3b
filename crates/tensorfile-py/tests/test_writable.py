"""Tensors users can write to: every entry point hands out writable memory of the caller's
own (numpy arrays and torch tensors alike, dense, sparse, quantized and dequantized ones, for
every format), a write never reaches the file nor what is read next, and an array or tensor
kept after its file is closed stays writable. Each group of files is written to in a fresh
interpreter (writable_worker.py), so that a crash, a write to read-only memory, is this test's
failure rather than the runner's."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES, fixture_id, records

WORKER = Path(__file__).with_name("writable_worker.py")

# Files beyond the records' (whose formats keep records of another shape): GGUF's ggml blocks,
# zTensor 1 and 2 (quantized, sparse, compressed).
EXTRA = [
    "gguf/blocks.gguf",
    "gguf/big_endian.gguf",
    "zt1/dtypes.zt",
    "zt1/zstd.zt",
    "zt2/quant.zt",
    "zt2/gguf.zt",
    "zt2_canonical/dense.zt",
    "zt2_canonical/quantized.zt",
    "zt2_canonical/sparse.zt",
]


# Formats whose records list arrays or datasets rather than tensors: every file of theirs.
GLOBS = ["numpy/*.np[yz]", "hdf5/files/*.h5", "hdf5/datasets/*.h5", "keras/*.keras", "keras/*.weights.h5"]


def groups() -> dict:
    """The files to write to, grouped by format folder (one interpreter each)."""
    files = [path for path, record in records() if record.get("tensors")] + [FIXTURES / e for e in EXTRA]
    files += [p for pattern in GLOBS for p in sorted(FIXTURES.glob(pattern))]
    out = {}
    for path in files:
        out.setdefault(path.relative_to(FIXTURES).parts[0], []).append(path)
    return out


GROUPS = groups()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_entry_point_hands_out_writable_memory(group):
    files = GROUPS[group]
    before = {p: digest(p) for p in files}
    run = subprocess.run(
        [sys.executable, str(WORKER), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONFAULTHANDLER="1"),
    )
    last = [line for line in run.stdout.splitlines() if line.startswith("writing ")][-1:]
    assert run.returncode == 0, (
        f"exit {run.returncode} (negative: killed by that signal) after {last}:\n{run.stderr[-4000:]}"
    )
    done = json.loads(run.stdout.splitlines()[-1])
    assert {p: digest(p) for p in files} == before, "a write reached a file"
    writes = done["writes"]
    assert writes.get("get_tensor", 0) + writes.get("dense", 0) + writes.get("dequantize", 0) > 0, writes
    if done["torch"]:
        assert writes.get("torch", 0) + writes.get("parts", 0) > 0, writes


def test_the_groups_cover_every_format():
    formats = set()
    for files in GROUPS.values():
        for path in files:
            with tensorfile.open(path) as f:
                formats.add(f.format)
    expected = {"safetensors", "gguf", "zt", "zt1", "zt2", "npy", "npz", "onnx", "hdf5", "keras", "pte", "ptd", "pt2", "pt"}
    assert len(formats) == len(tensorfile.formats()), "a format the groups miss"
    assert expected <= formats, expected - formats


def test_writable_entry_points_cover_every_layout():
    """The worker's counts, in this process for one file of each layout: what each entry
    point gave was written to."""
    run = subprocess.run(
        [sys.executable, str(WORKER)] + [
            str(FIXTURES / e) for e in ("safetensors/dtypes.safetensors", "zt2_canonical/sparse.zt", "gguf/blocks.gguf")
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    writes = json.loads(run.stdout.splitlines()[-1])["writes"]
    for entry in ("dense", "sparse", "parts", "dequantize", "get_tensor", "numpy", "asarray", "get_slice"):
        assert writes.get(entry, 0) > 0, (entry, writes)


def test_private_maps_share_the_page_cache_until_written(tmp_path):
    """A tensor of a file stored raw is a private copy-on-write map: reading it copies nothing
    (its pages are the page cache's: no private dirty page), and a write copies only the page
    written."""
    smaps = Path("/proc/self/smaps")
    if not smaps.exists():
        pytest.skip("no /proc/self/smaps on this system")
    path = tmp_path / "big.safetensors"
    tensorfile.save_file({"w": np.arange(4 * 1024 * 1024 // 4, dtype=np.float32)}, path)
    array = tensorfile.load_file(path)["w"]
    assert float(array.sum()) == float(np.arange(1024 * 1024, dtype=np.float64).sum())
    before = _mapping(smaps, array.ctypes.data)
    assert before["Rss"] >= 4096 and before["Private_Dirty"] == 0, before
    array[0] = -1.0
    array[5000] = -1.0  # another page
    after = _mapping(smaps, array.ctypes.data)
    assert after["Private_Dirty"] == 2 * 4096, after
    assert tensorfile.load_file(path)["w"][0] == 0.0


def _mapping(smaps: Path, address: int) -> dict:
    """The sizes (bytes) smaps gives for the mapping holding `address`."""
    current, found = None, None
    for line in smaps.read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            start, end = (int(x, 16) for x in head.split("-"))
            current = start <= address < end
            if current:
                found = {}
        elif current and line.split()[-1] == "kB":
            found[head.rstrip(":")] = int(line.split()[1]) * 1024
    assert found is not None, f"no mapping holds {address:#x}"
    return found


def test_readonly_views_stay_available():
    path = FIXTURES / "safetensors" / "dtypes.safetensors"
    for array in tensorfile.load_file(path, readonly=True).values():
        assert not array.flags.writeable
        if array.size:
            with pytest.raises(ValueError, match="read-only"):
                array[...] = array
    with tensorfile.open(path) as f:
        assert not f.get_tensor("float32", readonly=True).flags.writeable
        assert not f.get_slice("float32", readonly=True)[1:].flags.writeable
        mapped, address, start, end = f["float32"].memory()
        view = f["float32"].numpy(readonly=True)
        assert mapped and start <= view.ctypes.data < end  # the shared map itself


@pytest.mark.parametrize("call", ["load_file", "get_tensor", "get_slice"])
def test_readonly_torch_is_refused(call):
    path = FIXTURES / "safetensors" / "dtypes.safetensors"
    with pytest.raises(tensorfile.UsageError, match="torch has no read-only tensors"):
        if call == "load_file":
            tensorfile.load_file(path, framework="torch", readonly=True)
        else:
            with tensorfile.open(path) as f:
                getattr(f, call)("float32", framework="torch", readonly=True)


def test_ids_are_stable():
    assert [fixture_id(p) for p in GROUPS["safetensors"]]
