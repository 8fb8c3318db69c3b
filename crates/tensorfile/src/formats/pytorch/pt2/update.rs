//! New weights for a `.pt2` archive: the same archive, record by record, with the storages of
//! the named tensors rewritten, those in nested `torch.save` files too, as `torch.save` files
//! are rewritten (`pt/update.rs`, whose patches and rewrite this uses).

use super::read::{Pt2Reader, TensorSource};
use crate::error::Result;
use crate::formats::pytorch::pt::update::{self as pt_update, Patch, Patches, check_pair, pt_patch, rewrite};
use crate::formats::{Replacements, UpdateOutputs};

/// The unit's updater (of `.pt2` archives, and of `torch.save` files as their own unit's
/// updater does): the archive with the storages of the tensors of the pairs rewritten with
/// their new values (same dtype and shape).
pub(crate) fn update(input: &Replacements<'_>, outputs: &mut dyn UpdateOutputs) -> Result<()> {
    let Some(pt2) = input.file_as::<Pt2Reader>() else { return pt_update::update(input, outputs) };
    let mut patches = Patches::default();
    for pair in input.pairs {
        let (w, e) = (input.new_entry(pair), input.old_entry(pair));
        check_pair(w, e)?;
        let (name, wi, i) = (w.info().name(), pair.source, pair.target);
        match &pt2.tensors()[i].source {
            TensorSource::Record { record, view } => {
                let p = Patch { name: name.to_string(), view: view.clone(), source: wi };
                patches.records.entry(record.name.clone()).or_default().push(p);
            }
            TensorSource::Pickled { nested, index, view } => {
                let (record_name, reader) = &pt2.nested()[*nested];
                let (storage, mut p) = pt_patch(reader, *index, name, wi)?;
                if let Some(view) = view {
                    p.view = view.clone();
                }
                let full = pt2.archive().record(record_name).map_or_else(|| record_name.clone(), |r| r.name.clone());
                patches.nested.entry(full).or_default().records.entry(storage).or_default().push(p);
            }
        }
    }
    let (archive, big_endian) = (pt2.archive(), pt2.summary_big_endian());
    outputs.write_main(&mut |w| rewrite(archive, &mut *w, &patches, input.weights, big_endian).map(drop))
}
