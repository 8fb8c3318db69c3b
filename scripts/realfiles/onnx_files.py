"""ONNX models and the TensorProto .pb files of ONNX's test data sets, as
`onnx.numpy_helper.to_array` reads them. A model's tensors are those tensorfile lists: every
initializer and sparse initializer (made dense, as `extract --dense` writes it) and every
`Constant` node's value, in the main graph and every subgraph; a subgraph's tensor whose name is
taken is named `<node>/<attribute>/<name>` (`~2`, `~3`... if that is taken too), a node without
a name being `node<i>`. tensorfile reads models, not bare TensorProto files."""

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from reading import NotTensor, Raw, Reading, numeric

NUMBERS = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}


def read(path: Path) -> Reading:
    if path.suffix == ".pb":
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        return Reading("ONNX TensorProto", {tensor.name: tensor_value(tensor)}, claimed=False)
    model = onnx.load(str(path), load_external_data=False)
    entries = {}
    walk(model.graph, "", entries)
    return Reading("onnx", entries)


def walk(graph: "onnx.GraphProto", scope: str, entries: dict) -> None:
    for t in graph.initializer:
        add(entries, t.name, scope, tensor_value(t))
    for s in graph.sparse_initializer:
        add(entries, s.values.name, scope, sparse_value(s))
    for i, node in enumerate(graph.node):
        node_scope = "/".join(p for p in (scope, node.name or f"node{i}") if p)
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output and node.attribute:
            a = node.attribute[0]
            if a.name == "value":
                add(entries, node.output[0], scope, tensor_value(a.t))
            elif a.name == "sparse_value":
                add(entries, node.output[0], scope, sparse_value(a.sparse_tensor))
            elif a.name in NUMBERS:
                single = a.name in ("value_float", "value_int")
                values = (a.f if a.name == "value_float" else a.i) if single else list(a.floats or a.ints)
                add(entries, node.output[0], scope, np.asarray(values, dtype=NUMBERS[a.name]))
            else:
                add(entries, node.output[0], scope, NotTensor("string"))
        for a in node.attribute:
            if a.HasField("g"):
                walk(a.g, f"{node_scope}/{a.name}", entries)
            for k, sub in enumerate(a.graphs):
                walk(sub, f"{node_scope}/{a.name}.{k}", entries)


def add(entries: dict, name: str, scope: str, value) -> None:
    chosen = name
    if chosen in entries and scope:
        chosen, k = f"{scope}/{name}", 2
        while chosen in entries:
            chosen, k = f"{scope}/{name}~{k}", k + 1
    entries[chosen] = value


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


def sparse_value(sparse: "onnx.SparseTensorProto"):
    """A sparse tensor made dense: zeros but at its indices (linear, or one row per value)."""
    values = tensor_value(sparse.values)
    if not isinstance(values, np.ndarray):
        return values
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense
