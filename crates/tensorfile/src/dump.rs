//! A file's whole structure as JSON, for formats whose index is more than a list of tensors:
//! the program of an ExecuTorch `.pte`, the named-data table of a `.ptd` (what `dump`
//! prints, like `flatc --json`).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::flatbuf;
use crate::formats::executorch::ptd::PtdReader;
use crate::formats::executorch::pte::PteReader;
use crate::formats::executorch::program_schema;

/// The structure of `file` as JSON: tables as objects of their fields, enums by name, unions
/// as `<field>_type` beside `<field>`. Byte arrays longer than `byte_limit` are summarised by
/// size and sha256 (`None`: listed whole). A format without such a structure is a usage error.
pub fn structure_json(file: &TensorFile, byte_limit: Option<usize>) -> Result<Value> {
    if let Some(pte) = file.reader_as::<PteReader>() {
        return Ok(flatbuf::to_json(program_schema(), &pte.program().root, byte_limit));
    }
    if let Some(ptd) = file.reader_as::<PtdReader>() {
        return Ok(flatbuf::to_json(ptd.schema(), ptd.root(), byte_limit));
    }
    let what = match file.path() {
        Some(p) => format!("{} is a {} file", p.display(), file.format()),
        None => format!("this is a {} file", file.format()),
    };
    Err(Error::usage(format!("dump shows the flatbuffers of ExecuTorch files (.pte, .ptd); {what}")))
}

/// The decoded delegate payloads of a program as JSON: one object per XNNPACK delegate, in
/// method and delegate order, `{"method", "delegate", "backend", "graph"}` with the graph of
/// `Graph::to_json`, or `"error"`
/// saying why the payload could not be decoded. Delegates of other backends are listed with
/// their payload's size only. Anything but a `.pte` is a usage error.
pub fn delegates_json(file: &TensorFile) -> Result<Value> {
    use crate::formats::executorch::xnnpack::BACKEND_ID;
    let pte = file.reader_as::<PteReader>().ok_or_else(|| {
        Error::usage(format!("--delegates shows the delegates of a .pte program; this is a {} file", file.format()))
    })?;
    let mut graphs = pte.xnnpack_graphs().iter();
    let mut out = Vec::new();
    for (method, index, backend, bytes) in pte.delegate_payloads()? {
        let mut d = serde_json::json!({"method": method, "delegate": index, "backend": backend, "bytes": bytes.len()});
        if backend == BACKEND_ID {
            match graphs.next().map(|g| &g.graph) {
                Some(Ok(g)) => d["graph"] = g.to_json(),
                Some(Err(e)) => d["error"] = Value::from(e.to_string()),
                None => d["error"] = Value::from("not decoded"),
            }
        }
        out.push(d);
    }
    Ok(Value::Array(out))
}
