//! Write options as a caller chose them: what was given explicitly, and the library's defaults
//! for the rest. The library also says which of the given options a format ignores, from its
//! [`Caps`](super::Caps), so the shells warn about them without knowing any format's rules.

use super::{Compression, Format, WriteOptions};
use crate::error::Result;
use crate::model::{ByteOrder, ChecksumKind, MetaValue};

/// The options a caller gave for a write; `None` (or empty metadata) is "not given": the
/// library's default ([`WriteOptions::default`]) applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteRequest {
    /// Compression of tensor data.
    pub compression: Option<Compression>,
    /// Checksums stored with each tensor.
    pub checksum: Option<ChecksumKind>,
    /// Byte order of raw multi-byte data.
    pub byte_order: Option<ByteOrder>,
    /// File-level metadata, as key and value pairs.
    pub metadata: Option<Vec<(String, String)>>,
}

/// One of the options of a write, as the shells name it in their own terms (a flag, a keyword
/// argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteOption {
    /// How tensor data is compressed.
    Compression,
    /// Which checksum is stored with each tensor.
    Checksum,
    /// The byte order of raw multi-byte data.
    ByteOrder,
    /// File-level metadata.
    Metadata,
}

/// An option that was given but that the output format (or another option) makes moot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The option given.
    pub option: WriteOption,
    /// Why, in words that name no flag or argument.
    pub reason: String,
}

impl WriteRequest {
    /// A request from the options' text (`none`, `zstd`, `zstd:LEVEL`; `crc32c`, `sha256`,
    /// `none`), each `None` when not given.
    pub fn parse(compression: Option<&str>, checksum: Option<&str>) -> Result<WriteRequest> {
        Ok(WriteRequest {
            compression: compression.map(str::parse).transpose()?,
            checksum: checksum.map(str::parse).transpose()?,
            ..WriteRequest::default()
        })
    }

    /// The options a writer takes: those given, the library's defaults for the rest.
    pub fn options(&self) -> WriteOptions {
        let default = WriteOptions::default();
        WriteOptions {
            compression: self.compression.unwrap_or(default.compression),
            checksum: self.checksum.unwrap_or(default.checksum),
            metadata: match &self.metadata {
                Some(m) => m.iter().map(|(k, v)| (k.clone(), MetaValue::Text(v.clone()))).collect(),
                None => default.metadata,
            },
            byte_order: self.byte_order.unwrap_or(default.byte_order),
        }
    }

    /// The options given that a write to `format` ignores, and why: what its files cannot
    /// store (compression, a checksum, a byte order, file metadata), and a byte order that
    /// compression overrides (compressed data is little-endian).
    pub fn ignored_by(&self, format: Format) -> Vec<Ignored> {
        let caps = format.caps();
        let title = format.unit().title();
        let mut ignored = Vec::new();
        let mut ignore = |option, reason: String| ignored.push(Ignored { option, reason });
        let compressed = matches!(self.compression, Some(c) if c != Compression::None);
        if compressed && !caps.compression() {
            ignore(WriteOption::Compression, format!("{title} files store data uncompressed"));
        }
        if let Some(kind) = self.checksum.filter(|&k| k != ChecksumKind::None) {
            if !caps.checksums().contains(&kind) {
                let reason = match caps.checksums() {
                    [] => format!("{title} files store no checksums"),
                    kinds => {
                        let names: Vec<_> = kinds.iter().map(|k| k.name()).collect();
                        format!("{title} files store only {} checksums", names.join(" or "))
                    }
                };
                ignore(WriteOption::Checksum, reason);
            }
        }
        if let Some(order) = self.byte_order.filter(|&o| o != ByteOrder::Little) {
            if !caps.byte_orders().contains(&order) {
                ignore(WriteOption::ByteOrder, format!("{title} files store data little-endian"));
            } else if compressed && caps.compression() {
                ignore(WriteOption::ByteOrder, "compressed data is stored little-endian".to_string());
            }
        }
        if self.metadata.as_ref().is_some_and(|m| !m.is_empty()) && !caps.file_metadata() {
            ignore(WriteOption::Metadata, format!("{title} files have no place for file metadata"));
        }
        ignored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(ignored: Vec<Ignored>) -> Vec<WriteOption> {
        ignored.into_iter().map(|i| i.option).collect()
    }

    #[test]
    fn defaults_are_never_ignored() {
        for &format in Format::ALL {
            assert!(WriteRequest::default().ignored_by(format).is_empty(), "{format:?}");
        }
        let options = WriteRequest::default().options();
        assert_eq!(options.checksum, WriteOptions::default().checksum);
        assert_eq!(options.compression, Compression::None);
    }

    #[test]
    fn what_a_format_cannot_store_is_ignored() {
        let all = WriteRequest {
            compression: Some(Compression::Zstd(3)),
            checksum: Some(ChecksumKind::Sha256),
            byte_order: Some(ByteOrder::Big),
            metadata: Some(vec![("k".into(), "v".into())]),
        };
        let safetensors = [WriteOption::Compression, WriteOption::Checksum, WriteOption::ByteOrder];
        assert_eq!(options(all.ignored_by(Format::Safetensors)), safetensors);
        // zTensor stores all but file metadata; big-endian is moot once compressed.
        assert_eq!(options(all.ignored_by(Format::Zt)), [WriteOption::ByteOrder, WriteOption::Metadata]);
        let raw_big = WriteRequest { byte_order: Some(ByteOrder::Big), ..WriteRequest::default() };
        assert!(raw_big.ignored_by(Format::Zt).is_empty());
        // Explicitly none: nothing to ignore.
        let none = WriteRequest::parse(Some("none"), Some("none")).unwrap();
        assert!(none.ignored_by(Format::Safetensors).is_empty());
        assert_eq!(none.options().checksum, ChecksumKind::None);
    }
}
