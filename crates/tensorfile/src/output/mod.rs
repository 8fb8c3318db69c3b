//! Where bytes are written: the [`Output`] trait every writer writes into (a file, a buffer,
//! an atomic file), and atomic output files ([`AtomicFile`]) that replace their destination
//! only once complete.

mod atomic;

use std::io::{Read, Seek, Write};

pub use atomic::*;

use crate::error::{Error, Result};
use crate::source::{Bytes, Source};

/// Where writers write: a file (or a buffer) they can seek back into, which formats whose
/// index comes first but depends on the data (`.ptd`) need, and read back, which zTensor 2
/// needs to confirm that a part equals one already written before storing it once.
///
/// Writers hand over tensor bytes with [`Output::write_bytes`]: an output file copies a slice
/// of a mapped source file in the kernel (`copy_file_range`), without reading it through the
/// map; everything else writes the bytes.
pub trait Output: Write + Seek + Read {
    /// Write `bytes` whole at the current position, as `write_all` does.
    fn write_bytes(&mut self, bytes: &Bytes) -> std::io::Result<()> {
        self.write_all(bytes)
    }
    /// Make the output `len` bytes long (cutting what lies past, or adding zeros), the
    /// position unchanged, where it can: `Ok(true)`. The default cannot and changes nothing
    /// (`Ok(false)`). `.ptd` writes a tensor while it hashes it, and cuts it back off when an
    /// identical one turns out to be stored already.
    fn set_len(&mut self, _len: u64) -> std::io::Result<bool> {
        Ok(false)
    }
}

fn resize(v: &mut Vec<u8>, len: u64) -> std::io::Result<bool> {
    v.resize(usize::try_from(len).map_err(|_| std::io::Error::other("length beyond memory"))?, 0);
    Ok(true)
}

impl Output for std::io::Cursor<Vec<u8>> {
    fn set_len(&mut self, len: u64) -> std::io::Result<bool> {
        resize(self.get_mut(), len)
    }
}
impl Output for std::io::Cursor<&mut Vec<u8>> {
    fn set_len(&mut self, len: u64) -> std::io::Result<bool> {
        resize(self.get_mut(), len)
    }
}
impl Output for std::fs::File {
    fn set_len(&mut self, len: u64) -> std::io::Result<bool> {
        std::fs::File::set_len(self, len).map(|()| true)
    }
}

impl<T: Output + ?Sized> Output for &mut T {
    fn write_bytes(&mut self, bytes: &Bytes) -> std::io::Result<()> {
        (**self).write_bytes(bytes)
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<bool> {
        (**self).set_len(len)
    }
}

impl<T: Output + ?Sized> Output for Box<T> {
    fn write_bytes(&mut self, bytes: &Bytes) -> std::io::Result<()> {
        (**self).write_bytes(bytes)
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<bool> {
        (**self).set_len(len)
    }
}

/// Pieces at least this long are hashed on another thread while they are written.
pub(crate) const HASH_BESIDE_MIN: usize = 4 << 20;

/// Write `piece` to `out` and pass its bytes to `hash` (a checksum being computed). A large
/// piece is hashed on a second thread while it is written: reading the source for the
/// checksum then costs no time beside a copy the kernel makes ([`Output::write_bytes`]).
pub(crate) fn write_hashing(out: &mut dyn Output, piece: &Bytes, hash: impl FnOnce(&[u8]) + Send) -> Result<()> {
    if piece.len() < HASH_BESIDE_MIN {
        hash(piece);
        return Ok(out.write_bytes(piece)?);
    }
    std::thread::scope(|s| {
        let hashing = s.spawn(|| hash(piece));
        let written = out.write_bytes(piece);
        // A panic here is a bug of ours, not the caller's doing: an internal failure (exit 1), never a usage error.
        hashing.join().map_err(|_| Error::from(std::io::Error::other("hashing a piece panicked")))?;
        Ok(written?)
    })
}

/// Bytes copied from a source at once by [`copy_range`].
const COPY_PIECE: u64 = 64 << 20;

/// Copy bytes `from..to` of `src` into `out`, a piece at a time (memory bounded by the piece,
/// whatever the range; a mapped piece copied in the kernel by [`Output::write_bytes`]): what
/// an updater keeps of the old file around what it replaces.
pub(crate) fn copy_range(src: &Source, from: u64, to: u64, out: &mut dyn Output) -> Result<()> {
    let mut at = from;
    while at < to {
        let n = (to - at).min(COPY_PIECE);
        out.write_bytes(&src.range(at, n)?)?;
        at += n;
    }
    Ok(())
}
