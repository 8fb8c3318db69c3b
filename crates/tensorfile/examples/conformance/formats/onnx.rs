//! ONNX: a protobuf `ModelProto` whose graph holds the weights. Models are encoded here field
//! by field (a hostile variant is one changed field); two fixtures made by onnx and torch are
//! copied as valid cases. External data whose path stays inside the folder cannot be a
//! single-file case (it needs a second file): only the paths refused whatever the folder are.

use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::case::{Family as F, Folder};

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// A varint field.
fn int(field: u64, v: u64) -> Vec<u8> {
    [varint(field << 3), varint(v)].concat()
}

/// A length-delimited field.
fn bytes(field: u64, b: &[u8]) -> Vec<u8> {
    [varint((field << 3) | 2), varint(b.len() as u64), b.to_vec()].concat()
}

/// A `TensorProto`: dims, data type, name, then its data fields.
fn tensor(name: &[u8], data_type: u64, dims: &[u64], data: &[u8]) -> Vec<u8> {
    let mut t: Vec<u8> = dims.iter().flat_map(|&d| int(1, d)).collect();
    t.extend(int(2, data_type));
    t.extend(bytes(8, name));
    t.extend_from_slice(data);
    t
}

/// `n` float32 values as raw_data.
fn raw_f32(n: u64) -> Vec<u8> {
    bytes(9, &(0..n).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect::<Vec<u8>>())
}

/// A graph of `nodes` and initializers.
fn graph(nodes: &[Vec<u8>], initializers: &[Vec<u8>]) -> Vec<u8> {
    let mut g: Vec<u8> = nodes.iter().flat_map(|n| bytes(1, n)).collect();
    g.extend(bytes(2, b"g"));
    initializers.iter().for_each(|t| g.extend(bytes(5, t)));
    g
}

/// A model: IR version 10, a producer, the graph, opset 21.
fn model(graph: &[u8]) -> Vec<u8> {
    let mut m = int(1, 10);
    m.extend(bytes(2, b"conformance"));
    m.extend(bytes(7, graph));
    m.extend(bytes(8, &int(2, 21)));
    m
}

/// A model whose one initializer is `t`.
fn one(t: Vec<u8>) -> Vec<u8> {
    model(&graph(&[], &[t]))
}

/// A float32 tensor of shape `[4]` in external data at `location`.
fn external(location: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let entry = |k: &str, v: &str| bytes(13, &[bytes(1, k.as_bytes()), bytes(2, v.as_bytes())].concat());
    let mut data = entry("location", location);
    extra.iter().for_each(|(k, v)| data.extend(entry(k, v)));
    data.extend(int(14, 1));
    tensor(b"w", 1, &[4], &data)
}

/// A `Constant` node whose `value` is `t`, output `out`.
fn constant(out: &[u8], t: &[u8]) -> Vec<u8> {
    let attr = [bytes(1, b"value"), bytes(5, t), int(20, 4)].concat();
    [bytes(2, out), bytes(4, b"Constant"), bytes(5, &attr)].concat()
}

/// A node `op` whose attribute `name` holds graph `g`.
fn with_subgraph(op: &[u8], name: &[u8], g: &[u8]) -> Vec<u8> {
    let attr = [bytes(1, name), bytes(6, g), int(20, 5)].concat();
    [bytes(4, op), bytes(5, &attr)].concat()
}

/// A sparse initializer: float32 values, int64 indices of `index_dims` holding `indices`,
/// dense `dims`.
fn sparse(values: u64, index_dims: &[u64], indices: &[i64], dims: &[u64]) -> Vec<u8> {
    let v = tensor(b"s", 1, &[values], &raw_f32(values));
    let raw: Vec<u8> = indices.iter().flat_map(|i| i.to_le_bytes()).collect();
    let i = tensor(b"s_indices", 7, index_dims, &bytes(9, &raw));
    let mut s = [bytes(1, &v), bytes(2, &i)].concat();
    dims.iter().for_each(|&d| s.extend(int(3, d)));
    s
}

fn with_sparse(s: Vec<u8>) -> Vec<u8> {
    let mut g = graph(&[], &[]);
    g.extend(bytes(15, &s));
    model(&g)
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("onnx", Format::Onnx, "onnx");
    valid(&mut f, fx)?;
    protobuf(&mut f);
    tensors(&mut f);
    Ok(f)
}

fn valid(f: &mut Folder, fx: &Fixtures) -> Result<(), String> {
    f.valid(
        "raw-data",
        F::Valid,
        "a float32 [2, 3] initializer in raw_data",
        one(tensor(b"w", 1, &[2, 3], &raw_f32(6))),
    );
    let floats: Vec<u8> = (0..3).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let typed = [
        tensor(b"f", 1, &[3], &bytes(4, &floats)),
        tensor(b"h", 10, &[2], &bytes(5, &[varint(0x3c00), varint(0xc000)].concat())),
        tensor(b"i", 7, &[2], &bytes(7, &[varint(5), varint(u64::MAX)].concat())),
    ];
    f.valid(
        "typed-fields",
        F::Valid,
        "float_data, float16 bits in int32_data, int64_data (packed)",
        model(&graph(&[], &typed)),
    );
    f.valid(
        "sparse-and-constant",
        F::Valid,
        "a sparse initializer ([nnz, rank] indices) and a Constant node's tensor",
        {
            let mut g = graph(&[constant(b"c", &tensor(b"", 1, &[2], &raw_f32(2)))], &[]);
            g.extend(bytes(15, &sparse(2, &[2, 2], &[0, 1, 2, 0], &[3, 3])));
            model(&g)
        },
    );
    let body = graph(&[], &[tensor(b"inner", 1, &[1], &raw_f32(1))]);
    f.valid(
        "subgraph",
        F::Valid,
        "an If node whose branch holds an initializer",
        model(&graph(&[with_subgraph(b"If", b"then_branch", &body)], &[])),
    );
    f.valid(
        "library-subgraphs",
        F::Valid,
        "If and Loop bodies (fixture made by onnx)",
        fx.read("onnx/subgraphs.onnx")?,
    );
    f.valid(
        "library-torch",
        F::Valid,
        "torch.onnx.export of an MLP (fixture made by torch)",
        fx.read("onnx/torch_mlp.onnx")?,
    );
    Ok(())
}

fn protobuf(f: &mut Folder) {
    let bp = Rule::BadProtobuf;
    let good = one(tensor(b"w", 1, &[2], &raw_f32(2)));
    f.open("truncated", F::Truncation, bp, "the model cut inside its last field", good[..good.len() - 2].to_vec());
    let mut g = graph(&[], &[tensor(b"w", 1, &[2], &raw_f32(2))]);
    g.truncate(g.len() - 4);
    let mut past = int(1, 10);
    past.extend(varint((7 << 3) | 2));
    past.extend(varint(g.len() as u64 + 100));
    past.extend(&g);
    f.open("length-past-end", F::PastEnd, bp, "the graph's length 100 bytes past the end", past);
    let mut wire = good.clone();
    wire.extend([(9 << 3) | 7, 0]);
    f.open("bad-wire-type", F::MalformedProtobuf, bp, "a field of wire type 7, which does not exist", wire);
    let mut group = good.clone();
    group.extend([(9 << 3) | 4]);
    f.open("stray-end-group", F::MalformedProtobuf, bp, "an end-group tag without its start", group);
    let mut long = int(1, 10);
    long.push(5 << 3);
    long.extend([0xff; 10]);
    long.push(0x01);
    f.open("varint-overflow", F::Overflow, bp, "a varint of 11 bytes", long);
    let mut zero = good.clone();
    zero.extend([0x00, 0x00]);
    f.open("field-zero", F::MalformedProtobuf, bp, "a tag of field number 0", zero);
    f.open(
        "name-not-utf8",
        F::BadUtf8,
        bp,
        "an initializer named by the bytes ff fe",
        one(tensor(&[0xff, 0xfe], 1, &[1], &raw_f32(1))),
    );
    f.open("no-graph", F::BadField, Rule::MissingField, "ir_version and no graph", int(1, 10));
    f.open("no-ir-version", F::BadField, Rule::MissingField, "a graph and no ir_version", bytes(7, &graph(&[], &[])));
    let mut deep = graph(&[], &[]);
    for _ in 0..40 {
        deep = graph(&[with_subgraph(b"If", b"then_branch", &deep)], &[]);
    }
    f.open("nested-too-deep", F::DeepNesting, Rule::TooDeep, "If bodies nested 40 deep", model(&deep));
    let t = tensor(b"w", 1, &[1], &raw_f32(1));
    f.open(
        "duplicate-initializer",
        F::DuplicateName,
        Rule::DuplicateName,
        "two initializers of the main graph named w",
        model(&graph(&[], &[t.clone(), t])),
    );
}

fn tensors(f: &mut Folder) {
    let sm = Rule::SizeMismatch;
    f.verify(
        "raw-data-short",
        F::SizeMismatch,
        sm,
        "3 floats of raw_data for shape [4]",
        one(tensor(b"w", 1, &[4], &raw_f32(3))),
    );
    f.verify(
        "typed-count",
        F::SizeMismatch,
        sm,
        "2 values of float_data for shape [3]",
        one(tensor(b"w", 1, &[3], &bytes(4, &[0u8; 8]))),
    );
    f.verify(
        "two-typed-fields",
        F::BadField,
        Rule::BadField,
        "values in float_data and int64_data",
        one(tensor(b"w", 1, &[1], &[bytes(4, &[0u8; 4]), bytes(7, &varint(1))].concat())),
    );
    f.verify(
        "unknown-dtype",
        F::BadField,
        Rule::UnknownDType,
        "data type 99",
        one(tensor(b"w", 99, &[1], &bytes(9, &[0]))),
    );
    f.verify(
        "int4-padded",
        F::SizeMismatch,
        sm,
        "3 INT4 elements padded to 2 bytes (no whole number of bytes)",
        one(tensor(b"w", 22, &[3], &bytes(9, &[0x21, 0x03]))),
    );
    f.verify(
        "segmented",
        F::BadField,
        Rule::UnknownLayout,
        "a tensor with a segment",
        one(tensor(b"w", 1, &[1], &[bytes(3, &int(1, 0)), raw_f32(1)].concat())),
    );
    f.verify(
        "shape-overflow",
        F::Overflow,
        Rule::ShapeOverflow,
        "dims [2^40, 2^40]",
        one(tensor(b"w", 1, &[1 << 40, 1 << 40], &raw_f32(1))),
    );
    f.verify(
        "external-offset-text",
        F::BadField,
        Rule::BadField,
        "an external data offset that is not a number",
        one(external("w.bin", &[("offset", "12x")])),
    );
    f.verify("external-no-location", F::BadField, Rule::MissingField, "external data without a location", {
        let t = tensor(b"w", 1, &[4], &int(14, 1));
        one(t)
    });
    for (stem, location, what) in [
        ("external-parent", "../weights.bin", "external data at ../weights.bin"),
        ("external-absolute", "/etc/passwd", "external data at /etc/passwd"),
        ("external-inner-parent", "a/../../weights.bin", "external data at a/../../weights.bin"),
        ("external-backslash", "..\\weights.bin", "external data at ..\\weights.bin"),
    ] {
        f.open(stem, F::PathEscape, Rule::UnsafePath, what, one(external(location, &[])));
    }
    let bs = Rule::BadSparse;
    f.verify(
        "sparse-index-past-shape",
        F::BadSparse,
        bs,
        "a linear index 20 into a [2, 3] tensor",
        with_sparse(sparse(1, &[1], &[20], &[2, 3])),
    );
    f.verify(
        "sparse-negative-index",
        F::BadSparse,
        bs,
        "a coordinate -1",
        with_sparse(sparse(1, &[1, 2], &[0, -1], &[2, 3])),
    );
    f.verify(
        "sparse-index-shape",
        F::BadSparse,
        bs,
        "indices of shape [2, 3] for nnz 2 and rank 2",
        with_sparse(sparse(2, &[2, 3], &[0; 6], &[2, 3])),
    );
    f.verify(
        "sparse-values-rank",
        F::BadSparse,
        bs,
        "values of shape [1, 2]",
        with_sparse({
            let v = tensor(b"s", 1, &[1, 2], &raw_f32(2));
            let i = tensor(b"i", 7, &[2], &bytes(9, &[0u8; 16]));
            [bytes(1, &v), bytes(2, &i), int(3, 4)].concat()
        }),
    );
}
