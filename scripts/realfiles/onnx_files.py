"""ONNX models (their initializers) and the TensorProto .pb files of ONNX's test data sets, as
`onnx.numpy_helper.to_array` reads them. tensorfile reads models, not bare TensorProto files."""

from pathlib import Path

import onnx
from onnx import numpy_helper

from reading import NotTensor, Raw, Reading, numeric


def read(path: Path) -> Reading:
    if path.suffix == ".pb":
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        return Reading("ONNX TensorProto", {tensor.name: tensor_value(tensor)}, claimed=False)
    model = onnx.load(str(path), load_external_data=False)
    return Reading("onnx", {t.name: tensor_value(t) for t in model.graph.initializer})


def tensor_value(tensor: "onnx.TensorProto"):
    if tensor.data_type == onnx.TensorProto.STRING:
        return NotTensor("string")
    try:
        array = numpy_helper.to_array(tensor)
    except Exception as e:  # noqa: BLE001
        return NotTensor("the real reader cannot read it", f"{type(e).__name__}: {e}")
    if array.dtype.type.__module__ != "numpy":
        # ml_dtypes elements (bfloat16, float8...): tensorfile extracts them as raw bytes.
        return Raw(array.dtype.name, array.tobytes())
    return numeric(array)
