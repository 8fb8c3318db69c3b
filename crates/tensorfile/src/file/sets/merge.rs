//! Several tensor files merged into one, whatever their formats: the inputs of
//! `convert IN... OUT`. Each input is a [`TensorFile`] of its own (a file, a sharded
//! checkpoint, a URL), so a safetensors checkpoint and a `.pt` merge as well as two shards.

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::limits::MAX_SHARDS;
use crate::model::{Chunks, MetaValue, TensorData, Unreadable};

/// Opened files read as one: every entry of each, in input order, each read from the file
/// that holds it (errors name that file). A name in two inputs is an error naming both.
pub struct MergedSet {
    /// Each input as it was named, and the file opened from it.
    inputs: Vec<(PathBuf, TensorFile)>,
    /// Where each input's entries start among `entries`, and the total at the end.
    starts: Vec<usize>,
    catalog: Catalog,
    size: u64,
}

impl MergedSet {
    /// Merge `inputs`, (the path or URL each was opened from, the file), in that order.
    pub fn new(inputs: Vec<(PathBuf, TensorFile)>) -> Result<MergedSet> {
        if inputs.is_empty() {
            return Err(Error::usage("no files to merge"));
        }
        if inputs.len() > MAX_SHARDS {
            return Err(Error::usage(format!("more than {MAX_SHARDS} files to merge")));
        }
        check_names(&inputs)?;
        let count: usize = inputs.iter().map(|(_, f)| f.entries().len()).sum();
        Catalog::check_count(count as u64)?;
        let mut entries = Vec::with_capacity(count);
        let mut unreadable = Vec::new();
        let mut starts = Vec::with_capacity(inputs.len() + 1);
        let mut size = 0u64;
        for (path, file) in &inputs {
            starts.push(entries.len());
            entries.extend_from_slice(file.entries());
            unreadable.extend(file.unreadable().iter().map(|u| {
                let error = u.error().clone().in_file(path);
                Unreadable::new(u.name().to_string(), u.dtype().to_string(), u.shape().to_vec(), error)
            }));
            size = size.saturating_add(file.size());
        }
        starts.push(entries.len());
        Ok(MergedSet { inputs, starts, catalog: (entries, unreadable).into(), size })
    }

    /// The file holding entry `index`: the input, or the shard of a sharded input.
    pub fn file_of(&self, index: usize) -> Option<&Path> {
        let (path, file, local) = self.locate(index)?;
        Some(file.shard_of(local).unwrap_or(path))
    }

    /// Bytes of every input together.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The input holding entry `index`, and the entry's index in it.
    fn locate(&self, index: usize) -> Option<(&Path, &TensorFile, usize)> {
        let k = self.starts[1..].partition_point(|&end| end <= index);
        let (path, file) = self.inputs.get(k)?;
        Some((path, file, index - self.starts[k]))
    }

    fn input_for(&self, index: usize) -> Result<(&Path, &TensorFile, usize)> {
        self.locate(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))
    }
}

/// No name, readable or not, is in two inputs.
fn check_names(inputs: &[(PathBuf, TensorFile)]) -> Result<()> {
    let mut holder: HashMap<&str, usize> = HashMap::new();
    for (k, (path, file)) in inputs.iter().enumerate() {
        let names = file.entries().iter().map(|e| e.info().name()).chain(file.unreadable().iter().map(|u| u.name()));
        for name in names {
            match holder.insert(name, k) {
                Some(first) if first != k => {
                    let detail = format!(
                        "{} and {} both hold {name:?}: a merge takes each name from one file",
                        inputs[first].0.display(),
                        path.display()
                    );
                    return Err(Error::invalid(Rule::DuplicateName, detail).for_tensor(name));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

impl FormatReader for MergedSet {
    /// The first input's format.
    fn format(&self) -> Format {
        self.inputs[0].1.format()
    }

    /// Each input's metadata keys not seen before (the first input's value wins); the first
    /// input's version; details: the inputs, each with its format.
    fn summary(&self) -> FileSummary {
        let mut metadata: Vec<(String, MetaValue)> = Vec::new();
        let mut version = String::new();
        for (k, (_, file)) in self.inputs.iter().enumerate() {
            let summary = file.summary();
            if k == 0 {
                version = summary.version;
            }
            for (key, value) in summary.metadata {
                if !metadata.iter().any(|(seen, _)| *seen == key) {
                    metadata.push((key, value));
                }
            }
        }
        let inputs = self
            .inputs
            .iter()
            .map(|(path, file)| MetaValue::Text(format!("{} ({})", path.display(), file.format())))
            .collect();
        let details = vec![("merged".to_string(), MetaValue::Array(inputs))];
        FileSummary { version, metadata, details, structure: None }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let (path, file, local) = self.input_for(index)?;
        let data = if verify { file.read_verified(local) } else { file.read_index(local) };
        data.map_err(|e| e.in_file(path))
    }

    fn read_chunks(&self, index: usize, verify: bool) -> Result<Chunks<'_>> {
        let (path, file, local) = self.input_for(index)?;
        let pieces = file.read_chunks(local, verify).map_err(|e| e.in_file(path))?;
        Ok(Box::new(pieces.map(move |piece| piece.map_err(|e| e.in_file(path)))))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn check(&self) -> Vec<Error> {
        let per_input = self.inputs.iter().map(|(p, f)| f.reader().check().into_iter().map(move |e| e.in_file(p)));
        per_input.flatten().collect()
    }

    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        let mut problems = Vec::new();
        let mut checked = 0;
        for (path, file) in &self.inputs {
            let (found, n) = file.reader().verify_checksums();
            problems.extend(found.into_iter().map(|e| e.in_file(path)));
            checked += n;
        }
        (problems, checked)
    }
}
