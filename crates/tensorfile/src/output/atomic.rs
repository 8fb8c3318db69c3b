//! Atomic output files: written under a temporary name in the destination's folder, synced,
//! then renamed over the destination. An interrupted write leaves the old file untouched, and
//! writing over a file that is being read (and mapped) is safe: the reader keeps the old one.
//! Several files that must appear together (the shards of a checkpoint and their index) are
//! each written and staged first, then committed one after the other.
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::{NamedTempFile, TempPath};

use super::Output;
use crate::error::{Error, Result, Rule};
use crate::source::Bytes;

/// Buffer size for streaming writes.
const BUFFER: usize = 8 << 20;

/// A file being written; it replaces `dest` only on [`AtomicFile::commit`].
pub struct AtomicFile {
    tmp: NamedTempFile,
    dest: PathBuf,
}

impl AtomicFile {
    /// Start writing `dest`: a temporary file in its folder (which must exist), with the
    /// permissions of the file it will replace. Errors for a URL: only local files are written.
    pub fn create(dest: impl AsRef<Path>) -> Result<Self> {
        let dest = dest.as_ref().to_path_buf();
        if crate::source::url_of(&dest).is_some() {
            return Err(Error::unsupported(format!(
                "{}: tensorfile reads URLs but writes only local files (write one, then upload it)",
                dest.display()
            )));
        }
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let stem = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // At most 128 bytes of it (cut between characters): the temporary name adds a dot, a
        // random part and `.tmp`, and a destination name near the file system's 255 bytes
        // must still be writable.
        let mut cut = stem.len().min(128);
        while !stem.is_char_boundary(cut) {
            cut -= 1;
        }
        let prefix = format!(".{}.", &stem[..cut]);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // Temporary files are private by default; the result should get the permissions a
        // new file gets (or keep the ones of the file it replaces).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dest).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o666);
            builder.permissions(std::fs::Permissions::from_mode(mode));
        }
        if !dir.is_dir() {
            // Said plainly: the temporary file's own path would name a file never asked for.
            return Err(Error::invalid(
                Rule::MissingFile,
                format!("there is no folder {} to write into (none is created)", dir.display()),
            )
            .in_file(&dest));
        }
        let tmp = builder.tempfile_in(&dir).map_err(|e| Error::from(e).in_file(&dest))?;
        Ok(AtomicFile { tmp, dest })
    }

    /// A buffered writer into the temporary file, which can also read back what it wrote.
    pub fn writer(&mut self) -> FileWriter<'_> {
        FileWriter(BufWriter::with_capacity(BUFFER, self.tmp.as_file_mut()))
    }

    /// The path the file replaces on commit.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Sync the data, rename over the destination, and sync the folder.
    pub fn commit(self) -> Result<()> {
        self.stage()?.commit()
    }

    /// Sync the data and close the file, still under its temporary name: the destination is
    /// replaced only by [`StagedFile::commit`], and dropping the staged file deletes it.
    pub fn stage(self) -> Result<StagedFile> {
        self.tmp.as_file().sync_all().map_err(|e| Error::from(e).in_file(&self.dest))?;
        Ok(StagedFile { tmp: self.tmp.into_temp_path(), dest: self.dest })
    }
}

/// A buffered writer into a file being written ([`AtomicFile::writer`]). Reading flushes
/// what is buffered first, then reads the file from the current position.
pub struct FileWriter<'a>(BufWriter<&'a mut File>);

impl Write for FileWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Seek for FileWriter<'_> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.0.seek(pos)
    }
}

impl Output for FileWriter<'_> {
    fn write_bytes(&mut self, bytes: &Bytes) -> std::io::Result<()> {
        match bytes.mapped_file() {
            Some((from, offset)) if bytes.len() >= KERNEL_COPY_MIN => {
                self.0.flush()?;
                let done = copy_in_kernel(from, offset, self.0.get_mut(), bytes.len())?;
                self.0.write_all(&bytes[done..])
            }
            _ => self.0.write_all(bytes),
        }
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<bool> {
        self.0.flush()?;
        File::set_len(self.0.get_ref(), len).map(|()| true)
    }
}

/// Slices of a mapped file at least this long are copied in the kernel: below it the buffer
/// takes them with one `memcpy`, and the call would cost more than the copy.
const KERNEL_COPY_MIN: usize = 256 << 10;

/// Copy `len` bytes of `from` at `offset` to `to` at its current position with
/// `copy_file_range`, which moves them from page cache to page cache (or shares the blocks,
/// where the filesystem can) without mapping them into this process. Returns how many were
/// copied: all of them, or fewer where the kernel refused (another filesystem, an old kernel,
/// a file it cannot copy), the rest then being the caller's to write.
#[cfg(target_os = "linux")]
fn copy_in_kernel(from: &File, offset: u64, to: &mut File, len: usize) -> std::io::Result<usize> {
    use rustix::io::Errno;
    let mut done = 0usize;
    let mut at = offset;
    while done < len {
        match rustix::fs::copy_file_range(from, Some(&mut at), &*to, None, len - done) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(Errno::INTR) => continue,
            Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP | Errno::PERM | Errno::BADF) => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(done)
}

#[cfg(not(target_os = "linux"))]
fn copy_in_kernel(_from: &File, _offset: u64, _to: &mut File, _len: usize) -> std::io::Result<usize> {
    Ok(0)
}

impl Read for FileWriter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.flush()?;
        self.0.get_mut().read(buf)
    }
}

/// A file written and synced under a temporary name, its handle closed (so that many can wait
/// together), not yet in place.
pub struct StagedFile {
    tmp: TempPath,
    dest: PathBuf,
}

impl StagedFile {
    /// The path the file replaces on commit.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Rename over the destination, and sync the folder.
    pub fn commit(self) -> Result<()> {
        let dest = self.dest;
        self.tmp.persist(&dest).map_err(|e| Error::from(e.error).in_file(&dest))?;
        #[cfg(unix)]
        if let Some(dir) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Make the rename itself durable; not every filesystem allows syncing a folder.
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(())
    }
}

/// Write `dest` atomically with `fill`, which gets a buffered writer.
pub fn write_atomically(dest: impl AsRef<Path>, fill: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let mut f = AtomicFile::create(dest)?;
    {
        let mut w = f.writer();
        fill(&mut w)?;
        w.flush()?;
    }
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Output;

    #[test]
    fn a_missing_folder_is_named_not_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("nowhere").join("model.gguf");
        let Err(err) = AtomicFile::create(&dest) else { panic!("created a file in a missing folder") };
        let text = err.to_string();
        assert_eq!(err.rule(), Some(Rule::MissingFile), "{text}");
        assert!(text.contains("no folder") && text.contains("nowhere") && !text.contains(".model.gguf."), "{text}");
        assert!(!dir.path().join("nowhere").exists());
    }

    #[test]
    fn a_name_near_the_file_systems_limit_is_written() {
        let dir = tempfile::tempdir().unwrap();
        // 250 bytes, with multi-byte characters where the temporary name's prefix is cut.
        let name = format!("{}{}.safetensors", "é".repeat(70), "x".repeat(98));
        assert_eq!(name.len(), 250);
        let dest = dir.path().join(&name);
        write_atomically(&dest, |w| Ok(w.write_all(b"done")?)).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"done");
    }

    /// Slices of a mapped file, copied in the kernel, land at the writer's position between
    /// buffered writes, whatever their offsets; owned bytes and short slices are written.
    #[test]
    fn mapped_slices_are_copied_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.bin");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        std::fs::write(&src, &data).unwrap();
        let mapped = Bytes::map_file(&src).unwrap();
        let pieces = [
            mapped.slice(7, 1_000_003).unwrap(),
            mapped.slice(5, 100).unwrap(),
            Bytes::from_vec(data[..300_000].to_vec()),
            mapped.slice(1_500_001, 1_499_999).unwrap(),
        ];
        let dest = dir.path().join("out.bin");
        let mut f = AtomicFile::create(&dest).unwrap();
        let mut expected = Vec::new();
        {
            let mut w = f.writer();
            for (i, piece) in pieces.iter().enumerate() {
                w.write_all(&[i as u8; 3]).unwrap();
                expected.extend_from_slice(&[i as u8; 3]);
                w.write_bytes(piece).unwrap();
                expected.extend_from_slice(piece);
            }
            // Reading back and seeking see the copied bytes.
            w.seek(SeekFrom::Start(3)).unwrap();
            let mut head = [0u8; 16];
            w.read_exact(&mut head).unwrap();
            assert_eq!(head, data[7..23]);
            w.seek(SeekFrom::End(0)).unwrap();
            w.write_all(b"end").unwrap();
            expected.extend_from_slice(b"end");
            w.flush().unwrap();
        }
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), expected);
    }
}
