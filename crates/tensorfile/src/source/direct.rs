//! Reading a whole file into memory around the page cache: `O_DIRECT` reads of large aligned
//! pieces, several in flight, straight into one anonymous buffer. For a file that is not
//! cached this reads at the disk's own rate with no copy out of the page cache and no page
//! faults on a file map; where the filesystem refuses direct I/O (tmpfs, some network and
//! FUSE filesystems) the same pieces are read buffered.

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::MmapMut;

/// Bytes per read: large enough that the disk sees long sequential requests, small enough
/// that every reader thread has several.
const PIECE: usize = 8 << 20;
/// Reads in flight at once (threads, each blocking on one read at a time).
const IN_FLIGHT: usize = 8;
/// The alignment direct I/O asks of offsets, lengths and buffer addresses (the logical block
/// size is at most this on the disks we meet; the buffer is page-aligned).
pub(crate) const ALIGN: usize = 4096;

/// The whole file at `path`, read into a new buffer of its size (rounded up to the
/// alignment, which the caller slices off), and that size.
pub(super) fn read_whole(path: &Path) -> io::Result<(MmapMut, u64)> {
    read_whole_from(path, open_direct(path))
}

/// [`read_whole`] with the file opened for direct I/O (or `None`: buffered reads only).
fn read_whole_from(path: &Path, direct: Option<File>) -> io::Result<(MmapMut, u64)> {
    let buffered = File::open(path)?;
    let len = buffered.metadata()?.len();
    let size = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_next_multiple_of(ALIGN))
        .ok_or_else(|| io::Error::other(format!("a file of {len} bytes does not fit in memory")))?;
    let mut buffer = MmapMut::map_anon(size.max(ALIGN))?;
    // Piece i (at i * PIECE) goes to reader i % IN_FLIGHT.
    let mut lanes: Vec<Vec<(u64, &mut [u8])>> = (0..IN_FLIGHT).map(|_| Vec::new()).collect();
    for (i, piece) in buffer[..size].chunks_mut(PIECE).enumerate() {
        lanes[i % IN_FLIGHT].push(((i * PIECE) as u64, piece));
    }
    std::thread::scope(|s| {
        let readers: Vec<_> = lanes
            .into_iter()
            .filter(|lane| !lane.is_empty())
            .map(|lane| {
                let (direct, buffered) = (direct.as_ref(), &buffered);
                s.spawn(move || {
                    lane.into_iter().try_for_each(|(at, piece)| read_piece(direct, buffered, at, piece, len))
                })
            })
            .collect();
        readers.into_iter().try_for_each(|r| r.join().unwrap_or_else(|_| Err(io::Error::other("a reader panicked"))))
    })?;
    Ok((buffer, len))
}

/// Pages probed by [`is_cached`], spread evenly over the file.
const PROBES: u64 = 16;

/// Whether the file at `path` looks cached: every one of a few pages spread over it is in
/// the page cache (`preadv2` with `RWF_NOWAIT`, which reads only what needs no disk). Where
/// that cannot be asked, `true` (the map, which costs nothing when it is wrong).
#[cfg(target_os = "linux")]
pub fn is_cached(path: &Path) -> bool {
    File::open(path).map_or(true, |file| file_is_cached(&file))
}

/// [`is_cached`] of an open file.
#[cfg(target_os = "linux")]
pub fn file_is_cached(file: &File) -> bool {
    use rustix::io::{Errno, ReadWriteFlags};
    let Ok(len) = file.metadata().map(|m| m.len()) else { return true };
    let mut page = [0u8; 4096];
    for k in 0..PROBES.min(len.div_ceil(4096)) {
        let at = (len / PROBES * k) / 4096 * 4096;
        match rustix::io::preadv2(file, &mut [io::IoSliceMut::new(&mut page)], at, ReadWriteFlags::NOWAIT) {
            Err(Errno::AGAIN) => return false,
            Ok(_) => {}
            Err(_) => return true,
        }
    }
    true
}

#[cfg(not(target_os = "linux"))]
pub fn is_cached(_path: &Path) -> bool {
    true
}

/// [`is_cached`] of an open file.
#[cfg(not(target_os = "linux"))]
pub fn file_is_cached(_file: &File) -> bool {
    true
}

/// The file opened for direct I/O, or `None` where that is refused.
#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECT | OFlags::CLOEXEC, Mode::empty()).ok()?;
    Some(File::from(fd))
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path) -> Option<File> {
    None
}

/// Fill `piece` with the file's bytes at `at` (zeros past its end): directly where it can,
/// the rest buffered (a direct read refused mid-file, or ending short of an aligned place).
fn read_piece(direct: Option<&File>, buffered: &File, at: u64, piece: &mut [u8], len: u64) -> io::Result<()> {
    let want = usize::try_from(len.saturating_sub(at)).unwrap_or(usize::MAX);
    read_into(direct, buffered, at, piece, want)
}

/// Read `want` bytes of the file at `at` into the start of `buf` (at most its length):
/// through `direct` in whole aligned blocks as far as `buf` has room for them (the caller
/// gives an aligned `at` and buffer address with a `direct` file), the rest, or all of it
/// where a direct read is refused, through `buffered`. Bytes of `buf` past `want` may be
/// overwritten with the file's next bytes.
pub(crate) fn read_into(
    direct: Option<&File>,
    buffered: &File,
    at: u64,
    buf: &mut [u8],
    want: usize,
) -> io::Result<()> {
    let want = want.min(buf.len());
    let mut done = 0usize;
    if let Some(direct) = direct {
        let room = (buf.len() / ALIGN * ALIGN).min(want.next_multiple_of(ALIGN));
        while done < want && done < room {
            // Whole aligned blocks only: the tail past the file's end reads short.
            match read_at(direct, &mut buf[done..room], at + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
            if done % ALIGN != 0 {
                break;
            }
        }
        done = done.min(want);
    }
    while done < want {
        match read_at(buffered, &mut buf[done..want], at + done as u64) {
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was read"));
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The open `file` opened again for direct I/O (through `/proc/self/fd`, so that it is the
/// same file whatever its path has become), or `None` where that is refused.
#[cfg(target_os = "linux")]
pub(crate) fn reopen_direct(file: &File) -> Option<File> {
    use std::os::fd::AsRawFd;
    open_direct(Path::new(&format!("/proc/self/fd/{}", file.as_raw_fd())))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn reopen_direct(_file: &File) -> Option<File> {
    None
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_byte_of_odd_sizes() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 1, 4095, 4096, 4097, PIECE - 1, PIECE + 12_345, 3 * PIECE + 1] {
            let path = dir.path().join(format!("f{len}"));
            let data: Vec<u8> = (0..len as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
            std::fs::write(&path, &data).unwrap();
            for direct in [true, false] {
                let opened = if direct { open_direct(&path) } else { None };
                let (buffer, got_len) = read_whole_from(&path, opened).unwrap();
                assert_eq!(got_len, len as u64);
                assert_eq!(&buffer[..len], &data[..], "{len} bytes, direct {direct}");
                assert!(buffer[len..].iter().all(|&b| b == 0), "past the end: zeros");
            }
        }
    }
}
