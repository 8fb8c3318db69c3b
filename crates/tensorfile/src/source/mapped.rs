//! The library's only `unsafe` code: mapping a file into memory.

use std::fs::File;
use std::io;

use memmap2::Mmap;

/// Map `file` read-only.
pub(super) fn map_read_only(file: &File) -> io::Result<Mmap> {
    // SAFETY: the map is read-only and we never hand out mutable access to it. The remaining
    // hazard of any file map is another process truncating or rewriting the file while it is
    // mapped; that is outside what a library can prevent, and our own writers never modify a
    // file in place (they write a temporary file and rename it over the destination, which
    // leaves existing maps of the old file intact).
    unsafe { Mmap::map(file) }
}

/// A zeroed, writable buffer of `len` bytes for a large download, from an anonymous map
/// asked to be backed by huge pages: filling it then takes a page fault per 2 MiB rather than
/// per 4 KiB (most of the cost of receiving gigabytes). No `unsafe`: an anonymous map is
/// memory no one else can see.
pub(super) fn large_buffer(len: usize) -> io::Result<memmap2::MmapMut> {
    let buffer = memmap2::MmapMut::map_anon(len)?;
    // Advice only: a kernel without transparent huge pages serves 4 KiB pages.
    let _ = buffer.advise(memmap2::Advice::HugePage);
    Ok(buffer)
}
