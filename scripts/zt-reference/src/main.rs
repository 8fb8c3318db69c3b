//! Writes zTensor test fixtures with the reference implementation (the crate `ztensor` 0.1.0),
//! each beside a record of what the reference reader reads back from it.
//!
//! Usage: `zt-reference OUT_DIR` (run by `scripts/fixtures`; see `tests/fixtures/README.md`).

mod data;
mod fixture;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_cbor::Value as Cbor;
use ztensor::{DType, Layout};

use fixture::{Result, Tensor};

// The reference writer takes, and its reader returns, native-endian bytes; the records promise
// little-endian ones.
#[cfg(not(target_endian = "little"))]
compile_error!("zt-reference must run on a little-endian machine");

fn main() -> Result<()> {
    let dir = PathBuf::from(std::env::args_os().nth(1).ok_or("usage: zt-reference OUT_DIR")?);
    std::fs::create_dir_all(&dir)?;
    for (file, tensors) in fixtures() {
        fixture::write(&dir, file, tensors)?;
        println!("wrote {}", dir.join(file).display());
    }
    Ok(())
}

fn fixtures() -> Vec<(&'static str, Vec<Tensor>)> {
    vec![
        ("dtypes.zt", dtypes()),
        ("zstd.zt", zstd()),
        ("zstd_large.zt", zstd_large()),
        ("big_endian.zt", big_endian()),
        ("crc32c.zt", crc32c()),
        ("custom_fields.zt", custom_fields()),
        ("scalar.zt", scalar()),
        ("zero_size.zt", zero_size()),
        ("empty.zt", Vec::new()),
        ("mixed.zt", mixed()),
        ("sparse_csr.zt", vec![sparse_csr()]),
        ("sparse_coo.zt", vec![sparse_coo()]),
    ]
}

fn all_dtypes() -> [DType; 13] {
    use DType::*;
    [Float64, Float32, Float16, BFloat16, Int64, Int32, Int16, Int8, Uint64, Uint32, Uint16, Uint8, Bool]
}

/// Small shapes of rank 1 to 4, cycled through so that fixtures vary them.
const SHAPES: [&[u64]; 4] = [&[7], &[3, 5], &[2, 3, 4], &[1, 2, 1, 3]];

/// One raw little-endian tensor of each dtype, named after it.
fn dtypes() -> Vec<Tensor> {
    all_dtypes().into_iter().enumerate().map(|(i, d)| Tensor::dense(&d.to_string_key(), d, SHAPES[i % 4])).collect()
}

/// zstd frames of compressible and of incompressible data, a scalar among them.
fn zstd() -> Vec<Tensor> {
    vec![
        Tensor::dense("float32.drifting", DType::Float32, &[64, 64]).drifting(64, 2).zstd(),
        Tensor::dense("bfloat16.drifting", DType::BFloat16, &[32, 48]).drifting(48, 2).zstd(),
        Tensor::dense("int64.random", DType::Int64, &[40, 10]).zstd(),
        Tensor::dense("uint8.drifting", DType::Uint8, &[1000]).drifting(100, 3).zstd(),
        Tensor::dense("float16.drifting", DType::Float16, &[5, 7, 9]).drifting(35, 1).zstd(),
        Tensor::dense("bool", DType::Bool, &[17, 3]).zstd(),
        Tensor::dense("int16.scalar", DType::Int16, &[]).zstd(),
    ]
}

/// One tensor of 9.5 MiB that compresses to about 110 KB (many zstd blocks, matches 64 KiB
/// back), then a small raw one placed after it.
fn zstd_large() -> Vec<Tensor> {
    vec![
        Tensor::dense("large", DType::Int32, &[2432, 1024]).drifting(16384, 48).zstd(),
        Tensor::dense("after_large", DType::Float32, &[8]),
    ]
}

/// Every multi-byte dtype stored big-endian; also what the reference does when asked for
/// big-endian where it does not apply (one-byte dtypes, zstd): it stores little-endian and
/// writes no `data_endianness`.
fn big_endian() -> Vec<Tensor> {
    let multi_byte = all_dtypes().into_iter().filter(DType::is_multi_byte);
    let mut tensors: Vec<Tensor> =
        multi_byte.enumerate().map(|(i, d)| Tensor::dense(&d.to_string_key(), d, SHAPES[i % 4]).big_endian()).collect();
    tensors.push(Tensor::dense("uint8.big_requested", DType::Uint8, &[5]).big_endian());
    tensors.push(Tensor::dense("float32.zstd.big_requested", DType::Float32, &[6]).zstd().big_endian());
    tensors
}

/// crc32c over the stored bytes: raw, zstd, big-endian raw, and empty.
fn crc32c() -> Vec<Tensor> {
    vec![
        Tensor::dense("raw", DType::Float32, &[4, 4]).crc32c(),
        Tensor::dense("zstd", DType::Int16, &[30, 20]).drifting(20, 1).zstd().crc32c(),
        Tensor::dense("raw.big", DType::Float64, &[3, 3]).big_endian().crc32c(),
        Tensor::dense("bool", DType::Bool, &[9]).crc32c(),
        Tensor::dense("empty", DType::Uint32, &[0]).crc32c(),
    ]
}

/// Custom index keys holding CBOR values of several major types. serde_cbor writes floats in
/// their shortest exact form, so 0.5 is a half and 1e-6 a double.
fn custom_fields() -> Vec<Tensor> {
    let text = |s: &str| Cbor::Text(s.to_owned());
    let all_kinds = BTreeMap::from([
        ("description".to_owned(), text("query projection, ünïcode ✓")),
        ("bits".to_owned(), Cbor::Integer(4)),
        ("offset_bias".to_owned(), Cbor::Integer(-3)),
        ("scale".to_owned(), Cbor::Float(0.5)),
        ("epsilon".to_owned(), Cbor::Float(1e-6)),
        ("block_shape".to_owned(), Cbor::Array(vec![Cbor::Integer(32), Cbor::Integer(32)])),
        (
            "quantization".to_owned(),
            Cbor::Map(BTreeMap::from([(text("group"), Cbor::Integer(128)), (text("scheme"), text("affine"))])),
        ),
        ("raw_bytes".to_owned(), Cbor::Bytes(vec![0xde, 0xad, 0xbe, 0xef])),
        ("transposed".to_owned(), Cbor::Bool(true)),
    ]);
    let note = BTreeMap::from([("note".to_owned(), text("after the checksum key"))]);
    vec![
        Tensor::dense("weight", DType::Float32, &[2, 2]).custom(all_kinds),
        Tensor::dense("plain", DType::Int8, &[3]),
        Tensor::dense("zstd.checked", DType::Uint16, &[4, 4]).zstd().crc32c().custom(note),
    ]
}

/// Tensors of shape `[]` (one element each).
fn scalar() -> Vec<Tensor> {
    vec![
        Tensor::dense("float32", DType::Float32, &[]),
        Tensor::dense("int64", DType::Int64, &[]),
        Tensor::dense("bool", DType::Bool, &[]),
        Tensor::dense("float64.big", DType::Float64, &[]).big_endian(),
    ]
}

/// Zero-element tensors between non-empty ones (they take no bytes, so two tensors share an
/// offset), one of them a zstd frame of nothing.
fn zero_size() -> Vec<Tensor> {
    vec![
        Tensor::dense("before", DType::Float32, &[3]),
        Tensor::dense("empty_1d", DType::Float32, &[0]),
        Tensor::dense("middle", DType::Int16, &[5]),
        Tensor::dense("empty_3d", DType::Float64, &[2, 0, 3]),
        Tensor::dense("empty_zstd", DType::Uint8, &[0]).zstd(),
        Tensor::dense("after", DType::Int32, &[2, 2]),
    ]
}

/// Names a careful reader must keep intact: dots, slashes, non-ASCII, spaces.
const MIXED_NAMES: [&str; 24] = [
    "model.embed_tokens.weight",
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.q_proj.bias",
    "model.layers.0.mlp.up_proj.weight",
    "model.layers.10.input_layernorm.weight",
    "encoder/block_1/conv2d/kernel:0",
    "encoder/block_1/conv2d/bias:0",
    "decoder//double/slash",
    "/leading/slash",
    "trailing.",
    "..",
    "a.b/c.d/e",
    "ümlaut.gewicht",
    "重み/層.0",
    "вес.смещение",
    "βάρος",
    "crab🦀.emoji",
    "name with spaces",
    "UPPER.lower.MiXeD",
    "x",
    "0",
    "-dash-first",
    "quote\"and'apostrophe",
    "back\\slash",
];

/// Many tensors in one file, cycling through dtypes, shapes, encodings, byte orders and
/// checksums.
fn mixed() -> Vec<Tensor> {
    let dtypes = all_dtypes();
    MIXED_NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut t = Tensor::dense(name, dtypes[i % dtypes.len()].clone(), SHAPES[i % SHAPES.len()]);
            if i % 3 == 1 {
                t = t.drifting(3, 1).zstd();
            } else if i % 4 == 2 {
                t = t.big_endian();
            }
            if i % 5 == 0 { t.crc32c() } else { t }
        })
        .collect()
}

fn u64s_le(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// CSR `[1, 4]` with one non-zero at column 2: indptr (2 × u64), indices (1 × u64) and
/// values (1 × u64) make 32 bytes, the dense size the reference writer insists on.
fn sparse_csr() -> Tensor {
    let (indptr, indices, values) = ([0, 1], [2], [0x0123_4567_89ab_cdef]);
    let blob = [u64s_le(&indptr), u64s_le(&indices), u64s_le(&values)].concat();
    Tensor::sparse("csr", DType::Uint64, &[1, 4], Layout::SparseCsr, blob)
}

/// COO `[3, 3]` with non-zeros at (0, 2), (1, 0), (2, 1): three records of (row, column,
/// value) as u64 make 72 bytes, the dense size.
fn sparse_coo() -> Tensor {
    let records = [[0, 2, 7], [1, 0, 1 << 40], [2, 1, u64::MAX]];
    let blob = records.iter().flat_map(|r| u64s_le(r)).collect();
    Tensor::sparse("coo", DType::Uint64, &[3, 3], Layout::SparseCoo, blob)
}
