//! The updater holds one new tensor at a time: each is read when its range is written and
//! dropped before the next is read.

use std::any::Any;
use std::cell::Cell;
use std::io::Cursor;
use std::path::Path;

use prost::Message;

use super::update;
use crate::error::Result;
use crate::formats::onnx::proto::{GraphProto, ModelProto, TensorProto};
use crate::formats::onnx::read::OnnxReader;
use crate::formats::{Catalog, FileSummary, Format, FormatReader, Output, Replacement, Replacements, UpdateOutputs};
use crate::model::{DType, Entry, Storage, TensorData, TensorInfo};
use crate::source::Bytes;

thread_local! {
    /// New tensors read and not yet dropped, and the most there ever were.
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static MOST: Cell<usize> = const { Cell::new(0) };
}

/// A new tensor's bytes, counted while they live.
struct Counted(Vec<u8>);

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        LIVE.with(|l| l.set(l.get() - 1));
    }
}

/// Weights of float32 tensors of 4 elements, each read as bytes whose lives are counted.
struct Weights {
    catalog: Catalog,
}

impl FormatReader for Weights {
    fn format(&self) -> Format {
        Format::Safetensors
    }
    fn summary(&self) -> FileSummary {
        FileSummary::default()
    }
    fn catalog(&self) -> &Catalog {
        &self.catalog
    }
    fn read(&self, index: usize, _verify: bool) -> Result<TensorData> {
        let live = LIVE.with(|l| {
            l.set(l.get() + 1);
            l.get()
        });
        MOST.with(|m| m.set(m.get().max(live)));
        let bytes: Vec<u8> = (0..4).flat_map(|k| (index as f32 * 10.0 + k as f32).to_le_bytes()).collect();
        Ok(TensorData::dense(Bytes::from_owner(Counted(bytes))))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The new model, in memory.
struct Written {
    folder: &'static Path,
    model: Vec<u8>,
}

impl UpdateOutputs for Written {
    fn folder(&self) -> &Path {
        self.folder
    }
    fn write_main(&mut self, fill: &mut dyn FnMut(&mut dyn Output) -> Result<()>) -> Result<()> {
        let mut out = Cursor::new(Vec::new());
        fill(&mut out)?;
        self.model = out.into_inner();
        Ok(())
    }
    fn write_beside(&mut self, path: &Path, _fill: &mut dyn FnMut(&mut dyn Output) -> Result<()>) -> Result<()> {
        panic!("no external data to write: {}", path.display())
    }
}

#[test]
fn one_new_tensor_is_held_at_a_time() {
    let names = ["a", "b", "c"];
    let initializer = names
        .iter()
        .map(|n| TensorProto {
            name: n.to_string(),
            dims: vec![4],
            data_type: 1,
            raw_data: Some(vec![0u8; 16].into()),
            ..TensorProto::default()
        })
        .collect();
    let model = ModelProto {
        ir_version: 10,
        graph: Some(GraphProto { initializer, ..GraphProto::default() }),
        ..ModelProto::default()
    };
    let reader = OnnxReader::open(Bytes::from_vec(model.encode_to_vec())).unwrap();
    let mut catalog = Catalog::default();
    for n in names {
        catalog.push(Entry::new(TensorInfo::dense(n, DType::Float32, vec![4]), Storage::new(0, 16)).unwrap());
    }
    let weights = Weights { catalog };
    let pairs: Vec<Replacement> = (0..3).map(|i| Replacement { source: i, target: i }).collect();
    let mut out = Written { folder: Path::new("."), model: Vec::new() };
    update(&Replacements { file: &reader, weights: &weights, pairs: &pairs }, &mut out).unwrap();
    assert_eq!(MOST.with(Cell::get), 1, "new tensors held at once");
    assert_eq!(LIVE.with(Cell::get), 0);
    let new = OnnxReader::open(Bytes::from_vec(out.model)).unwrap();
    for (i, n) in names.iter().enumerate() {
        let want: Vec<u8> = (0..4).flat_map(|k| (i as f32 * 10.0 + k as f32).to_le_bytes()).collect();
        let index = new.entries().iter().position(|e| e.info().name() == *n).unwrap();
        assert_eq!(new.read(index, true).unwrap().as_dense().unwrap().to_vec(), want, "{n}");
    }
}
