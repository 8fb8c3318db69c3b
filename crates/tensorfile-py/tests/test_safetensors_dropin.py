"""`tensorfile.safetensors`, the drop-in for the `safetensors` package: what it writes is byte
for byte what the real safetensors writes, it reads what that writes, and it answers as that
does (names sorted, dtypes spelled `F32`, metadata `None` when there is none, safetensors'
errors and messages); where the real one writes a wrong file, this writes the right one or
refuses. safetensors' own tests run against it in scripts/safetensors-suite."""

import io
import json
import struct

import ml_dtypes
import numpy as np
import pytest

import tensorfile
import tensorfile.safetensors as st
from tensorfile.safetensors import SafetensorError, TensorSpec, safe_open
from tensorfile.safetensors.numpy import load, load_file, save, save_file

NUMPY_DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float16",
                "float32", "float64", "complex64", "bfloat16", "float8_e4m3fn", "float8_e5m2"]


def sample(dtype: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.uniform(-8, 8, shape)
    if dtype == "bool":
        return values > 0
    if dtype == "complex64":
        return (values + 1j * values[::-1]).astype(np.complex64)
    return values.astype(getattr(ml_dtypes, dtype) if hasattr(ml_dtypes, dtype) else dtype)


def every_dtype() -> dict:
    """Two arrays of each dtype, named so that name order and dtype order disagree."""
    out = {}
    for i, dtype in enumerate(NUMPY_DTYPES):
        out[f"z.{i:02}"] = sample(dtype, (3, 2), i)
        out[f"a.{len(NUMPY_DTYPES) - i:02}"] = sample(dtype, (i % 3,), i + 100)
    out["scalar"] = np.array(2.5)
    return out


def test_the_bytes_are_those_the_real_safetensors_writes(tmp_path):
    real = pytest.importorskip("safetensors.numpy")
    # One key: the real safetensors orders several in no fixed order (tensorfile: as given).
    tensors, metadata = every_dtype(), {"note": "ö"}
    assert save(tensors, metadata=metadata) == real.save(tensors, metadata=metadata)
    reversed_order = dict(reversed(list(tensors.items())))
    assert save(reversed_order) == real.save(tensors)
    save_file(tensors, tmp_path / "ours.safetensors")
    real.save_file(tensors, tmp_path / "theirs.safetensors")
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "theirs.safetensors").read_bytes()


def test_what_the_real_safetensors_writes_reads_back(tmp_path):
    real = pytest.importorskip("safetensors.numpy")
    tensors = every_dtype()
    path = tmp_path / "theirs.safetensors"
    real.save_file(tensors, path, metadata={"k": "v"})
    loaded = load_file(path)
    assert list(loaded) == safe_open(path, "np").offset_keys()
    for name, array in tensors.items():
        assert loaded[name].dtype == array.dtype and loaded[name].tobytes() == array.tobytes()
    with safe_open(path, framework="numpy") as f:
        assert f.keys() == sorted(tensors)
        assert f.metadata() == {"k": "v"}
        assert f.get_slice("z.13").get_dtype() == "BF16"
        assert f.get_slice("z.06").get_dtype() == "I32"
    assert load(path.read_bytes()).keys() == tensors.keys()


def test_arrays_are_saved_as_their_values_whatever_their_layout(tmp_path):
    # The real safetensors writes a transposed or strided array's memory as it lies: another tensor.
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    tensors = {"t": base.T, "strided": base[:, ::2], "big_endian": base.astype(">f4")}
    loaded = load(save(tensors))
    for name, array in tensors.items():
        assert np.array_equal(loaded[name], array), name
        assert loaded[name].dtype == np.float32


def test_metadata_is_text_or_refused():
    with pytest.raises(TypeError):
        save({"a": np.zeros(2)}, metadata={"n": 1})
    with pytest.raises(TypeError):
        save({"a": np.zeros(2)}, metadata=[("k", "v")])
    path_free = save({"a": np.zeros(2)})
    assert json.loads(path_free[8 : 8 + struct.unpack("<Q", path_free[:8])[0]]).keys() == {"a"}


def test_safe_open_answers_as_safetensors_does(tmp_path):
    path = tmp_path / "f.safetensors"
    save_file({"b": np.zeros(2, np.int64), "a": np.ones((2, 3), np.float32)}, path)
    f = safe_open(path, framework="np")
    assert f.metadata() is None
    assert f.keys() == ["a", "b"] and f.offset_keys() == ["b", "a"]
    assert f.get_tensors().keys() == {"b", "a"}
    with pytest.raises(SafetensorError, match="File does not contain tensor c"):
        f.get_tensor("c")
    with pytest.raises(SafetensorError, match="File does not contain tensor c"):
        f.get_slice("c")
    with f:
        array = f.get_tensor("a")
    array[0, 0] = 7  # memory of its own: writable, the file untouched
    assert load_file(path)["a"][0, 0] == 1
    with pytest.raises(SafetensorError, match="File is closed"):
        f.keys()


def test_opening_errors():
    with pytest.raises(FileNotFoundError) as missing:
        safe_open("no/such.safetensors", framework="np")
    assert str(missing.value) == "No such file or directory: no/such.safetensors"
    for bad in ({"framework": "tf"}, {"framework": "np", "backend": "direct"}, {"framework": "np", "device": "cuda"}):
        with pytest.raises(SafetensorError):
            safe_open("no/such.safetensors", **bad)


def test_a_broken_file_is_a_safetensor_error_naming_the_rule(tmp_path):
    path = tmp_path / "cut.safetensors"
    path.write_bytes(save({"a": np.zeros(4)})[:-3])
    with pytest.raises(SafetensorError) as refused:
        safe_open(path, framework="np")
    assert isinstance(refused.value, tensorfile.Error) and refused.value.rule
    with pytest.raises(SafetensorError):
        load(b"\x00" * 16)


@pytest.fixture
def sliced(tmp_path):
    path = tmp_path / "s.safetensors"
    array = np.arange(50, dtype=np.float64).reshape(10, 5)
    save_file({"a": array}, path)
    with safe_open(path, framework="np") as f:
        yield f.get_slice("a"), array


def test_slices_select_what_numpy_selects(sliced):
    s, a = sliced
    assert s.get_shape() == [10, 5] and s.get_dtype() == "F64"
    for key in [(), slice(None), slice(2, 7), slice(2, None, 3), (slice(None), 1), (3, slice(1, 4)), -1,
                (Ellipsis, 2), (1, Ellipsis), (slice(-3, None), -2), (slice(9, 2),), (slice(10, 10),)]:
        got = s[key]
        assert isinstance(got, np.ndarray) and got.flags.c_contiguous and got.flags.writeable, key
        assert got.shape == a[key].shape and np.array_equal(got, a[key]), key
    assert s[[]].shape == (0, 5)
    one, two = s[:], s[:]
    one[0, 0] = -1  # every result memory of its own
    assert two[0, 0] == 0


@pytest.mark.parametrize(
    "key, message",
    [
        ((slice(2, None), -6), "Invalid index -6 for dimension 1 of size 5"),
        ([0, 1], "Non empty lists are not implemented"),
        ((slice(2, None), 20), "Error during slicing [2:, 20] with shape [10, 5]: index 20 out of bounds for tensor "
                               "dimension #1 of size 5"),
        (slice(None, 20), "Error during slicing [:20] with shape [10, 5]: index 19 out of bounds for tensor "
                          "dimension #0 of size 10"),
        ((10,), "Error during slicing [10] with shape [10, 5]: index 10 out of bounds for tensor dimension #0 of "
                "size 10"),
        ((0, 0, 0), "Error during slicing [0, 0, 0] with shape [10, 5]: more slicing indexes than dimensions in "
                    "tensor"),
        ((Ellipsis, Ellipsis), "Only one ellipsis (...) is allowed in slice index"),
        (slice(None, None, -1), "Slice step must be a positive integer, got -1"),
        ((0, None), "Unsupported slice index at position 1: expected slice, int, or ellipsis"),
        ((slice(None, None, 2), slice(1, 9)), "Error during slicing [::2, 1:9] with shape [10, 5]: index 8 out of "
                                              "bounds for tensor dimension #1 of size 5"),
    ],
)
def test_slices_out_of_range_are_refused_with_safetensors_messages(sliced, key, message):
    s, _ = sliced
    with pytest.raises(SafetensorError) as refused:
        s[key]
    assert str(refused.value) == message


def test_serialize_takes_tensor_specs_only():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    spec = TensorSpec(dtype="float32", shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
    assert (spec.dtype, spec.shape, spec.data_len) == ("F32", [2, 3], 24)
    assert TensorSpec(dtype="float4_e2m1fn_x2", shape=[2, 2], data_ptr=0, data_len=4).shape == [2, 4]
    assert st.serialize({"a": spec}, metadata={"k": "v"}) == save({"a": a}, metadata={"k": "v"})
    with pytest.raises(SafetensorError, match="Unknown dtype"):
        TensorSpec(dtype="float128", shape=[1], data_ptr=0, data_len=0)
    with pytest.raises(TypeError):
        st.serialize({"a": {"dtype": "float32", "shape": [1], "data_ptr": 0, "data_len": 0}})
    short = TensorSpec(dtype="float32", shape=[3, 3], data_ptr=a.ctypes.data, data_len=a.nbytes)
    with pytest.raises(SafetensorError, match="24 bytes given, 36 expected"):
        st.serialize({"a": short})


def test_deserialize_gives_each_tensor_as_safetensors_does():
    data = save({"b": np.arange(3, dtype=np.int16), "a": np.ones(2, np.float32)})
    out = st.deserialize(data)
    assert [name for name, _ in out] == ["a", "b"]
    assert out[1][1] == {"shape": [3], "dtype": "I16", "data": bytearray(np.arange(3, dtype=np.int16).tobytes())}


def test_a_handle_is_read_by_its_name_or_its_bytes(tmp_path):
    data = save({"a": np.arange(4.0)})
    path = tmp_path / "h.safetensors"
    path.write_bytes(data)
    with open(path) as text, st._safe_open_handle(text, framework="np") as f:
        assert np.array_equal(f.get_tensor("a"), np.arange(4.0))
    with st._safe_open_handle(io.BytesIO(data), framework="np") as f:
        assert f.keys() == ["a"]


def test_the_error_and_the_namespace():
    assert issubclass(SafetensorError, tensorfile.Error)
    assert SafetensorError.__module__ == "tensorfile.safetensors"
    for name in st.__all__:
        assert hasattr(st, name), name
    assert st.__version__ == "0.8.0"


# --- torch ---------------------------------------------------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_torch_slices_of_every_dtype(torch, tmp_path):
    from tensorfile.safetensors.torch import save_file as save_pt

    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    tensors = {str(d).removeprefix("torch."): base.to(d) for d in (torch.bfloat16, torch.float8_e4m3fn, torch.int32)}
    tensors["f4"] = torch.arange(12, dtype=torch.uint8).reshape(4, 3).view(torch.float4_e2m1fn_x2)
    save_pt(tensors, tmp_path / "t.safetensors")
    with safe_open(tmp_path / "t.safetensors", framework="pt") as f:
        for name in ("bfloat16", "float8_e4m3fn", "int32"):
            s, t = f.get_slice(name), tensors[name]
            for key in [(1, 2), (slice(1, 3), 4), (slice(None), slice(2, 5, 2)), ()]:
                got = s[key]
                assert got.dtype == t.dtype and got.shape == t[key].shape and got.is_contiguous()
                raw = [x.reshape(-1).view(torch.uint8) for x in (got, t[key].contiguous())]
                assert torch.equal(*raw), (name, key)
        f4 = f.get_slice("f4")
        assert f4.get_dtype() == "F4" and f4.get_shape() == [4, 6]
        assert torch.equal(f4[1:3, 2:6].view(torch.uint8), tensors["f4"][1:3, 1:3].view(torch.uint8))
        with pytest.raises(SafetensorError, match="byte boundary"):
            f4[:, 1:2]


def test_torch_views_whose_memory_is_not_their_values_are_refused(torch, tmp_path):
    from tensorfile.safetensors.torch import save

    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    with pytest.raises(ValueError, match="conjugated"):
        save({"z": z.conj()})
    with pytest.raises(ValueError, match="negated"):
        save({"x": torch._neg_view(torch.arange(3.0))})
    assert save({"z": z.conj().resolve_conj()}) == save({"z": torch.tensor([1 - 2j, 3 + 4j])})
