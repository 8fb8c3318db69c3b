//! The zTensor family. `v0_1`: zTensor v0.1 (`ZTEN0001`), the format of the seed reference
//! (pip `ztensor==0.1.4`); `v1`: zTensor 1.x (`ZTEN1000`, pip `ztensor` 1.x), read into the
//! structures of `v2`: zTensor 2 (`\x89ZT2\r\n\x1a\n`, the format of pip `ztensor` 2.x).
//! What they share: CBOR (`cbor`) and zstd frames decoded into exactly their declared size
//! (`zstd_frames`).

pub(crate) mod cbor;
pub mod v0_1;
pub mod v1;
pub mod v2;
pub(crate) mod zstd_frames;

use std::path::Path;

use crate::error::{Error, Result};
use crate::formats::Format;

/// Which zTensor a `.zt` output is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ZtVersion {
    /// zTensor v0.1 (`ZTEN0001`), the format of the seed reference: what `.zt` means unless
    /// version 2 is asked for.
    #[default]
    V0_1,
    /// zTensor 2, written in canonical form.
    V2,
}

impl ZtVersion {
    /// The format of this version.
    pub fn format(self) -> Format {
        match self {
            ZtVersion::V0_1 => Format::Zt,
            ZtVersion::V2 => Format::Zt2,
        }
    }
}

impl std::str::FromStr for ZtVersion {
    type Err = Error;
    /// `0.1` and `2`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "0.1" => Ok(ZtVersion::V0_1),
            "2" => Ok(ZtVersion::V2),
            _ => Err(Error::usage(format!("unknown zTensor version {s:?} (expected 0.1 or 2)"))),
        }
    }
}

/// The format `path` is written as: the one its extension names ([`Format::from_path`]), and
/// for a `.zt` path the zTensor `version` given (v0.1 when none is). A version given for a
/// path of another format is an error.
pub fn output_format(path: &Path, version: Option<ZtVersion>) -> Result<Format> {
    let format = Format::from_path(path)?;
    match version {
        None => Ok(format),
        Some(v) if matches!(format, Format::Zt | Format::Zt2) => Ok(v.format()),
        Some(_) => Err(Error::usage(format!(
            "a zTensor version was given for {}, which is written as {}, not zTensor",
            path.display(),
            format.unit().title()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zt_paths_are_v0_1_unless_version_2_is_asked_for() {
        let zt = Path::new("out.zt");
        assert_eq!(output_format(zt, None).unwrap(), Format::Zt);
        assert_eq!(output_format(zt, Some("2".parse().unwrap())).unwrap(), Format::Zt2);
        assert_eq!(output_format(zt, Some("0.1".parse().unwrap())).unwrap(), Format::Zt);
        assert!(output_format(Path::new("out.safetensors"), Some(ZtVersion::V2)).is_err());
        assert_eq!(output_format(Path::new("out.safetensors"), None).unwrap(), Format::Safetensors);
        assert!("3".parse::<ZtVersion>().is_err());
    }
}
