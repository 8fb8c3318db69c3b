//! PyTorch `.pt2` archives (`torch.export.save`, `package_pt2`, AOTInductor packages): a zip
//! of model definitions (`models/<m>.json`), weights and constants, sample inputs and
//! compiled artifacts.
//!
//! Layouts read: torch ≥ 2.9 (records that are whole storages, described by
//! `data/weights/<m>_weights_config.json` and `data/constants/<m>_constants_config.json`, or
//! the spec's `_model_param_config.json` / `_model_constants_config.json` names), torch 2.8
//! (`data/weights/<m>.pt`, a `torch.save` file), torch 2.3–2.7 (`serialized_*` records, no
//! root folder), and AOTInductor packages (`data/aotinductor/<m>/`). Tensors are named by
//! their fully qualified names, prefixed by `<model>/` in archives of several models.

mod aoti;
mod config;
mod model;
mod read;
mod summary;
mod sympy;
mod tensors;
pub(crate) mod update;

#[cfg(test)]
mod tests;

pub use read::Pt2Reader;
#[cfg(any(test, feature = "internals"))]
pub use read::{Pt2Tensor, TensorSource};

use super::torch_has;
use crate::error::Error;
use crate::formats::extent::{ZIP_MAGIC, zip_archive};
use crate::formats::{Caps, Extent, FormatUnit, plan_order};
use crate::model::LayoutKind;

/// Whether the entry names of a zip are those of a `.pt2` archive.
pub fn looks_like(names: &[String]) -> bool {
    names.iter().any(|n| {
        let rest = n.split_once('/').map_or(n.as_str(), |(_, r)| r);
        rest == "archive_format"
            || n == "serialized_exported_program.json"
            || rest.starts_with("models/")
            || rest.starts_with("data/aotinductor/")
    })
}

/// The `.pt2` unit: read, and updated in place of its weights; not written from tensors
/// alone.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "pt2",
    title: "PyTorch archive",
    extensions: &["pt2"],
    recognise: |probe| probe.zip_names().is_some_and(looks_like),
    open: |src| Ok(Box::new(Pt2Reader::open(src)?)),
    writer: None,
    updater: Some(update::update),
    meta_editor: None,
    check_supported: |_| Err(Error::unsupported(NOT_A_CONTAINER)),
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps { holds_dtype: torch_has, layouts: &[LayoutKind::Dense, LayoutKind::Strided], ..Caps::PLAIN },
    extent: Extent { magics: &[ZIP_MAGIC], found_further: None, confirm: None, measure: zip_archive },
};

/// Why tensors cannot be converted into a `.pt2`.
pub const NOT_A_CONTAINER: &str =
    "a .pt2 holds programs, not just tensors: use `tensorfile update` to change its weights";
