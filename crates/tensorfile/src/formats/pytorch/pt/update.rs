//! New weights for a `torch.save` file: the same archive, record by record, with the storages
//! of the named tensors rewritten (new values scattered into each tensor's view of its
//! storage, so tied weights and views keep sharing their storage), and nested `torch.save`
//! files rewritten the same way. Records are written stored, each at a multiple of 64 bytes,
//! under the original root folder; memory holds one record at a time. `.pt2` archives are
//! rewritten with the same patches (`pt2/update.rs`).

use std::collections::HashMap;
use std::io::Write;

use super::read::{PtReader, StorageSource};
use crate::error::{Error, Result};
use crate::formats::pytorch::View;
use crate::formats::{FormatReader, Replacements, UpdateOutputs, mismatch};
use crate::model::Entry;
use crate::swap;
use crate::zip::{Archive, ZipWriter};

/// Why an update was given a file it cannot rewrite.
const NOT_AN_ARCHIVE: &str = "this update is for .pt2 archives and torch.save files";

/// One tensor to rewrite: its view of a storage record and where its new bytes are.
pub(in crate::formats::pytorch) struct Patch {
    pub(in crate::formats::pytorch) name: String,
    pub(in crate::formats::pytorch) view: View,
    /// Entry index in the weights file.
    pub(in crate::formats::pytorch) source: usize,
}

/// Patches by (full) record name, at one archive level.
#[derive(Default)]
pub(in crate::formats::pytorch) struct Patches {
    pub(in crate::formats::pytorch) records: HashMap<String, Vec<Patch>>,
    /// For `torch.save` files inside the archive: their own patches, by record name.
    pub(in crate::formats::pytorch) nested: HashMap<String, Patches>,
}

/// `w`, the new tensor, against `e`, the one it replaces: same dtype and shape.
pub(in crate::formats::pytorch) fn check_pair(w: &Entry, e: &Entry) -> Result<()> {
    if (w.info().dtype(), w.info().shape()) != (e.info().dtype(), e.info().shape()) {
        return Err(mismatch(w.info(), e.info()));
    }
    Ok(())
}

/// Where a tensor of a `torch.save` file is: its storage record and view.
pub(in crate::formats::pytorch) fn pt_patch(
    reader: &PtReader,
    index: usize,
    name: &str,
    source: usize,
) -> Result<(String, Patch)> {
    let t = &reader.tensors()[index];
    match &t.storage {
        StorageSource::Record(r) => {
            Ok((r.name.clone(), Patch { name: name.to_string(), view: t.view.clone(), source }))
        }
        StorageSource::Raw { .. } => Err(Error::unsupported(
            "updating a torch.save file in the format before PyTorch 1.6: convert it to .pt first",
        )),
    }
}

fn zip_of(reader: &PtReader) -> Result<&Archive> {
    reader.archive().ok_or_else(|| {
        Error::unsupported("updating a torch.save file in the format before PyTorch 1.6: convert it to .pt first")
    })
}

/// The unit's updater (of `torch.save` files): the archive with the storages of the tensors
/// of the pairs rewritten with their new values (same dtype and shape).
pub(crate) fn update(input: &Replacements<'_>, outputs: &mut dyn UpdateOutputs) -> Result<()> {
    let mut patches = Patches::default();
    for pair in input.pairs {
        let w = input.new_entry(pair);
        check_pair(w, input.old_entry(pair))?;
        let Some(pt) = input.file_as::<PtReader>() else { return Err(Error::usage(NOT_AN_ARCHIVE)) };
        let (storage, p) = pt_patch(pt, pair.target, w.info().name(), pair.source)?;
        patches.records.entry(storage).or_default().push(p);
    }
    let Some(pt) = input.file_as::<PtReader>() else { return Err(Error::usage(NOT_AN_ARCHIVE)) };
    let (archive, big_endian) = (zip_of(pt)?, pt.big_endian());
    outputs.write_main(&mut |w| rewrite(archive, &mut *w, &patches, input.weights, big_endian).map(drop))
}

/// Copy `archive` into `out`, applying `patches`.
pub(in crate::formats::pytorch) fn rewrite<W: Write>(
    archive: &Archive,
    out: W,
    patches: &Patches,
    weights: &dyn FormatReader,
    big_endian: bool,
) -> Result<W> {
    let mut zip = ZipWriter::new(out, "");
    for e in archive.entries() {
        if let Some(list) = patches.records.get(&e.name) {
            let mut storage = archive.read(e, true)?.to_vec();
            for p in list {
                p.view.check_within(storage.len() as u64)?;
                p.view.scatter(&mut storage, &stored_bytes(weights, p, big_endian)?);
            }
            // Tensors sharing a storage (tied weights, views) must agree where they overlap.
            for p in list {
                if p.view.gather(&storage) != stored_bytes(weights, p, big_endian)? {
                    let others: Vec<&str> = list.iter().filter(|q| q.name != p.name).map(|q| q.name.as_str()).collect();
                    return Err(Error::usage(format!(
                        "{} shares its storage with {} but was given other values",
                        p.name,
                        others.join(", ")
                    ))
                    .for_tensor(&p.name));
                }
            }
            zip.add(&e.name, &storage)?;
        } else if let Some(inner) = patches.nested.get(&e.name) {
            let nested = PtReader::open(archive.read(e, true)?)?;
            let bytes = rewrite(zip_of(&nested)?, Vec::new(), inner, weights, nested.big_endian())?;
            zip.add(&e.name, &bytes)?;
        } else {
            zip.add(&e.name, &archive.read(e, true)?)?;
        }
    }
    zip.finish()
}

/// Tensor `p.source` of `weights` in the byte order of the file being written.
fn stored_bytes(weights: &dyn FormatReader, p: &Patch, big_endian: bool) -> Result<Vec<u8>> {
    let data =
        weights.read(p.source, true).map_err(|e| if e.tensor().is_none() { e.for_tensor(&p.name) } else { e })?;
    let bytes = data.as_dense()?;
    let unit = p.view.dtype.swap_unit();
    Ok(if big_endian && unit > 1 { swap::swapped(bytes, unit) } else { bytes.to_vec() })
}
