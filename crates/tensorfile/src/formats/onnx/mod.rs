//! ONNX models: a protobuf `ModelProto` (`onnx/onnx.proto` of the ONNX project is the spec)
//! whose graph holds the weights as initializers.
//!
//! Recognised from content (ONNX has no magic bytes): serializers write a message's fields in
//! the order of their numbers, so a model starts with `ir_version` (field 1, a varint), then
//! only the fields numbered 2 to 6 (producer, domain, model version, doc string) in order,
//! then the graph (field 7). [`looks_like`] walks those fields in the first bytes and accepts
//! only that shape (see there).
//!
//! Read: every initializer of the graph and of its subgraphs (the `If`, `Loop` and `Scan`
//! bodies, any graph attribute), every sparse initializer (as a sparse COO tensor), and the
//! tensor of every `Constant` node (named by the node's output), each in whichever form it is
//! stored: `raw_data`, the typed fields (`float_data`, `int32_data` holding 16-, 8-, 4- and
//! 2-bit values as ONNX packs them, `int64_data`, `double_data`, `uint64_data`) or external data (a
//! file in the model's folder, at an offset, of a length). Dtypes map to [`DType`](crate::model::DType) by ONNX's
//! `TensorProto.DataType` numbers (`dtypes.rs`); strings, packed 4- and 2-bit elements that end
//! inside a byte (ONNX pads it) and segmented tensors are listed as unreadable with their reason.
//!
//! Protobuf is decoded with `prost` into the structs of `proto.rs` (only the fields read;
//! prost checks every length against the input and skips the rest). Zero-copy: the model's
//! bytes (the map) are handed to prost as a `bytes::Bytes` that owns our [`Bytes`](crate::source::Bytes), so every
//! `raw_data` decodes as a slice of the map; its offset in the file is its address minus the
//! map's. Reading such a tensor is a slice of the map, as in every other format. Typed fields
//! are converted to little-endian bytes when the file is opened (they are small: producers
//! use them for a few values). Nesting is bounded twice: prost's recursion limit and
//! [`crate::limits::MAX_NESTING`] graphs deep.
//!
//! External data: `location` must be a relative path of plain components; the file it names
//! must resolve (symlinks followed) inside the model's folder; `offset` and `length` must lie
//! inside it, and `length` must be the tensor's size; anything else refuses the model with
//! `unsafe-path`, `out-of-bounds` or `size-mismatch`. A model read from a URL or from memory
//! has no folder: its external tensors are unreadable, with the reason.
//!
//! Names: an initializer or `Constant` output keeps its name; a subgraph's tensor whose name
//! is already taken (ONNX forbids it, files may still do it) is named
//! `<node>/<attribute>/<name>` after the node and attribute holding its graph, with `~2`,
//! `~3`... appended if that is taken too.
//!
//! Updated (`update.rs`): initializers replaced by name (same dtype and shape), their bytes
//! rewritten where they are: in the model (`raw_data`, same length, every other byte kept) or
//! in their external data file, each file written atomically; weights that were external
//! stay external, so a model never grows past protobuf's 2 GiB limit. Nothing is written as
//! ONNX otherwise (no writer).

mod dtypes;
mod extent;
mod external;
mod graph;
mod proto;
mod read;
mod recognise;
mod summary;
#[cfg(test)]
mod tests;
mod update;

pub use read::OnnxReader;
pub use recognise::looks_like;

use crate::error::{Error, Result};
use crate::formats::{Caps, Extent, FormatUnit, plan_order};
use crate::model::{LayoutKind, TensorInfo};

/// The ONNX unit: read and updated, never written from scratch.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "onnx",
    title: "ONNX model",
    extensions: &["onnx"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(OnnxReader::open(src)?)),
    writer: None,
    updater: Some(update::update),
    meta_editor: None,
    check_supported,
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps {
        holds_dtype: |d| dtypes::onnx_code(d).is_some(),
        layouts: &[LayoutKind::Dense, LayoutKind::SparseCoo],
        file_metadata: true,
        ..Caps::PLAIN
    },
    extent: Extent { magics: &[], found_further: None, confirm: None, measure: extent::measure },
};

/// ONNX models are read and updated, not written: the error says so.
fn check_supported(_info: &TensorInfo) -> Result<()> {
    Err(Error::unsupported(
        "tensorfile does not write ONNX models (an exporter makes them); `update` replaces the weights of one",
    ))
}
