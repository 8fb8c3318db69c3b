//! The library's only `unsafe` code: mapping a file into memory.

use std::fs::File;
use std::io;

use memmap2::{Mmap, MmapMut, MmapOptions};

/// Map `file` read-only.
pub(super) fn map_read_only(file: &File) -> io::Result<Mmap> {
    // SAFETY: the map is read-only and we never hand out mutable access to it. The remaining
    // hazard of any file map is another process truncating or rewriting the file while it is
    // mapped; that is outside what a library can prevent, and our own writers never modify a
    // file in place (they write a temporary file and rename it over the destination, which
    // leaves existing maps of the old file intact).
    unsafe { Mmap::map(file) }
}

/// Map bytes `offset..offset + len` of `file` privately, copy-on-write: readable and
/// writable, sharing the page cache's pages until a page is written, when the kernel gives
/// this map a copy of its own. Nothing written to the map ever reaches the file.
pub(super) fn map_private(file: &File, offset: u64, len: usize) -> io::Result<MmapMut> {
    // SAFETY: a private map is memory of this process alone: writes to it never reach the file
    // or any other map of it (MAP_PRIVATE). The hazard left is the one of every file map
    // (another process truncating the file under it; see `map_read_only`). memmap2 aligns the
    // offset to a page and checks `offset + len` against nothing, so the caller passes a
    // range already checked against the file's size.
    unsafe { MmapOptions::new().offset(offset).len(len).map_copy(file) }
}

/// A zeroed, writable buffer of `len` bytes for a large download: an anonymous map, so that
/// it is given back to the system whole when dropped (no `unsafe`: an anonymous map is memory
/// no one else can see). Not advised into huge pages: where the kernel compacts memory to
/// find them on demand, that made downloads stall unpredictably (0.9 to 1.9 s of system time
/// for the same 2.5 GB).
#[cfg(feature = "remote")]
pub(super) fn large_buffer(len: usize) -> io::Result<memmap2::MmapMut> {
    memmap2::MmapMut::map_anon(len)
}
