//! A file's whole structure as JSON, for formats whose index is more than a list of tensors:
//! the program of an ExecuTorch `.pte`, the named-data table of a `.ptd` (what `dump`
//! prints, like `flatc --json`).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::flatbuf;
use crate::formats::executorch::ptd::PtdReader;
use crate::formats::executorch::pte::PteReader;
use crate::formats::executorch::{flat_tensor_schema, program_schema};

/// The structure of `file` as JSON: tables as objects of their fields, enums by name, unions
/// as `<field>_type` beside `<field>`. Byte arrays longer than `byte_limit` are summarised by
/// size and sha256 (`None`: listed whole). A format without such a structure is a usage error.
pub fn structure_json(file: &TensorFile, byte_limit: Option<usize>) -> Result<Value> {
    if let Some(pte) = file.reader_as::<PteReader>() {
        return Ok(flatbuf::to_json(program_schema(), &pte.program().root, byte_limit));
    }
    if let Some(ptd) = file.reader_as::<PtdReader>() {
        return Ok(flatbuf::to_json(flat_tensor_schema(), ptd.root(), byte_limit));
    }
    let what = match file.path() {
        Some(p) => format!("{} is a {} file", p.display(), file.format()),
        None => format!("this is a {} file", file.format()),
    };
    Err(Error::usage(format!("dump shows the flatbuffers of ExecuTorch files (.pte, .ptd); {what}")))
}
