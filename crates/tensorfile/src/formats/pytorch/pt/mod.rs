//! `torch.save` files (`.pt`, `.pth`, `.bin`): a zip holding `data.pkl` (the pickled object)
//! and one record per storage under `data/`. Read with the restricted pickle machine (nothing
//! executes); nested dicts and lists of tensors flatten to dotted names. Written as a flat
//! state dict that `torch.load(weights_only=True)` loads.

mod flatten;
mod read;
mod write;

pub use flatten::flatten;
pub use read::{PtReader, PtTensor, StorageSource, looks_like as looks_like_legacy};
pub use write::PtWriter;

use crate::error::{Error, Result};
use crate::formats::pytorch::torch_has;
use crate::model::TensorInfo;

pub fn check_supported(info: &TensorInfo) -> Result<()> {
    if info.layout.is_sparse() {
        return Err(Error::unsupported("tensorfile writes dense tensors into torch.save files"));
    }
    if !torch_has(info.dtype) {
        return Err(Error::unsupported(format!("torch has no dtype {}", info.dtype)));
    }
    Ok(())
}
