//! Replacing tensors of a file by those of another, keeping everything else (`update`): one
//! call for every format whose unit has an updater (ExecuTorch programs, `.pt2` archives,
//! `torch.save` files).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Hint, Result};
use crate::file::TensorFile;
use crate::formats::{Output, Replacement, Replacements, UpdateOutputs};
use crate::output::{AtomicFile, StagedFile};

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
/// there (same dtype and shape), everything else unchanged. The format's updater writes the
/// new file (and any file beside it that it refers to) into temporary files; they replace
/// their destinations together once all are written, and the result is opened again and
/// verified before this returns.
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
    let in_weights = |e: Error| match (e.path(), weights.path()) {
        (None, Some(w)) => e.in_file(w),
        _ => e,
    };
    let pairs = matched(program, weights, options.skip_unknown).map_err(in_weights)?;
    let input = Replacements { file: program.reader(), weights: weights.reader(), pairs: &pairs };
    let mut outputs = Outputs { folder: folder_of(dest)?, dest: dest.to_path_buf(), staged: Vec::new() };
    updater(&input, &mut outputs).map_err(in_weights)?;
    outputs.commit()?;
    reopen_and_verify(program, dest)?;
    let replaced: Vec<String> = pairs.iter().map(|p| weights.entries()[p.source].info().name().to_string()).collect();
    Ok(UpdateReport { unchanged: program.entries().len().saturating_sub(replaced.len()), replaced })
}

/// Open the written file again and verify it whole (every tensor decoded): its first problem
/// is the update's error. Tensors the original file already held unreadable (an ONNX string
/// tensor...) stay so and are no problem of the update's.
pub(crate) fn reopen_and_verify(original: &TensorFile, dest: &Path) -> Result<()> {
    let known = |e: &Error| e.tensor().is_some_and(|t| original.unreadable().iter().any(|u| u.name() == t));
    match TensorFile::open(dest)?.verify().into_iter().find(|e| !known(e)) {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// The folder `dest` is written in, its links resolved.
fn folder_of(dest: &Path) -> Result<PathBuf> {
    let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    parent.canonicalize().map_err(|e| Error::from(e).in_file(parent))
}

/// An update's outputs: each written under a temporary name and staged; files beside the new
/// one are put in place first, the new file last.
struct Outputs {
    folder: PathBuf,
    dest: PathBuf,
    staged: Vec<StagedFile>,
}

impl Outputs {
    fn write(&mut self, path: &Path, fill: &mut dyn FnMut(&mut dyn Output) -> Result<()>) -> Result<()> {
        let mut file = AtomicFile::create(path)?;
        {
            let mut w = file.writer();
            fill(&mut w)?;
            w.flush().map_err(|e| Error::from(e).in_file(path))?;
        }
        self.staged.push(file.stage()?);
        Ok(())
    }

    /// Put every file in place: those beside first, the new file (written last) last.
    fn commit(self) -> Result<()> {
        self.staged.into_iter().try_for_each(StagedFile::commit)
    }
}

impl UpdateOutputs for Outputs {
    fn folder(&self) -> &Path {
        &self.folder
    }

    fn write_main(&mut self, fill: &mut dyn FnMut(&mut dyn Output) -> Result<()>) -> Result<()> {
        let dest = self.dest.clone();
        self.write(&dest, fill)
    }

    fn write_beside(&mut self, path: &Path, fill: &mut dyn FnMut(&mut dyn Output) -> Result<()>) -> Result<()> {
        self.write(path, fill)
    }
}

/// The tensors of `weights` matched by name to those of `file` (in the weights file's
/// order). A name `file` lacks is an error unless `skip_unknown`, which leaves it out.
fn matched(file: &TensorFile, weights: &TensorFile, skip_unknown: bool) -> Result<Vec<Replacement>> {
    let mut pairs = Vec::with_capacity(weights.entries().len());
    for (wi, w) in weights.entries().iter().enumerate() {
        let name = w.info().name();
        match file.index_of(name) {
            Some(i) => pairs.push(Replacement { source: wi, target: i }),
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
