//! ExecuTorch named data (`.ptd`): an `FT01` flatbuffer with an `FH01` header, then
//! segments. Each named entry is a tensor (with a scalar type, sizes and dim order) or an
//! opaque blob; several entries may share one segment. Opening reads the header and the
//! flatbuffer; an entry's bytes are read by range when it is read.

mod extent;
mod header;
mod read;
#[cfg(test)]
mod tests;
mod write;

#[cfg(any(test, feature = "internals"))]
pub use header::Header;
pub use read::PtdReader;
pub use write::PtdWriter;

use super::{MAX_RANK, scalar_type_of};
use crate::error::{Error, Result};
use crate::formats::{Caps, Extent, FormatUnit, plan_order};
use crate::model::{Kind, TensorInfo};

/// The ExecuTorch named data unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "ptd",
    title: "ExecuTorch named data",
    extensions: &["ptd"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(PtdReader::open(src)?)),
    writer: Some(|out, plan, options| Ok(Box::new(PtdWriter::new(out, plan, options)?))),
    updater: None,
    meta_editor: None,
    check_supported,
    write_order: plan_order,
    variant: None,
    companion: None,
    caps: Caps { holds_dtype: |d| scalar_type_of(d).is_some(), blobs: true, ..Caps::PLAIN },
    extent: Extent { magics: &[], found_further: None, confirm: None, measure: extent::measure },
};

/// Whether `bytes` start like a `.ptd` file: `FT01` at byte 4 and `FH01` at byte 8.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(b"FT01") && bytes.get(8..12) == Some(b"FH01")
}

/// Whether a `.ptd` file can store `info`: a blob, or a dense tensor of a dtype ExecuTorch
/// has, of rank at most 16 with 32-bit sizes; the error says why not.
pub fn check_supported(info: &TensorInfo) -> Result<()> {
    if !info.layout().reads_dense() {
        return Err(Error::unsupported(format!(
            ".ptd holds dense tensors and blobs, not {} tensors",
            info.layout().describe()
        )));
    }
    if info.kind() == Kind::Blob {
        return Ok(());
    }
    if scalar_type_of(info.dtype()).is_none() {
        return Err(Error::unsupported(format!("ExecuTorch has no scalar type for {}", info.dtype())));
    }
    if info.shape().len() > MAX_RANK {
        return Err(Error::unsupported(format!("rank {} exceeds ExecuTorch's {MAX_RANK}", info.shape().len())));
    }
    if let Some(d) = info.shape().iter().find(|&&d| i32::try_from(d).is_err()) {
        return Err(Error::unsupported(format!("dimension {d} does not fit ExecuTorch's 32-bit sizes")));
    }
    Ok(())
}
