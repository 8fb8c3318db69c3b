"""The ONNX fixtures, built with `onnx.helper` (and `torch.onnx.export`), and their records as
`onnx.load` + `onnx.numpy_helper.to_array` read them back (external data loaded).

  storage.onnx      an initializer in every storage form: raw_data, float_data, int32_data
                    (int8/16, uint8/16, bool, float16 and bfloat16 bits, float8 of every kind,
                    float8 e8m0, packed float4, int4, uint4, int2, uint2), int64_data,
                    double_data (float64, complex128), uint64_data (uint32, uint64), float_data
                    complex64; a 0-d and an empty tensor; packed int4/uint4/int2/uint2 in
                    raw_data; uint4 and int2 of an odd count (padded to a whole byte) and a
                    string initializer (unreadable here); a sparse
                    initializer ([nnz, rank] indices); Constant nodes (value, sparse_value with
                    [nnz] indices, value_floats, value_int); metadata_props
  subgraphs.onnx    If branches and a Loop body holding initializers and a Constant, one of them
                    named as a main-graph initializer (named <node>/<attribute>/<name> here)
  external/model.onnx + external/weights.bin
                    `onnx.save_model(save_as_external_data=True)`: every tensor of 64 bytes or
                    more in one file, the smaller ones inline
  torch_mlp.onnx    `torch.onnx.export` of a small MLP (only in the full fixtures pass)

Records: per tensor, dtype, shape and sha256 of the row-major little-endian bytes numpy_helper
returns (float4, int4 and uint4 values packed two per byte, first in the low nibble, int2 and
uint2 four per byte, first in the lowest bits, as ONNX stores them); sparse tensors as COO
(indices rank x nnz); `unreadable`: the names we must list as unreadable (strings, and packed
tensors whose elements do not fill a whole number of bytes); `metadata`: metadata_props.

Run alone (inside an environment with onnx, numpy and ml_dtypes):
  PYTHONPATH=scripts python -m fixturegen.onnx_files tests/fixtures/onnx
"""

import hashlib
import shutil
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from .common import pretty_json, row_major_le, sample

IR_VERSION = 10
OPSET = [helper.make_opsetid("", 21)]

# The record names of ONNX's types that we hold.
DTYPES = {
    T.FLOAT: "float32", T.UINT8: "uint8", T.INT8: "int8", T.UINT16: "uint16", T.INT16: "int16",
    T.INT32: "int32", T.INT64: "int64", T.BOOL: "bool", T.FLOAT16: "float16", T.DOUBLE: "float64",
    T.UINT32: "uint32", T.UINT64: "uint64", T.COMPLEX64: "complex64", T.COMPLEX128: "complex128",
    T.BFLOAT16: "bfloat16", T.FLOAT8E4M3FN: "float8_e4m3fn", T.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    T.FLOAT8E5M2: "float8_e5m2", T.FLOAT8E5M2FNUZ: "float8_e5m2fnuz", T.FLOAT8E8M0: "float8_e8m0fnu",
    T.FLOAT4E2M1: "float4_e2m1fn", T.UINT4: "uint4", T.INT4: "int4", T.UINT2: "uint2", T.INT2: "int2",
}

# Bits per element of the types ONNX packs several to a byte.
PACKED_BITS = {T.FLOAT4E2M1: 4, T.UINT4: 4, T.INT4: 4, T.UINT2: 2, T.INT2: 2}

# numpy (ml_dtypes) types of the typed-field values given to make_tensor.
NUMPY = {
    T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16, T.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    T.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz, T.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    T.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz, T.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
}


def values(name: str, dtype, shape) -> np.ndarray:
    """Deterministic values for a tensor, small enough for every float type."""
    base = sample(name, np.dtype(np.float32), shape)
    if dtype in (T.FLOAT8E8M0,):
        return np.abs(base) + 1
    if dtype in NUMPY:
        return (base / 100 * 4).astype(np.float32)
    return base


def typed(name, dtype, shape, raw=False) -> onnx.TensorProto:
    """A tensor made by make_tensor from float values (typed fields unless `raw`)."""
    v = values(name, dtype, shape)
    if dtype == T.FLOAT8E8M0:
        arr = v.astype(ml_dtypes.float8_e8m0fnu)
        if raw:
            return helper.make_tensor(name, dtype, shape, arr.tobytes(), raw=True)
        return helper.make_tensor(name, dtype, shape, arr.view(np.uint8).astype(np.int32).flatten().tolist())
    if dtype in NUMPY:
        arr = v.astype(NUMPY[dtype])
        if raw:
            return numpy_helper.from_array(arr, name)
        return helper.make_tensor(name, dtype, shape, arr.astype(np.float32).flatten().tolist())
    return helper.make_tensor(name, dtype, shape, v.flatten().tolist(), raw=raw)


def integer(name, dtype, np_type, shape) -> onnx.TensorProto:
    arr = sample(name, np.dtype(np_type), shape)
    return helper.make_tensor(name, dtype, shape, arr.flatten().tolist())


def storage_model() -> onnx.ModelProto:
    inits = [
        numpy_helper.from_array(sample("raw_f32", np.dtype(np.float32), (3, 4)), "raw_f32"),
        numpy_helper.from_array(sample("raw_i64", np.dtype(np.int64), (2, 3)), "raw_i64"),
        numpy_helper.from_array(sample("raw_bool", np.dtype(bool), (5,)), "raw_bool"),
        helper.make_tensor("typed_f32", T.FLOAT, (2, 3), values("typed_f32", T.FLOAT, (2, 3)).flatten().tolist()),
        integer("typed_i32", T.INT32, np.int32, (4,)),
        integer("typed_i16", T.INT16, np.int16, (2, 2)),
        integer("typed_u16", T.UINT16, np.uint16, (3,)),
        integer("typed_i8", T.INT8, np.int8, (5,)),
        integer("typed_u8", T.UINT8, np.uint8, (5,)),
        helper.make_tensor("typed_bool", T.BOOL, (4,), [True, False, False, True]),
        integer("typed_i64", T.INT64, np.int64, (3,)),
        integer("typed_u32", T.UINT32, np.uint32, (3,)),
        integer("typed_u64", T.UINT64, np.uint64, (3,)),
        helper.make_tensor("typed_f64", T.DOUBLE, (2, 2), values("typed_f64", T.DOUBLE, (2, 2)).flatten().tolist()),
        helper.make_tensor("typed_c64", T.COMPLEX64, (2,), [1 + 2j, -3.5 + 0.25j]),
        helper.make_tensor("typed_c128", T.COMPLEX128, (2,), [0.5 - 1j, 7 + 0j]),
        numpy_helper.from_array(np.array(2.5, dtype=np.float32), "scalar"),
        numpy_helper.from_array(np.zeros((0, 3), dtype=np.float32), "empty"),
        helper.make_tensor("int4", T.INT4, (2, 3), [1, -2, 3, -8, 7, 0]),
        helper.make_tensor("uint4", T.UINT4, (4,), [1, 15, 7, 8]),
        helper.make_tensor("int2", T.INT2, (2, 4), [1, -2, 0, -1, -1, 1, 0, -2]),
        helper.make_tensor("uint2", T.UINT2, (4,), [3, 0, 1, 2]),
        numpy_helper.from_array(np.array([[7, -8, 0, -1], [2, -3, 5, -6]], dtype=ml_dtypes.int4), "raw_int4"),
        numpy_helper.from_array(np.array([0, 15, 9, 4, 12, 1], dtype=ml_dtypes.uint4), "raw_uint4"),
        numpy_helper.from_array(np.array([1, -2, 0, -1], dtype=ml_dtypes.int2), "raw_int2"),
        numpy_helper.from_array(np.array([3, 2, 1, 0, 0, 1, 2, 3], dtype=ml_dtypes.uint2), "raw_uint2"),
        helper.make_tensor("uint4_odd", T.UINT4, (3,), [1, 15, 7]),
        helper.make_tensor("int2_odd", T.INT2, (5,), [1, -2, 0, -1, 1]),
        helper.make_tensor("strings", T.STRING, (2,), [b"a", b"bc"]),
    ]
    for dtype in [T.FLOAT16, T.BFLOAT16, T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ,
                  T.FLOAT8E8M0, T.FLOAT4E2M1]:
        label = DTYPES[dtype]
        inits.append(typed(f"typed_{label}", dtype, (2, 4)))
        inits.append(typed(f"raw_{label}", dtype, (2, 4), raw=True))
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.5, -2.0, 3.25], dtype=np.float32), "sparse_init"),
        numpy_helper.from_array(np.array([[0, 1], [2, 0], [3, 3]], dtype=np.int64), "sparse_init_indices"),
        [4, 5],
    )
    sparse_const = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([7, 9], dtype=np.int32), "sc_values"),
        numpy_helper.from_array(np.array([1, 10], dtype=np.int64), "sc_indices"),
        [3, 4],
    )
    nodes = [
        helper.make_node("Constant", [], ["const_value"], value=numpy_helper.from_array(
            sample("const_value", np.dtype(np.float32), (2, 2)), "ignored")),
        helper.make_node("Constant", [], ["const_sparse"], sparse_value=sparse_const),
        helper.make_node("Constant", [], ["const_floats"], value_floats=[0.5, 1.5, -2.0]),
        helper.make_node("Constant", [], ["const_int"], value_int=42),
        helper.make_node("Add", ["x", "raw_f32"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "storage",
        [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 4])],
        initializer=inits, sparse_initializer=[sparse],
    )
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="fixturegen", producer_version="1")
    model.ir_version = IR_VERSION
    helper.set_model_props(model, {"author": "tensorfile", "purpose": "every storage form"})
    return model


def subgraph_model() -> onnx.ModelProto:
    def branch(label: str, extra_name: str) -> onnx.GraphProto:
        w = numpy_helper.from_array(sample(label, np.dtype(np.float32), (3,)), extra_name)
        return helper.make_graph(
            [helper.make_node("Identity", [extra_name], [f"{label}_out"])], label, [],
            [helper.make_tensor_value_info(f"{label}_out", T.FLOAT, [3])], initializer=[w])

    then_g = branch("then_w", "then_w")
    # Named as the main graph's initializer: renamed <node>/<attribute>/<name>.
    else_g = branch("else_shared", "shared")
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["loop_const"], value=numpy_helper.from_array(
                np.arange(6, dtype=np.int64).reshape(2, 3), "ignored")),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "loop_w"], ["acc_out"]),
        ],
        "body",
        [helper.make_tensor_value_info("iter", T.INT64, []), helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("acc_in", T.FLOAT, [3])],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []), helper.make_tensor_value_info("acc_out", T.FLOAT, [3])],
        initializer=[numpy_helper.from_array(sample("loop_w", np.dtype(np.float16), (3,)).astype(np.float32), "loop_w")],
    )
    nodes = [
        helper.make_node("If", ["cond"], ["branch_out"], name="choose", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trip", "cond", "shared"], ["loop_out"], name="repeat", body=body),
    ]
    graph = helper.make_graph(
        nodes, "subgraphs",
        [helper.make_tensor_value_info("cond", T.BOOL, []), helper.make_tensor_value_info("trip", T.INT64, [])],
        [helper.make_tensor_value_info("branch_out", T.FLOAT, [3]), helper.make_tensor_value_info("loop_out", T.FLOAT, [3])],
        initializer=[numpy_helper.from_array(sample("shared", np.dtype(np.float32), (3,)), "shared")],
    )
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="fixturegen")
    model.ir_version = IR_VERSION
    return model


def external_model(folder: Path) -> Path:
    w = sample("ext_w", np.dtype(np.float32), (8, 16))
    b = sample("ext_b", np.dtype(np.float32), (16,))
    small = sample("ext_small", np.dtype(np.float32), (3,))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])], "external",
        [helper.make_tensor_value_info("x", T.FLOAT, [1, 8])], [helper.make_tensor_value_info("y", T.FLOAT, [1, 16])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
                     numpy_helper.from_array(small, "small")],
    )
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="fixturegen")
    model.ir_version = IR_VERSION
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=64)
    return path


def torch_model(path: Path) -> None:
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).eval()
    torch.onnx.export(net, (torch.zeros(2, 6),), str(path), dynamo=False, input_names=["x"], output_names=["y"])


# Records ---------------------------------------------------------------------------------------


def tensor_bytes(t: onnx.TensorProto) -> tuple[str, list, bytes]:
    arr = numpy_helper.to_array(t)
    if t.data_type in PACKED_BITS:
        bits = PACKED_BITS[t.data_type]
        per_byte = 8 // bits
        fields = arr.flatten().view(np.uint8) & ((1 << bits) - 1)
        fields = np.append(fields, np.zeros(-len(fields) % per_byte, np.uint8))
        packed = np.zeros(len(fields) // per_byte, np.uint8)
        for k in range(per_byte):
            packed |= fields[k::per_byte] << (k * bits)
        data = packed.tobytes()
    else:
        data = row_major_le(arr)
    return DTYPES[t.data_type], list(t.dims), data


def dense_record(name: str, t: onnx.TensorProto) -> dict:
    dtype, shape, data = tensor_bytes(t)
    return {"name": name, "dtype": dtype, "shape": [int(d) for d in shape], "layout": "dense",
            "sha256": hashlib.sha256(data).hexdigest()}


def sparse_record(name: str, s: onnx.SparseTensorProto) -> dict:
    dtype, _, values = tensor_bytes(s.values)
    idx = numpy_helper.to_array(s.indices)
    shape = [int(d) for d in s.dims]
    coo = idx.T if idx.ndim == 2 else np.array(np.unravel_index(idx, shape))
    return {"name": name, "dtype": dtype, "shape": shape, "layout": "sparse_coo", "nnz": int(len(idx)),
            "values_sha256": hashlib.sha256(values).hexdigest(), "indices": coo.astype(int).tolist()}


class Records:
    """Every tensor of a model's graphs, named as tensorfile names them (its module doc)."""

    def __init__(self):
        self.tensors, self.unreadable, self.taken = [], [], set()

    def name(self, name: str, scope: str) -> str:
        if name in self.taken:
            name = f"{scope}/{name}"
        self.taken.add(name)
        return name

    def add(self, name: str, scope: str, t=None, sparse=None) -> None:
        name = self.name(name, scope)
        proto = t if t is not None else sparse.values
        per_byte = 8 // PACKED_BITS.get(proto.data_type, 8)
        if proto.data_type not in DTYPES or int(np.prod(proto.dims, dtype=np.int64)) % per_byte:
            self.unreadable.append(name)
        elif t is not None:
            self.tensors.append(dense_record(name, t))
        else:
            self.tensors.append(sparse_record(name, sparse))

    def graph(self, g: onnx.GraphProto, scope: str) -> None:
        for t in g.initializer:
            self.add(t.name, scope, t=t)
        for s in g.sparse_initializer:
            self.add(s.values.name, scope, sparse=s)
        for i, node in enumerate(g.node):
            node_scope = node.name or f"node{i}"
            node_scope = f"{scope}/{node_scope}" if scope else node_scope
            if node.op_type == "Constant":
                a = node.attribute[0]
                if a.name == "value":
                    self.add(node.output[0], scope, t=a.t)
                elif a.name == "sparse_value":
                    self.add(node.output[0], scope, sparse=a.sparse_tensor)
                else:
                    arr = np.array(helper.get_attribute_value(a),
                                   dtype=np.float32 if a.name.startswith("value_float") else np.int64)
                    self.add(node.output[0], scope, t=numpy_helper.from_array(arr))
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    self.graph(a.g, f"{node_scope}/{a.name}")


def record(path: Path, producer: str) -> None:
    model = onnx.load(str(path))
    r = Records()
    r.graph(model.graph, "")
    out = {"producer": producer, "file": path.name, "tensors": r.tensors, "unreadable": r.unreadable,
           "ir_version": model.ir_version,
           "metadata": {p.key: p.value for p in model.metadata_props}}
    path.with_name(path.name + ".expected.json").write_text(pretty_json(out) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


def generate(out: Path, with_torch: bool) -> None:
    """Writes the models and their records into `out` (the torch one only `with_torch`; else
    the one there is kept)."""
    out.mkdir(parents=True, exist_ok=True)
    producer = f"onnx {onnx.__version__}"
    for name, model in [("storage.onnx", storage_model()), ("subgraphs.onnx", subgraph_model())]:
        onnx.save_model(model, str(out / name))
        record(out / name, producer)
    shutil.rmtree(out / "external", ignore_errors=True)
    record(external_model(out / "external"), producer + " save_as_external_data")
    if with_torch:
        import torch

        torch_model(out / "torch_mlp.onnx")
        record(out / "torch_mlp.onnx", f"torch {torch.__version__} torch.onnx.export")


if __name__ == "__main__":
    generate(Path(sys.argv[1]), with_torch=len(sys.argv) > 2 and sys.argv[2] == "torch")
