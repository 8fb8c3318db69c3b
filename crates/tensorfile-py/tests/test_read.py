"""Every fixture of every format reads, through the package, with the bytes the producing
tool recorded; arrays are views of the map; slices read only their rows; threads share a
file; bad files raise."""

import hashlib
import importlib.util
import threading

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES, fixture_id, records


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def open_fixture(path, record):
    data = record.get("data_file")
    return tensorfile.open(path, data=path.with_name(data) if data else None)


PACKED = {"int4", "uint4", "int2", "uint2", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"}


def test_every_fixture_is_there():
    """The parametrized test below would pass on no fixtures at all: all are there."""
    found = records()
    assert len(found) >= 63, f"{len(found)} fixtures with tensors: run scripts/fixtures"
    assert {path.relative_to(FIXTURES).parts[0] for path, _ in found} == {
        "executorch",
        "onnx",
        "pytorch",
        "safetensors",
        "sharded",
        "zt",
    }


@pytest.mark.parametrize("item", records(), ids=fixture_id)
def test_every_fixture_reads_with_the_recorded_bytes(item):
    path, record = item
    with open_fixture(path, record) as f:
        assert sorted(f) == sorted(t["name"] for t in record["tensors"])
        # Blobs an XNNPACK delegate's payload types: the runtime's record lists their bytes.
        typed = {e["name"] for e in f.entries() if "delegate" in e.get("extra", {})}
        for t in record["tensors"]:
            tensor = f[t["name"]]
            if t["name"] in typed and t["layout"] == "blob":
                assert [tensor.nbytes] == t["shape"], t["name"]
            else:
                assert (tensor.dtype, list(tensor.shape)) == (t["dtype"], t["shape"]), t["name"]
            if t["layout"].startswith("sparse"):
                parts = tensor.sparse()
                assert parts["nnz"] == t["nnz"]
                assert sha256(parts["values"].tobytes()) == t["values_sha256"]
                indices = parts["indices"].tolist()
                assert (indices if t["layout"] == "sparse_coo" else indices) == t["indices"]
                if t["layout"] == "sparse_csr":
                    assert parts["indptr"].tolist() == t["indptr"]
                else:
                    assert "indptr" not in t, t["name"]
                continue
            assert sha256(tensor.tobytes()) == t["sha256"], t["name"]
            if t["dtype"] in PACKED:
                # Narrower than a byte: no array of them (the packed bytes are checked above).
                with pytest.raises(tensorfile.UnsupportedError, match="packed into bytes"):
                    tensor.numpy(raw=True)
                continue
            array = tensor.numpy(raw=True)
            assert array.nbytes == tensor.nbytes
            assert sha256(array.tobytes()) == t["sha256"], t["name"]


def test_bfloat16_and_float8_come_through_ml_dtypes():
    pytest.importorskip("ml_dtypes")
    with tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors") as f:
        assert f["bfloat16"].numpy().dtype.name == "bfloat16"
        assert f["float8_e4m3fn"].numpy().dtype.name == "float8_e4m3fn"
        raw = f["bfloat16"].numpy(raw=True)
        assert raw.dtype == np.uint16 and raw.tobytes() == f["bfloat16"].tobytes()


VIEW_FIXTURES = [
    "zt/rust/dtypes.zt",
    "zt/python/multi.zt",
    "safetensors/dtypes.safetensors",
    "pytorch/plain.pt2",
    "pytorch/state_dict.pt",
    "executorch/external.ptd",
    "executorch/constants.pte",
]


def _dense_tensors(f):
    """The tensors of `f` with bytes to view: dense and not empty, with their names."""
    for tensor_name in f:
        tensor = f[tensor_name]
        if tensor.nbytes and not tensor.is_sparse:
            yield tensor_name, tensor


@pytest.mark.parametrize("name", VIEW_FIXTURES)
def test_raw_little_endian_arrays_are_views_of_the_map(name):
    with tensorfile.open(FIXTURES / name) as f:
        checked = 0
        for tensor_name, tensor in _dense_tensors(f):
            mapped, address, map_start, map_end = tensor.memory()
            if not mapped:
                continue  # decoded (zstd, big-endian, strided): an owned buffer
            # Read-only: a view of the shared map itself.
            view = tensor.numpy(raw=True, readonly=True)
            assert not view.flags.writeable
            assert map_start <= view.ctypes.data < map_end, tensor_name
            assert view.ctypes.data == address
            # Writable (the default): memory of its own, not the shared map (a private
            # copy-on-write map of the same pages from 64 KiB, a copy below: test_writable.py).
            own = f[tensor_name]
            array = own.numpy(raw=True)
            assert array.flags.writeable and np.array_equal(array, view)
            own_mapped, own_address, _, _ = own.memory()
            assert own_mapped == (own.nbytes >= 64 * 1024) and array.ctypes.data == own_address, tensor_name
            assert not map_start <= own_address < map_end, tensor_name
            for a, holder in ((view, tensor), (array, own)):
                base = a
                while isinstance(base, np.ndarray):
                    base = base.base
                assert base is holder or base.__class__.__name__ == "NativeBuffer", "the array keeps its memory alive"
            checked += 1
        assert checked > 0


def test_arrays_outlive_the_file_they_came_from():
    f = tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors")
    array = f["float32"].numpy()
    expected = array.copy()
    f.close()
    del f
    assert np.array_equal(array, expected)
    closed = tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors")
    closed.close()
    with pytest.raises(ValueError):
        closed["float32"]


def test_slices_read_only_their_rows():
    with tensorfile.open(FIXTURES / "zt" / "python" / "multi.zt") as f:
        name = next(n for n in f if len(f[n].shape) >= 2 and f[n].shape[0] >= 4 and f[n].dtype == "float32")
        tensor = f[name]
        full = tensor.numpy(readonly=True)
        mapped, address, _, _ = tensor.memory()
        assert mapped
        row_bytes = tensor.nbytes // tensor.shape[0]
        part = f.get_slice(name, readonly=True)[1:3]
        assert np.array_equal(part, full[1:3]) and not part.flags.writeable
        # The slice starts at its first row in the map: nothing before it was read or copied.
        assert part.ctypes.data == address + row_bytes
        # Writable by default: memory of its own, the file's rows unchanged by a write.
        own = f.get_slice(name)[1:3]
        own[...] = -1
        assert np.array_equal(f.get_slice(name)[1:3], full[1:3]) and not np.array_equal(own, full[1:3])
        assert np.array_equal(f.get_slice(name)[2], full[2])
        assert np.array_equal(f.get_slice(name)[-1, 1:], full[-1, 1:])
        assert np.array_equal(f.get_slice(name)[::-2], full[::-2])
        assert np.array_equal(f.get_slice(name)[3:1], full[3:1])
        assert np.array_equal(f.get_slice(name)[..., 0], full[..., 0])
        assert f.get_slice(name).get_shape() == list(full.shape)
        with pytest.raises(IndexError):
            f.get_slice(name)[tensor.shape[0]]


def test_a_thousand_threads_read_one_file():
    with tensorfile.open(FIXTURES / "pytorch" / "mobilenet_v2.pt2") as f:
        names = list(f)
        expected = {n: f[n].tobytes() for n in names}
        errors = []

        def work(i):
            try:
                name = names[i % len(names)]
                assert f[name].numpy(raw=True).tobytes() == expected[name]
            except Exception as e:  # noqa: BLE001 (collected for the assertion below)
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(1000)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []


HOSTILE = [
    ("pytorch/hostile/os_system.pt", "forbidden-global"),
    ("pytorch/hostile/whole_module.pt", "forbidden-global"),
]


@pytest.mark.parametrize(("name", "rule"), HOSTILE)
def test_hostile_files_raise_with_the_rule(name, rule):
    with pytest.raises(tensorfile.InvalidFileError) as caught:
        tensorfile.open(FIXTURES / name)
    assert caught.value.rule == rule
    assert caught.value.path.endswith(name.rsplit("/", 1)[1])


def test_truncated_and_garbage_files_raise_never_crash(tmp_path):
    sources = [FIXTURES / "safetensors" / "dtypes.safetensors", FIXTURES / "zt" / "rust" / "mixed.zt",
               FIXTURES / "pytorch" / "plain.pt2", FIXTURES / "executorch" / "constants.pte"]
    for source in sources:
        data = source.read_bytes()
        for cut in range(0, len(data), max(1, len(data) // 97)):
            path = tmp_path / f"cut{source.suffix}"
            path.write_bytes(data[:cut])
            try:
                with tensorfile.open(path) as f:
                    for name in f:
                        try:
                            f[name].tobytes()
                        except tensorfile.Error:
                            pass
            except tensorfile.Error:
                pass


def test_errors_are_the_package_exceptions(tmp_path):
    with pytest.raises(tensorfile.FileError) as caught:
        tensorfile.open(tmp_path / "missing.zt")
    assert isinstance(caught.value, OSError)
    with tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors") as f:
        with pytest.raises(KeyError) as missing:
            f["no such tensor"]
        assert isinstance(missing.value, tensorfile.TensorNotFoundError)
        assert "no such tensor" in str(missing.value)


def test_metadata_info_and_entries():
    with tensorfile.open(FIXTURES / "safetensors" / "metadata.safetensors") as f:
        assert f.metadata["format"] == "safetensors"
        assert f.metadata["metadata"]
        info = f.info()
        assert info["format"] == "safetensors" and info["tensors"] == len(f)
        assert [e["name"] for e in f.entries()] == list(f)
    with tensorfile.open(FIXTURES / "pytorch" / "plain.pt2") as f:
        models = f.info()["structure"]["models"]
        assert models[0]["range_constraints"]
        assert f.entries()[0]["extra"]["source"] == "parameter"
    with tensorfile.open(FIXTURES / "pytorch" / "subclass.pt2") as f:
        (bad,) = f.unreadable
        assert bad["name"] == "pair" and bad["rule"] == "forbidden-global"


def test_array_interface_and_dlpack():
    with tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors") as f:
        t = f["float32"]
        array = np.asarray(t)
        assert array.dtype == np.float32 and array.shape == tuple(t.shape)
        assert array.flags.writeable
        assert np.array_equal(array, t.numpy())
        # raw bits: numpy has no bfloat16 of its own
        assert np.asarray(f["bfloat16"]).dtype == np.uint16
        assert np.asarray(f["bfloat16"]).tobytes() == f["bfloat16"].tobytes()
        if np.lib.NumpyVersion(np.__version__) >= "2.1.0" or importlib.util.find_spec("torch"):
            assert np.array_equal(np.from_dlpack(t), t.numpy())
        else:  # numpy 2.0 exports no read-only memory through DLPack, and torch is missing
            with pytest.raises(BufferError, match="torch is not installed"):
                np.from_dlpack(t)


@pytest.mark.parametrize("name", ["safetensors/dtypes.safetensors", "zt/rust/dtypes.zt"])
def test_asarray_is_writable_memory_held_by_the_tensor(name):
    with tensorfile.open(FIXTURES / name) as f:
        checked = 0
        for tensor_name, tensor in _dense_tensors(f):
            array = np.asarray(tensor)
            mapped, address, _, _ = tensor.memory()
            assert array.ctypes.data == address, tensor_name  # zero-copy: the tensor's own bytes
            assert array.flags.writeable, tensor_name
            assert array.nbytes == tensor.nbytes and array.tobytes() == tensor.tobytes(), tensor_name
            base = array
            while isinstance(base, np.ndarray):
                base = base.base
            assert base is tensor, "the array keeps the tensor (and so its bytes) alive"
            # Every array of one Tensor views its one memory; another Tensor of the name is
            # memory of its own, with the file's bytes.
            before = f[tensor_name].tobytes()
            array.view(np.uint8)[...] = 0x5A
            assert tensor.numpy(raw=True).tobytes() == array.tobytes() == tensor.tobytes()
            assert f[tensor_name].tobytes() == before, tensor_name
            with pytest.raises(ValueError):
                tensor.numpy(readonly=True)[...] = 0
            checked += 1
        assert checked > 0


def test_empty_tensors_have_empty_arrays(tmp_path):
    path = tmp_path / "empty.safetensors"
    tensorfile.save_file({"e": np.zeros((0, 3), np.float32), "s": np.zeros((2, 0), np.int16)}, path)
    with tensorfile.open(path) as f:
        assert np.asarray(f["e"]).shape == (0, 3) and np.asarray(f["e"]).dtype == np.float32
        assert f["s"].numpy().shape == (2, 0) and f["s"].numpy().dtype == np.int16
        assert np.asarray(f["s"]).shape == (2, 0)


def test_without_ml_dtypes_bfloat16_says_what_to_do(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ml_dtypes", None)  # import fails
    with tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors") as f:
        with pytest.raises(tensorfile.UnsupportedError, match="ml_dtypes.*raw=True"):
            f["bfloat16"].numpy()
        assert f["bfloat16"].numpy(raw=True).dtype == np.uint16
        assert f["float32"].numpy().dtype == np.float32


def test_packed_integers_give_their_bytes_and_no_typed_array():
    """ONNX int4 [1, -2, 3, -8, 7, 0], two per byte: the array interface gives the packed
    bytes; numpy() says why it gives no array, raw or not."""
    with tensorfile.open(FIXTURES / "onnx" / "storage.onnx") as f:
        t = f["int4"]
        assert t.dtype == "int4" and tuple(t.shape) == (2, 3)
        assert bytes(np.asarray(t)) == bytes([0xE1, 0x83, 0x07])
        for raw in (False, True):
            with pytest.raises(tensorfile.UnsupportedError, match="4 bits each, packed into bytes"):
                t.numpy(raw=raw)


@pytest.mark.parametrize("access", ["whole", "auto"])
def test_files_read_whole_give_the_mapped_tensors(access):
    """A file read whole (direct I/O) gives the tensors the map gives, arrays owning memory
    of the file's read rather than views of the map."""
    for path, record in records()[:12]:
        if record.get("data_file"):
            continue
        with open_fixture(path, record) as mapped, tensorfile.open(path, access=access) as whole:
            assert list(whole) == list(mapped)
            for name in mapped:
                if mapped[name].quantization is not None:
                    continue
                assert sha256(whole[name].numpy(raw=True)) == sha256(mapped[name].numpy(raw=True)), (path, name)


def test_an_unknown_access_is_a_usage_error():
    path, _ = records()[0]
    with pytest.raises(tensorfile.UsageError, match="access must be"):
        tensorfile.open(path, access="mmap")
