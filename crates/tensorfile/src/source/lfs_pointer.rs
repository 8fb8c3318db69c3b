//! A Git LFS pointer: the small text file git-lfs stores in a repository in place of a large
//! file (`version https://git-lfs.github.com/spec/v1`, `oid sha256:<64 hex>`, `size <n>`),
//! which a clone without its LFS objects leaves in the work tree, and which names the sha256
//! the large file must have.

/// The most bytes of a Git LFS pointer (git-lfs writes about 130 and reads at most 1024).
pub const MAX_LFS_POINTER: usize = 1024;

/// A Git LFS pointer's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LfsPointer {
    /// The sha256 of the object's bytes.
    pub sha256: [u8; 32],
    /// The object's size in bytes.
    pub size: u64,
}

/// A pointer as git-lfs writes it: `version https://git-lfs.github.com/spec/v1`, then
/// `key value` lines (`oid sha256:<64 hex>`, `size <n>`, others ignored), each ending in `\n`.
pub fn parse_pointer(bytes: &[u8]) -> Option<LfsPointer> {
    if bytes.len() > MAX_LFS_POINTER {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "version https://git-lfs.github.com/spec/v1" {
        return None;
    }
    let (mut sha256, mut size) = (None, None);
    for line in lines {
        match line.split_once(' ') {
            Some(("oid", v)) => {
                let hex = v.strip_prefix("sha256:")?;
                let mut out = [0u8; 32];
                hex::decode_to_slice(hex, &mut out).ok()?;
                sha256 = Some(out);
            }
            Some(("size", v)) => size = Some(v.parse::<u64>().ok()?),
            _ => {}
        }
    }
    Some(LfsPointer { sha256: sha256?, size: size? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_read_as_git_lfs_writes_them() {
        let hex = "ab".repeat(32);
        let text = format!("version https://git-lfs.github.com/spec/v1\noid sha256:{hex}\nsize 12345\n");
        let p = parse_pointer(text.as_bytes()).unwrap();
        assert_eq!((p.sha256, p.size), ([0xab; 32], 12345));
        for bad in [
            text.replace("spec/v1", "spec/v2"),
            text.replace("sha256:", "sha1:"),
            text.replace("size 12345", "size -1"),
            text.replace(&hex, &hex[1..]),
            text.replace("size 12345\n", ""),
            format!("{text}{}", "x".repeat(MAX_LFS_POINTER)),
        ] {
            assert_eq!(parse_pointer(bad.as_bytes()), None, "{bad}");
        }
    }

}
