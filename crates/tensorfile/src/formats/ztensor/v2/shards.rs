//! Shards (spec §7): the files a root's parts may live in, found beside the root by the
//! spec's positional convention (Appendix B: shard `n` of `model.zt` is `model-n.zt`), and
//! checked against the root's shard table (size, footer magic and version; the whole-file
//! digest when verifying).

use std::path::{Path, PathBuf};

use super::footer;
use super::manifest::ShardEntry;
use super::{FOOTER_LEN, MAGIC};
use crate::error::{Error, Result, Rule};
use crate::source::Source;

/// An opened shard file.
pub struct Shard {
    pub path: PathBuf,
    pub src: Source,
}

/// The file shard `name` of the root at `root` is: `<stem>-<name>.zt` in the root's folder.
pub fn path_of(root: &Path, name: &str) -> PathBuf {
    let stem = root.file_stem().map_or_else(|| "".into(), |s| s.to_string_lossy());
    // A shard name is one path component of A-Z a-z 0-9 . _ - (checked with the table).
    root.with_file_name(format!("{stem}-{name}.zt"))
}

/// Open shard `entry` of the root `root`, and check that it is the file the table names by
/// its size and that it is a zTensor 2 file.
pub fn open(root: &Source, entry: &ShardEntry) -> Result<Shard> {
    let Some(location) = root.location() else {
        return Err(Error::unsupported(format!(
            "its bytes are in shard {:?}, and a file read from memory has no folder to find shards in",
            entry.name
        )));
    };
    if root.is_remote() {
        return Err(Error::unsupported(format!(
            "its bytes are in shard {:?}: the shards of a remote zTensor 2 file are not read",
            entry.name
        )));
    }
    let path = path_of(location, &entry.name);
    let how = format_args!(
        "shard {:?} of the root's shard table, as <root stem>-<shard>.zt in the root's folder",
        entry.name
    );
    let src = Source::map_file(&path).map_err(|e| e.named_by(&path, how))?;
    check(&src, entry).map_err(|e| e.in_file(&path))?;
    Ok(Shard { path, src })
}

/// `src` has the table's size, both magics and a supported footer.
fn check(src: &Source, entry: &ShardEntry) -> Result<()> {
    if src.len() != entry.size {
        return Err(Error::invalid(
            Rule::ShardMismatch,
            format!("shard {:?} is {} bytes; the root's shard table says {}", entry.name, src.len(), entry.size),
        ));
    }
    // The table's sizes are at least a magic and a footer long.
    if !src.range(0, MAGIC.len() as u64)?.starts_with(MAGIC) {
        return Err(Error::invalid(
            Rule::BadMagic,
            format!("shard {:?} does not start with the zTensor 2 magic", entry.name),
        ));
    }
    footer::check_footer(&src.range(src.len() - FOOTER_LEN, FOOTER_LEN)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_found_beside_their_root() {
        assert_eq!(path_of(Path::new("dir/model.zt"), "00001"), Path::new("dir/model-00001.zt"));
        assert_eq!(path_of(Path::new("m.zt"), "00001-of-00002"), Path::new("m-00001-of-00002.zt"));
        assert_eq!(path_of(Path::new("/a/b/llama"), "x"), Path::new("/a/b/llama-x.zt"));
    }
}
