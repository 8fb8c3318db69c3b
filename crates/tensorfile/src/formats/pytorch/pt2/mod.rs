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
pub mod update;

pub use read::{Pt2Reader, Pt2Tensor, TensorSource};

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

/// Why tensors cannot be converted into a `.pt2`.
pub const NOT_A_CONTAINER: &str =
    "a .pt2 holds programs, not just tensors: use `tensorfile update` to change its weights";
