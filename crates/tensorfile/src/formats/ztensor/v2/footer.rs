//! The container (spec §2): the magic at both ends, the footer, and where it puts the
//! manifest blob.

use super::{ALIGNMENT, FOOTER_LEN, MAGIC, VERSION};
use crate::cursor;
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_ZT_INDEX;

/// The smallest file: the magic and a footer.
pub const MIN_LEN: u64 = MAGIC.len() as u64 + FOOTER_LEN;

/// The manifest blob the footer points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestBlob {
    pub offset: u64,
    pub len: u64,
    /// XXH3-64 of its bytes.
    pub hash: u64,
}

/// Check a file of `len` bytes from its first bytes `head` and its last [`FOOTER_LEN`] bytes
/// `footer`: its size, both magics, the version, and the manifest blob's place. `None` for a
/// data shard (spec §7.2: no manifest, the footer's three fields zero).
pub fn parse(len: u64, head: &[u8], footer: &[u8]) -> Result<Option<ManifestBlob>> {
    if len < MIN_LEN {
        return Err(Error::invalid(Rule::Truncated, format!("{len} bytes: a zTensor 2 file has at least {MIN_LEN}")));
    }
    if !head.starts_with(MAGIC) {
        return Err(Error::invalid(Rule::BadMagic, "does not start with the zTensor 2 magic"));
    }
    check_footer(footer)?;
    let offset = cursor::u64_le_at(footer, 0, "manifest offset")?;
    let manifest_len = cursor::u64_le_at(footer, 8, "manifest length")?;
    let hash = cursor::u64_le_at(footer, 16, "manifest hash")?;
    if manifest_len == 0 {
        if offset != 0 || hash != 0 {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!("no manifest (length 0), yet a manifest offset {offset} or hash {hash:#x}"),
            ));
        }
        return Ok(None);
    }
    if manifest_len > MAX_ZT_INDEX {
        return Err(Error::invalid(
            Rule::HeaderTooLarge,
            format!("a manifest of {manifest_len} bytes (limit {MAX_ZT_INDEX})"),
        ));
    }
    if offset % ALIGNMENT != 0 || offset < ALIGNMENT {
        return Err(Error::invalid(
            Rule::Misaligned,
            format!("the manifest blob at {offset}, not a multiple of {ALIGNMENT} from {ALIGNMENT} on"),
        ));
    }
    let data_end = len - FOOTER_LEN;
    if offset.checked_add(manifest_len).is_none_or(|end| end > data_end) {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("the manifest blob at {offset} (+{manifest_len}) runs past the data's end at {data_end}"),
        ));
    }
    Ok(Some(ManifestBlob { offset, len: manifest_len, hash }))
}

/// The footer's magic and version (its reserved field is ignored, as the spec says).
pub fn check_footer(footer: &[u8]) -> Result<()> {
    if footer.len() as u64 != FOOTER_LEN || !footer.ends_with(MAGIC) {
        return Err(Error::invalid(Rule::BadMagic, "the footer does not end with the zTensor 2 magic"));
    }
    let version = cursor::u32_le_at(footer, 24, "footer version")?;
    if version != VERSION {
        return Err(Error::invalid(Rule::BadField, format!("footer version {version}; this library reads {VERSION}")));
    }
    Ok(())
}

/// The footer of a file whose manifest `manifest` is the blob at `offset`.
pub fn for_manifest(offset: u64, manifest: &[u8]) -> Vec<u8> {
    let hash = twox_hash::XxHash3_64::oneshot(manifest);
    encode(Some(ManifestBlob { offset, len: manifest.len() as u64, hash }))
}

/// A footer pointing at `manifest` (or none: a data shard).
pub fn encode(manifest: Option<ManifestBlob>) -> Vec<u8> {
    let m = manifest.unwrap_or(ManifestBlob { offset: 0, len: 0, hash: 0 });
    let mut f = Vec::with_capacity(FOOTER_LEN as usize);
    f.extend_from_slice(&m.offset.to_le_bytes());
    f.extend_from_slice(&m.len.to_le_bytes());
    f.extend_from_slice(&m.hash.to_le_bytes());
    f.extend_from_slice(&VERSION.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(MAGIC);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(len: u64, head: &[u8], footer: &[u8]) -> Option<Rule> {
        parse(len, head, footer).err().and_then(|e| e.rule())
    }

    #[test]
    fn footers_are_checked_field_by_field() {
        let m = ManifestBlob { offset: 4096, len: 10, hash: 7 };
        let good = encode(Some(m));
        assert_eq!(parse(4096 + 10 + 40, MAGIC, &good).unwrap(), Some(m));
        assert_eq!(parse(48, MAGIC, &encode(None)).unwrap(), None);
        assert_eq!(rule(47, MAGIC, &good), Some(Rule::Truncated));
        assert_eq!(rule(8000, b"ZTEN0001", &good), Some(Rule::BadMagic));
        let mut bad = good.clone();
        bad[39] ^= 1;
        assert_eq!(rule(8000, MAGIC, &bad), Some(Rule::BadMagic));
        let mut v3 = good.clone();
        v3[24] = 3;
        assert_eq!(rule(8000, MAGIC, &v3), Some(Rule::BadField));
        let mut reserved = good.clone();
        reserved[28] = 1;
        assert!(parse(8000, MAGIC, &reserved).is_ok());
        assert_eq!(rule(4096 + 9 + 40, MAGIC, &good), Some(Rule::OutOfBounds));
        let at = |offset, len, hash| encode(Some(ManifestBlob { offset, len, hash }));
        assert_eq!(rule(1 << 20, MAGIC, &at(4100, 10, 0)), Some(Rule::Misaligned));
        assert_eq!(rule(1 << 20, MAGIC, &at(0, 10, 0)), Some(Rule::Misaligned));
        assert_eq!(rule(1 << 40, MAGIC, &at(4096, (1 << 30) + 1, 0)), Some(Rule::HeaderTooLarge));
        assert_eq!(rule(1 << 20, MAGIC, &at(u64::MAX - 4095, 4096, 0)), Some(Rule::OutOfBounds));
        assert_eq!(rule(1 << 20, MAGIC, &at(4096, 0, 0)), Some(Rule::OutOfBounds));
        assert_eq!(rule(1 << 20, MAGIC, &at(0, 0, 1)), Some(Rule::OutOfBounds));
    }
}
