//! Replacing tensors of a file by those of another, keeping everything else (`update`): one
//! call for every format whose unit has an updater (ExecuTorch programs, `.pt2` archives,
//! `torch.save` files).

use std::path::Path;

use crate::error::{Error, Hint, Result};
use crate::file::TensorFile;
use crate::model::TensorInfo;

/// How [`update`] treats the weights file.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct UpdateOptions {
    /// Ignore tensors of the weights file that the program lacks (else an error).
    pub skip_unknown: bool,
}

impl UpdateOptions {
    /// Ignore (or not) tensors of the weights file that the program lacks.
    pub fn skip_unknown(mut self, skip: bool) -> Self {
        self.skip_unknown = skip;
        self
    }
}

/// What [`update`] replaced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateReport {
    /// The names of the tensors replaced, in the weights file's order.
    pub replaced: Vec<String>,
    /// Entries of the program that the weights file did not mention.
    pub unchanged: usize,
}

impl UpdateReport {
    /// The report as JSON (`update --json`, Python).
    pub fn to_json(&self, output: &Path) -> serde_json::Value {
        serde_json::json!({
            "output": output.display().to_string(),
            "replaced": self.replaced,
            "unchanged": self.unchanged,
        })
    }
}

/// Write `dest`: `program` with each tensor named in `weights` replaced by the one found
/// there (same dtype and shape), everything else unchanged. The result is opened again and
/// checked before this returns.
pub fn update(
    program: &TensorFile,
    weights: &TensorFile,
    dest: &Path,
    options: &UpdateOptions,
) -> Result<UpdateReport> {
    let format = program.format();
    let Some(updater) = format.unit().updater else {
        let what = match program.path() {
            Some(p) => format!("{} is a {format} file", p.display()),
            None => format!("this is a {format} file"),
        };
        let rewritable: Vec<_> =
            crate::Format::ALL.iter().filter(|f| f.unit().can_update()).map(|f| f.name()).collect();
        return Err(Error::usage(format!(
            "update rewrites files whose tensors are part of something more ({}); {what}",
            rewritable.join(", ")
        ))
        .with_hint(Hint::UseConvert));
    };
    updater(program, weights, dest, options).map_err(|e| match (e.path(), weights.path()) {
        (None, Some(w)) => e.in_file(w),
        _ => e,
    })
}

/// The tensors of `weights` matched by name to those of `file`: (index in `weights`, index in
/// `file`), in the weights file's order. A name `file` lacks is an error unless
/// `skip_unknown`, which leaves it out.
pub(crate) fn matched(file: &TensorFile, weights: &TensorFile, skip_unknown: bool) -> Result<Vec<(usize, usize)>> {
    let mut pairs = Vec::with_capacity(weights.entries().len());
    for (wi, w) in weights.entries().iter().enumerate() {
        let name = w.info().name();
        match file.index_of(name) {
            Some(i) => pairs.push((wi, i)),
            None if skip_unknown => {}
            None => {
                return Err(Error::usage(format!("the file has no tensor {name:?} (ls lists its names)"))
                    .for_tensor(name)
                    .with_hint(Hint::SkipUnknown));
            }
        }
    }
    Ok(pairs)
}

/// Why a new tensor cannot take the place of an old one: its dtype or shape differs.
pub(crate) fn mismatch(new: &TensorInfo, old: &TensorInfo) -> Error {
    Error::usage(format!(
        "new {} {:?} does not match the file's {} {:?}",
        new.dtype(),
        new.shape(),
        old.dtype(),
        old.shape()
    ))
    .for_tensor(new.name())
}
