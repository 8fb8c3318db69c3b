//! The sha256 a Git repository records for a file it stores with Git LFS: the repository's
//! index holds, for the file's path, the id of a blob that is the LFS pointer
//! (`version https://git-lfs.github.com/spec/v1`, `oid sha256:<64 hex>`, `size <n>`), and the
//! pointer's oid is the sha256 of the file's bytes. A clone of a Hugging Face model repository
//! is such a repository.
//!
//! Only what git itself reads is read (the index, loose objects, pack indexes and packs, see
//! `git_objects`); nothing is run. The record is used only while git would take the file
//! for unchanged: the size and modification time the index recorded at checkout are the
//! file's. A repository that cannot be read, a file git does not track or tracks without LFS,
//! or one changed since checkout gives no digest (as a file without a `.sha256` beside it).

use std::path::{Path, PathBuf};

use super::git_objects::{OID_LEN, ObjectStore, offset_varint, read_small};
use crate::source::lfs_pointer::{LfsPointer, MAX_LFS_POINTER, parse_pointer};

/// The largest index read (a repository of a few hundred thousand files).
const MAX_INDEX: u64 = 256 << 20;

/// The most folders walked up from a file to find its repository.
const MAX_DEPTH: usize = 64;

/// Where the pointer of a file was found: the repository's work tree and the file's path in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LfsRecord {
    /// The pointer.
    pub pointer: LfsPointer,
    /// The work tree's top folder.
    pub work_tree: PathBuf,
    /// The file's path in the repository (`/`-separated).
    pub path_in_repo: String,
}

/// The LFS pointer the repository holding `path` records for it, when there is one and the
/// file is as git checked it out.
pub fn lfs_record(path: &Path) -> Option<LfsRecord> {
    let real = std::fs::canonicalize(path).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let mut dir = real.parent()?;
    for _ in 0..MAX_DEPTH {
        let dot_git = dir.join(".git");
        if dot_git.exists() {
            let rel = real.strip_prefix(dir).ok()?;
            let rel = rel.iter().map(|c| c.to_str()).collect::<Option<Vec<_>>>()?.join("/");
            let pointer = pointer_in_repo(&dot_git, &rel, &meta)?;
            return Some(LfsRecord { pointer, work_tree: dir.to_path_buf(), path_in_repo: rel });
        }
        dir = dir.parent()?;
    }
    None
}

/// The git folder (`.git`, or the folder a `.git` file names for a worktree or submodule),
/// and the one holding the objects (a worktree's `commondir`).
fn git_dirs(dot_git: &Path) -> Option<(PathBuf, PathBuf)> {
    let git_dir = if dot_git.is_dir() {
        dot_git.to_path_buf()
    } else {
        let text = read_small(dot_git, 4096)?;
        let target = std::str::from_utf8(&text).ok()?.trim().strip_prefix("gitdir:")?.trim().to_string();
        dot_git.parent()?.join(target)
    };
    let common = match read_small(&git_dir.join("commondir"), 4096) {
        Some(text) => git_dir.join(std::str::from_utf8(&text).ok()?.trim()),
        None => git_dir.clone(),
    };
    Some((git_dir, common))
}

fn pointer_in_repo(dot_git: &Path, rel: &str, meta: &std::fs::Metadata) -> Option<LfsPointer> {
    let (git_dir, common) = git_dirs(dot_git)?;
    // Repositories of sha256 object ids are not read (their index entries are longer).
    if let Some(config) = read_small(&common.join("config"), 1 << 20) {
        let config = String::from_utf8_lossy(&config).to_ascii_lowercase();
        if config.lines().any(|l| l.trim().starts_with("objectformat") && l.contains("sha256")) {
            return None;
        }
    }
    let index = read_small(&git_dir.join("index"), MAX_INDEX)?;
    let entry = find_entry(&index, rel.as_bytes())?;
    if !unchanged_since_checkout(&entry, meta) {
        return None;
    }
    let blob = ObjectStore::new(common.join("objects")).blob(&entry.oid, MAX_LFS_POINTER)?;
    let pointer = parse_pointer(&blob)?;
    (pointer.size == meta.len()).then_some(pointer)
}

/// Whether the file's size and modification time are those the index recorded (git's own
/// test for a file it need not read again).
fn unchanged_since_checkout(entry: &IndexEntry, meta: &std::fs::Metadata) -> bool {
    use std::time::UNIX_EPOCH;
    let Some(mtime) = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()) else { return false };
    // The index keeps the low 32 bits of each.
    let seconds = mtime.as_secs() as u32 == entry.mtime_seconds;
    let nanos = entry.mtime_nanos == 0 || mtime.subsec_nanos() == entry.mtime_nanos;
    seconds && nanos && meta.len() as u32 == entry.size
}

/// What the index records of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    pub(crate) oid: [u8; OID_LEN],
    pub(crate) mtime_seconds: u32,
    pub(crate) mtime_nanos: u32,
    pub(crate) size: u32,
}

/// Bytes of an entry before its object id: ctime, mtime (seconds, nanoseconds each), dev,
/// ino, mode, uid, gid, size (32 bits each).
const STAT_LEN: usize = 40;

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

/// The stage-0 entry of `path` in an index (`DIRC`, versions 2 to 4), read as git writes it:
/// stat data, object id, flags (name length in the low 12 bits, "extended" in bit 14 with
/// 16 more bits of flags from version 3), then the path: NUL-terminated and padded with NULs
/// to a multiple of 8 bytes (versions 2 and 3), or the number of bytes to drop from the
/// previous path (git's offset varint) and the rest NUL-terminated (version 4).
pub(crate) fn find_entry(index: &[u8], path: &[u8]) -> Option<IndexEntry> {
    if index.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(index, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(index, 8)?;
    let mut at = 12usize;
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let oid: [u8; OID_LEN] = index.get(at + STAT_LEN..at + STAT_LEN + OID_LEN)?.try_into().ok()?;
        let entry = IndexEntry {
            oid,
            mtime_seconds: be32(index, at + 8)?,
            mtime_nanos: be32(index, at + 12)?,
            size: be32(index, at + 36)?,
        };
        at = at.checked_add(STAT_LEN + OID_LEN)?;
        let flags = u16::from_be_bytes(index.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            at = at.checked_add(2)?;
        }
        let stage = (flags >> 12) & 0x3;
        let name = if version == 4 {
            let (drop, used) = offset_varint(index.get(at..)?)?;
            at = at.checked_add(used)?;
            let keep = previous.len().checked_sub(usize::try_from(drop).ok()?)?;
            let rest = index.get(at..)?;
            let nul = rest.iter().position(|&b| b == 0)?;
            previous.truncate(keep);
            previous.extend_from_slice(&rest[..nul]);
            at = at.checked_add(nul + 1)?;
            previous.as_slice()
        } else {
            let rest = index.get(at..)?;
            let nul = rest.iter().position(|&b| b == 0)?;
            let name = &rest[..nul];
            // The entry (from its start) is padded with 1 to 8 NULs to a multiple of 8.
            let len = (at - start).checked_add(nul)?;
            at = start.checked_add((len + 8) & !7)?;
            name
        };
        if stage == 0 && name == path {
            return Some(entry);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One version-2 entry as git writes it.
    fn entry_v2(name: &[u8], oid: [u8; 20], size: u32, flags_extra: u16) -> Vec<u8> {
        let mut e = vec![0u8; STAT_LEN];
        e[8..12].copy_from_slice(&7u32.to_be_bytes());
        e[36..40].copy_from_slice(&size.to_be_bytes());
        e.extend_from_slice(&oid);
        e.extend_from_slice(&((name.len() as u16) | flags_extra).to_be_bytes());
        e.extend_from_slice(name);
        let pad = 8 - (e.len() % 8);
        e.extend(std::iter::repeat_n(0, pad));
        e
    }

    #[test]
    fn index_entries_are_found_by_path_and_stage() {
        let mut index = b"DIRC".to_vec();
        index.extend_from_slice(&2u32.to_be_bytes());
        index.extend_from_slice(&3u32.to_be_bytes());
        index.extend(entry_v2(b"a.txt", [1; 20], 3, 0));
        // A conflicted entry (stage 2) of the path looked for is not the file's record.
        index.extend(entry_v2(b"model.safetensors", [2; 20], 9, 0x2000));
        index.extend(entry_v2(b"model.safetensors", [3; 20], 9, 0));
        let e = find_entry(&index, b"model.safetensors").unwrap();
        assert_eq!((e.oid, e.size, e.mtime_seconds), ([3; 20], 9, 7));
        assert_eq!(find_entry(&index, b"b.txt"), None);
        // Every cut of it is refused or finds less, never a panic.
        for cut in 0..index.len() {
            let _ = find_entry(&index[..cut], b"model.safetensors");
        }
        let mut v9 = index.clone();
        v9[7] = 9;
        assert_eq!(find_entry(&v9, b"a.txt"), None);
    }
}
