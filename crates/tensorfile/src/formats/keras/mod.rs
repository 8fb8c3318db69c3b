//! Keras 3's `.keras` file (`model.save("x.keras")`): a zip archive of `metadata.json` (the
//! Keras version and the date saved), `config.json` (the model as Keras serializes it: its
//! class, its layers, how it was compiled) and `model.weights.h5` (every variable, in the HDF5
//! layout of `model.save_weights`), plus `assets/` for layers that keep files. The layout is
//! Keras's `keras/src/saving/saving_lib.py`; see docs/keras.md.
//!
//! Recognised from the archive's entry names: `config.json` beside `metadata.json`, or
//! `model.weights.h5` beside either (a `torch.save` file keeps its records under a root folder,
//! an `.npz` only `.npy` members). The weights are read by the HDF5 reader (`formats/hdf5/`)
//! on the weights member and named as it names them (`layers/dense/vars/0`), so that a
//! `.keras` lists what the same model's `.weights.h5` lists. A stored member (what Keras
//! writes) is read in place: for a local file a window of the map, its tensors slices of it; a
//! deflated one (an archive re-zipped by another tool) is inflated into memory, bounded by its
//! declared size. `config.json` and `metadata.json` make `info`'s description of the model; a
//! malformed one is reported by `verify` with its rule and the weights stay readable. A
//! missing or broken weights member refuses the file, naming the member and the rule.
//!
//! Read only: `convert` writes a `.keras` file's tensors to the formats that are written.

mod config;
mod read;
#[cfg(test)]
mod tests;

pub use read::KerasReader;

use crate::error::{Error, Result};
use crate::formats::extent::{ZIP_MAGIC, zip_archive};
use crate::formats::{Caps, Extent, FormatUnit, hdf5};
use crate::model::{ByteOrder, TensorInfo};

/// The member holding the model's variables.
pub const WEIGHTS_MEMBER: &str = "model.weights.h5";
/// The member holding the model's configuration.
pub const CONFIG_MEMBER: &str = "config.json";
/// The member holding the Keras version and the date saved.
pub const METADATA_MEMBER: &str = "metadata.json";
/// The member Keras writes instead of [`WEIGHTS_MEMBER`] when asked for NumPy weights.
const NPZ_WEIGHTS_MEMBER: &str = "model.weights.npz";

/// The `.keras` unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "keras",
    title: "Keras",
    extensions: &["keras"],
    recognise: |probe| probe.zip_names().is_some_and(looks_like),
    open: |src| Ok(Box::new(KerasReader::open(src)?)),
    writer: None,
    updater: None,
    meta_editor: None,
    check_supported,
    write_order: crate::formats::plan_order,
    variant: None,
    companion: None,
    caps: Caps {
        // What the HDF5 reader reads is what a `.keras` file holds.
        holds_dtype: |d| hdf5::UNIT.caps().holds_dtype(d),
        file_metadata: true,
        typed_metadata: true,
        tensor_fields: true,
        compression: true,
        byte_orders: &[ByteOrder::Little, ByteOrder::Big],
        ..Caps::PLAIN
    },
    extent: Extent { magics: &[ZIP_MAGIC], found_further: None, confirm: None, measure: zip_archive },
};

/// Whether a zip archive's entry names are those of a `.keras` file: `config.json` beside
/// `metadata.json`, or `model.weights.h5` beside either, at the top of the archive.
pub fn looks_like(names: &[String]) -> bool {
    let has = |member: &str| names.iter().any(|n| n == member);
    let (config, metadata) = (has(CONFIG_MEMBER), has(METADATA_MEMBER));
    (config && metadata) || (has(WEIGHTS_MEMBER) && (config || metadata))
}

/// tensorfile reads `.keras` files but does not write them.
pub fn check_supported(_info: &TensorInfo) -> Result<()> {
    Err(Error::unsupported("tensorfile reads Keras .keras files but does not write them"))
}
