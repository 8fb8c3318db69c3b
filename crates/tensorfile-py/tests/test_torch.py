"""torch tensors straight from the map, every dtype, and torch -> save_file."""

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES

torch = pytest.importorskip("torch")


def test_torch_tensors_are_views_with_every_dtype():
    with tensorfile.open(FIXTURES / "pytorch" / "dtypes.pt") as f:
        for name in f:
            tensor = f[name]
            t = tensor.torch()
            assert str(t.dtype) == f"torch.{name}" and list(t.shape) == f[name].shape
            assert t.reshape(-1).view(torch.uint8).numpy().tobytes() == f[name].tobytes()
            mapped, address, _, _ = tensor.memory()
            if mapped:
                assert t.data_ptr() == address


def test_state_dict_loads_into_a_module():
    with tensorfile.open(FIXTURES / "pytorch" / "plain.pt2") as f:
        state = {name: f.get_tensor(name, framework="torch") for name in f}
    model = torch.nn.Sequential()
    model.fc1 = torch.nn.Linear(8, 16)
    model.fc2 = torch.nn.Linear(16, 4)
    model.load_state_dict(state)


def test_torch_round_trips(tmp_path):
    tensors = {
        "bf16": torch.randn(3, 4).to(torch.bfloat16),
        "f8": torch.randn(5).to(torch.float8_e4m3fn),
        "t": torch.arange(12.0).reshape(3, 4).t(),
        "scalar": torch.tensor(3, dtype=torch.int64),
        "b": torch.tensor([True, False]),
    }
    for fmt in ["safetensors", "pt"]:
        path = tmp_path / f"out.{fmt}"
        tensorfile.save_file(tensors, path)
        loaded = tensorfile.load_file(path, framework="torch")
        for name, t in tensors.items():
            assert loaded[name].dtype == t.dtype and torch.equal(loaded[name].float(), t.float()), name
    # torch reads what we wrote.
    assert torch.equal(torch.load(tmp_path / "out.pt", weights_only=True)["t"], tensors["t"])


def test_slices_as_torch():
    with tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors") as f:
        part = f.get_slice("float32", framework="torch")[1:]
        assert torch.equal(part, f["float32"].torch()[1:])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_loading_matches_the_cpu():
    path = FIXTURES / "pytorch" / "mobilenet_v2.pt2"
    on_gpu = tensorfile.load_file(path, framework="torch", device="cuda:0")
    on_cpu = tensorfile.load_file(path, framework="torch")
    for name, t in on_cpu.items():
        assert on_gpu[name].device.type == "cuda"
        assert torch.equal(on_gpu[name].cpu(), t), name
    with tensorfile.open(path) as f:
        name = next(iter(f))
        assert torch.equal(f.get_tensor(name, framework="torch", device="cuda:0").cpu(), on_cpu[name])


def test_numpy_and_torch_agree():
    with tensorfile.open(FIXTURES / "zt" / "rust" / "dtypes.zt") as f:
        for name in f:
            if f[name].dtype == "bfloat16":
                continue
            assert np.array_equal(f[name].numpy(), f[name].torch().numpy()), name


def test_a_training_step_on_loaded_weights_in_a_fresh_process(tmp_path):
    """The issue's report: weights from `load_file` assigned into a module (`assign=True`: the
    module's parameters are the loaded tensors) and one optimizer step, in a fresh interpreter
    (a write to read-only memory would kill it); the file is unchanged."""
    import subprocess
    import sys

    path = tmp_path / "model.safetensors"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8))
    tensorfile.save_file(model.state_dict(), path)
    before = path.read_bytes()
    code = f"""
import torch, tensorfile
model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8))
state = tensorfile.load_file({str(path)!r}, framework="torch")
model.load_state_dict(state, assign=True)
assert model[0].weight.data_ptr() == state["0.weight"].data_ptr()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(4, 64)).sum().backward()
optimizer.step()
model[0].weight.data.add_(1)
assert not torch.equal(model[0].weight, tensorfile.load_file({str(path)!r}, framework="torch")["0.weight"])
print("stepped")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "stepped", (run.returncode, run.stderr[-3000:])
    assert path.read_bytes() == before
