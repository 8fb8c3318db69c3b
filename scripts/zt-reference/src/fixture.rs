//! Writing one fixture with the reference writer, and recording what the reference reader
//! reads back from it.

use std::collections::BTreeMap;
use std::error::Error;
use std::fs;
use std::path::Path;

use serde_cbor::Value as Cbor;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use ztensor::{
    ChecksumAlgorithm, DType, DataEndianness, Encoding, Layout, TensorMetadata, ZTensorReader, ZTensorWriter,
};

use crate::data::{self, Lcg};

pub type Result<T> = std::result::Result<T, Box<dyn Error>>;

const PRODUCER: &str = "ztensor 0.1.0 (Rust crate)";

/// One `add_tensor` call: every argument the reference writer takes.
pub struct Tensor {
    name: String,
    shape: Vec<u64>,
    dtype: DType,
    layout: Layout,
    encoding: Encoding,
    data: Vec<u8>,
    endianness: Option<DataEndianness>,
    checksum: ChecksumAlgorithm,
    custom: Option<BTreeMap<String, Cbor>>,
}

impl Tensor {
    /// A dense, raw, little-endian tensor without checksum, filled with random elements
    /// seeded by its name.
    pub fn dense(name: &str, dtype: DType, shape: &[u64]) -> Self {
        let count = shape.iter().product::<u64>() as usize;
        let data = data::random(&dtype, count, &mut Lcg::new(name));
        Tensor::new(name, dtype, shape, Layout::Dense, data)
    }

    /// A raw little-endian sparse tensor whose blob, in the reference's own layout, is `blob`.
    pub fn sparse(name: &str, dtype: DType, shape: &[u64], layout: Layout, blob: Vec<u8>) -> Self {
        Tensor::new(name, dtype, shape, layout, blob)
    }

    fn new(name: &str, dtype: DType, shape: &[u64], layout: Layout, data: Vec<u8>) -> Self {
        Tensor {
            name: name.to_owned(),
            shape: shape.to_vec(),
            dtype,
            layout,
            encoding: Encoding::Raw,
            data,
            endianness: None,
            checksum: ChecksumAlgorithm::None,
            custom: None,
        }
    }

    /// Replaces the contents with compressible ones (see `data::drifting`).
    pub fn drifting(self, period: usize, edits: usize) -> Self {
        let count = self.data.len() / self.dtype.byte_size().unwrap();
        let data = data::drifting(&self.dtype, count, period, edits, &mut Lcg::new(&self.name));
        Tensor { data, ..self }
    }

    pub fn zstd(self) -> Self {
        Tensor { encoding: Encoding::Zstd, ..self }
    }

    pub fn big_endian(self) -> Self {
        Tensor { endianness: Some(DataEndianness::Big), ..self }
    }

    pub fn crc32c(self) -> Self {
        Tensor { checksum: ChecksumAlgorithm::Crc32c, ..self }
    }

    pub fn custom(self, fields: BTreeMap<String, Cbor>) -> Self {
        Tensor { custom: Some(fields), ..self }
    }
}

/// Writes `tensors` to `dir/file` with the reference writer, then `dir/file.expected.json`
/// from what the reference reader returns for that file.
pub fn write(dir: &Path, file: &str, tensors: Vec<Tensor>) -> Result<()> {
    let path = dir.join(file);
    let mut writer = ZTensorWriter::create(&path)?;
    for t in tensors {
        writer.add_tensor(
            &t.name,
            t.shape,
            t.dtype,
            t.layout,
            t.encoding,
            t.data,
            t.endianness,
            t.checksum,
            t.custom,
        )?;
    }
    writer.finalize()?;

    let record = json!({ "producer": PRODUCER, "file": file, "tensors": read_back(&path)? });
    let mut text = String::new();
    pretty(&record, 0, &mut text);
    text.push('\n');
    fs::write(dir.join(format!("{file}.expected.json")), text)?;
    Ok(())
}

/// JSON indented by two spaces, except that arrays holding no objects (shapes, indices) stay
/// on one line: the layout `scripts/fixtures` writes too.
fn pretty(value: &Value, indent: usize, out: &mut String) {
    let pad = |n: usize| " ".repeat(n);
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push_str("{\n");
            for (i, (key, v)) in map.iter().enumerate() {
                let comma = if i + 1 < map.len() { "," } else { "" };
                out.push_str(&format!("{}{}: ", pad(indent + 2), Value::from(key.as_str())));
                pretty(v, indent + 2, out);
                out.push_str(&format!("{comma}\n"));
            }
            out.push_str(&format!("{}}}", pad(indent)));
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            out.push_str("[\n");
            for (i, v) in items.iter().enumerate() {
                out.push_str(&pad(indent + 2));
                pretty(v, indent + 2, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&format!("{}]", pad(indent)));
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                out.push_str(if i > 0 { ", " } else { "" });
                pretty(v, indent, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The record of every tensor in `path`, in index order, as the reference reader sees it.
fn read_back(path: &Path) -> Result<Vec<Value>> {
    let mut reader = ZTensorReader::open(path)?;
    let index = reader.list_tensors().clone();
    index.iter().map(|meta| tensor_record(&mut reader, meta)).collect()
}

fn tensor_record(
    reader: &mut ZTensorReader<impl std::io::Read + std::io::Seek>,
    meta: &TensorMetadata,
) -> Result<Value> {
    // Native byte order is little-endian (main.rs refuses to build otherwise), so these are the
    // decoded little-endian contiguous elements, or the sparse blob as stored.
    let bytes = reader.read_raw_tensor_data(meta)?;
    let mut record = json!({
        "name": meta.name,
        "dtype": meta.dtype.to_string_key(),
        "shape": meta.shape,
        "layout": layout_name(&meta.layout),
    });
    let fields = record.as_object_mut().unwrap();
    match meta.layout {
        Layout::Dense => {}
        Layout::SparseCoo => {
            let coo = reader.read_coo_tensor::<u64>(&meta.name)?;
            // The reader gives one index tuple per non-zero; the record has one row per dimension.
            let rows: Vec<Vec<u64>> =
                (0..meta.shape.len()).map(|d| coo.indices.iter().map(|ix| ix[d]).collect()).collect();
            fields.insert("nnz".into(), json!(coo.values.len()));
            fields.insert("indices".into(), json!(rows));
            fields.insert("values_sha256".into(), json!(sha256_u64s(&coo.values)));
        }
        Layout::SparseCsr => {
            let csr = reader.read_csr_tensor::<u64>(&meta.name)?;
            fields.insert("nnz".into(), json!(csr.values.len()));
            fields.insert("indptr".into(), json!(csr.indptr));
            fields.insert("indices".into(), json!(csr.indices));
            fields.insert("values_sha256".into(), json!(sha256_u64s(&csr.values)));
        }
    }
    fields.insert("sha256".into(), json!(hex::encode(Sha256::digest(&bytes))));
    Ok(record)
}

fn layout_name(layout: &Layout) -> &'static str {
    match layout {
        Layout::Dense => "dense",
        Layout::SparseCoo => "sparse_coo",
        Layout::SparseCsr => "sparse_csr",
    }
}

fn sha256_u64s(values: &[u64]) -> String {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    hex::encode(Sha256::digest(&bytes))
}
