//! `torch.save` files (`.pt`, `.pth`, `.bin`): a zip holding `data.pkl` (the pickled object)
//! and one record per storage under `data/`. Read with the restricted pickle machine (nothing
//! executes); nested dicts and lists of tensors flatten to dotted names. Written as a flat
//! state dict that `torch.load(weights_only=True)` loads.
//!
//! TorchScript archives (`torch.jit.save`) are the same zip with `constants.pkl` and the
//! model's code beside `data.pkl`: read by the same unit (`script.rs`), their tensors those of
//! the module's state dict; `info` says which kind a file is.

mod flatten;
mod read;
mod script;
pub(super) mod update;
mod write;

#[cfg(any(test, feature = "internals"))]
pub use flatten::flatten;
pub use read::{PtReader, PtTensor, StorageSource, looks_like as looks_like_legacy};
pub use write::PtWriter;

use crate::error::{Error, Need, Result};
use crate::formats::extent::{ZIP_MAGIC, zip_archive};
use crate::formats::pytorch::torch_has;
use crate::formats::{Caps, Extent, FormatUnit, plan_order};
use crate::model::TensorInfo;
use crate::source::Sample;

/// The `torch.save` unit. Any zip archive that is not a `.pt2` (nor an `.npz`, recognised
/// before it) is taken for one (its reader says what is missing), as is the format before
/// PyTorch 1.6.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "pt",
    title: "torch.save file",
    extensions: &["pt", "pth", "bin"],
    recognise: |probe| match probe.zip_names() {
        Some(names) => !crate::formats::pytorch::pt2::looks_like(names),
        None => looks_like_legacy(probe.head()),
    },
    open: |src| Ok(Box::new(PtReader::open(src)?)),
    writer: Some(|out, plan, options| Ok(Box::new(PtWriter::new(out, plan, options)?))),
    updater: Some(update::update),
    meta_editor: None,
    check_supported,
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps { holds_dtype: torch_has, ..Caps::PLAIN },
    extent: Extent {
        magics: &[ZIP_MAGIC, read::LEGACY_MAGIC],
        found_further: None,
        confirm: Some(is_checkpoint),
        measure,
    },
};

/// Whether a file detection took for a `torch.save` file is one: a zip archive without a
/// `data.pkl` is no checkpoint at all (any zip that no other format takes is given this unit).
fn is_checkpoint(s: &Sample) -> bool {
    if !s.head().starts_with(ZIP_MAGIC) {
        return true;
    }
    crate::zip::entry_names(s.head()).map_or(true, |names| names.iter().any(|n| n.ends_with("data.pkl")))
}

/// How long a `torch.save` file should be: a zip archive's entries say; the legacy format's
/// pickles say nothing until they are parsed.
fn measure(s: &Sample) -> Option<Need> {
    if s.head().starts_with(read::LEGACY_MAGIC) { None } else { zip_archive(s) }
}

/// Whether a `torch.save` file can store `info`: dense, of a dtype torch has; the error says
/// why not.
pub fn check_supported(info: &TensorInfo) -> Result<()> {
    if !info.layout().reads_dense() {
        return Err(Error::unsupported(format!(
            "tensorfile writes dense tensors into torch.save files, not {} ones",
            info.layout().describe()
        )));
    }
    if !torch_has(info.dtype()) {
        return Err(Error::unsupported(format!("torch has no dtype {}", info.dtype())));
    }
    Ok(())
}
