//! What ExecuTorch files offer beyond reading their tensors: moving a program's constants into
//! a `.ptd` ([`externalize`]), its delegates' payloads ([`delegate_payloads`]), and the
//! flatbuffers as JSON ([`structure_json`], [`delegates_json`], what `dump` prints).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::formats::executorch::pte::{PteReader, rewrite};
use crate::source::Bytes;

pub use crate::dump::{delegates_json, structure_json};
pub use rewrite::Externalized;

/// Move the constants of each program `(pte, dest)` into the `.ptd` at `data`: each program
/// is written to its `dest` with its constants made EXTERNAL tensors, named as `ls` names
/// them (prefixed by each program's file stem when there are several: `<stem>/constant.3`);
/// identical tensors are stored once. Every program written is opened again with the `.ptd`
/// and verified whole before this returns.
pub fn externalize(programs: &[(&TensorFile, PathBuf)], data: &Path) -> Result<Vec<Externalized>> {
    let readers = programs
        .iter()
        .map(|(file, dest)| {
            let reader =
                file.reader_as::<PteReader>().ok_or_else(|| Error::usage("externalize needs .pte programs"))?;
            Ok((reader, dest.clone()))
        })
        .collect::<Result<Vec<_>>>()?;
    let results = rewrite::externalize(&readers, data)?;
    for r in &results {
        let written = crate::file::OpenOptions::new().data(data).open(&r.program)?;
        if let Some(problem) = written.verify().into_iter().next() {
            return Err(problem);
        }
    }
    Ok(results)
}

/// One delegate's payload in a program: the method, the delegate's index in it, the backend's
/// id (`XnnpackBackend`...) and the payload's bytes.
#[derive(Debug, Clone)]
pub struct DelegatePayload {
    /// The method the delegate belongs to.
    pub method: String,
    /// The delegate's index among the method's delegates.
    pub index: usize,
    /// The backend's id.
    pub id: String,
    /// The payload (a view of the file where it is stored in it).
    pub bytes: Bytes,
}

/// Every delegate payload of `file`, in method order; `None` when `file` is not an
/// ExecuTorch program.
pub fn delegate_payloads(file: &TensorFile) -> Result<Option<Vec<DelegatePayload>>> {
    let Some(reader) = file.reader_as::<PteReader>() else { return Ok(None) };
    let payloads = reader.delegate_payloads().map_err(|e| match file.path() {
        Some(p) => e.in_file(p),
        None => e,
    })?;
    Ok(Some(
        payloads.into_iter().map(|(method, index, id, bytes)| DelegatePayload { method, index, id, bytes }).collect(),
    ))
}
