"""Interop of the `tensorfile` binary with onnx and onnxruntime: a model's weights replaced by
`tensorfile update` (from a safetensors file) give onnxruntime the outputs of the new weights,
for a model whose weights are external data and for one whose weights are inline; `onnx.load`
+ `numpy_helper` read the updated files with exactly the new values, the rest unchanged.

Needs `onnx onnxruntime safetensors numpy pytest`; run by `scripts/interop`.
The binary is $TENSORFILE_BIN, else target/release/tensorfile or target/debug/tensorfile.
"""

import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import save_file

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)


def run(*args) -> str:
    done = subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"tensorfile {' '.join(map(str, args))}: {done.stdout}{done.stderr}"
    return done.stdout


def linear_model(w: np.ndarray, b: np.ndarray) -> onnx.ModelProto:
    """y = x @ w + b."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", w.shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", w.shape[1]])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def outputs(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["y"], {"x": x})[0]


@pytest.mark.parametrize("external", [True, False], ids=["external-data", "inline"])
def test_updated_weights_run_in_onnxruntime(tmp_path: Path, external: bool) -> None:
    rng = np.random.default_rng(7)
    w, b = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    src = tmp_path / "src"
    src.mkdir()
    model = src / "model.onnx"
    if external:
        onnx.save_model(linear_model(w, b), str(model), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.data", size_threshold=0)
    else:
        onnx.save_model(linear_model(w, b), str(model))
    x = rng.standard_normal((4, 16)).astype(np.float32)
    np.testing.assert_allclose(outputs(model, x), x @ w + b, rtol=1e-5, atol=1e-5)

    new_w = rng.standard_normal((16, 32)).astype(np.float32)
    new_b = np.arange(32, dtype=np.float32)
    save_file({"w": new_w, "b": new_b}, str(tmp_path / "new.safetensors"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "model.onnx"
    run("update", model, "--weights", tmp_path / "new.safetensors", "-o", out)

    if external:
        assert (out_dir / "model.data").is_file(), "the external data was not written beside the output"
        # The output's weights are still external.
        stored = onnx.load(str(out), load_external_data=False)
        assert all(t.data_location == TensorProto.EXTERNAL for t in stored.graph.initializer)
    np.testing.assert_allclose(outputs(out, x), x @ new_w + new_b, rtol=1e-5, atol=1e-5)
    loaded = onnx.load(str(out))
    got = {t.name: numpy_helper.to_array(t) for t in loaded.graph.initializer}
    assert got["w"].tobytes() == new_w.tobytes()
    assert got["b"].tobytes() == new_b.tobytes()
    # The source model is as it was.
    np.testing.assert_allclose(outputs(model, x), x @ w + b, rtol=1e-5, atol=1e-5)


def test_a_partial_update_keeps_the_other_weights(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    w, b = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    model = tmp_path / "model.onnx"
    onnx.save_model(linear_model(w, b), str(model), save_as_external_data=True, location="w.bin", size_threshold=0)
    new_b = np.full(4, 0.5, dtype=np.float32)
    save_file({"b": new_b}, str(tmp_path / "b.safetensors"))
    out = tmp_path / "updated.onnx"
    run("update", model, "--weights", tmp_path / "b.safetensors", "-o", out)
    loaded = onnx.load(str(out))
    got = {t.name: numpy_helper.to_array(t) for t in loaded.graph.initializer}
    assert got["w"].tobytes() == w.tobytes()
    assert got["b"].tobytes() == new_b.tobytes()
    x = rng.standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_allclose(outputs(out, x), x @ w + new_b, rtol=1e-5, atol=1e-5)


def test_tensorfile_reads_what_onnx_saves(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    w, b = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    model = tmp_path / "model.onnx"
    onnx.save_model(linear_model(w, b), str(model), save_as_external_data=True, location="d.bin", size_threshold=0)
    run("extract", model, "-o", tmp_path / "npy")
    assert np.load(tmp_path / "npy" / "w.npy").tobytes() == w.tobytes()
    assert np.load(tmp_path / "npy" / "b.npy").tobytes() == b.tobytes()
