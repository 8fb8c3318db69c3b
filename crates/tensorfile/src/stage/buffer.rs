//! Staging buffers: page-aligned anonymous memory that a caller registers with a device
//! driver once and keeps from load to load, filled by one holder at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::source::direct::ALIGN;

/// A staging buffer: anonymous memory of a chunk's size, page-aligned (so that direct reads
/// can land in it), which a caller can register with a device driver as pinned memory. It is
/// written only by whoever holds it ([`StageBuffer::hold`], or a [`super::StagePipeline`]),
/// one at a time; what reads it (a device copy) goes by its address.
pub struct StageBuffer {
    map: memmap2::MmapRaw,
    held: AtomicBool,
}

impl StageBuffer {
    /// A buffer of `len` bytes (at least one page).
    pub fn new(len: usize) -> Result<StageBuffer> {
        let map = memmap2::MmapMut::map_anon(len.max(ALIGN))?;
        Ok(StageBuffer { map: map.into(), held: AtomicBool::new(false) })
    }

    /// Where the buffer starts in memory, for a caller that hands it to a driver.
    pub fn address(&self) -> usize {
        self.map.as_ptr() as usize
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the buffer has no bytes (never: at least a page).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// The buffer, held to be written by whoever holds the result ([`Held::bytes_mut`], or by
    /// its address from outside Rust) until it is dropped; an error says it is in use.
    pub fn hold(self: &Arc<StageBuffer>) -> Result<Held> {
        self.take()?;
        Ok(Held { buffer: self.clone() })
    }

    /// Mark the buffer held, or say that someone holds it.
    pub(super) fn take(&self) -> Result<()> {
        if self.held.swap(true, Ordering::Acquire) {
            return Err(Error::usage("a staging buffer filled by two at once (another load is filling it)"));
        }
        Ok(())
    }

    /// Let the buffer go (held by [`StageBuffer::take`]).
    pub(super) fn give_back(&self) {
        self.held.store(false, Ordering::Release);
    }

    /// `len` bytes from `at`, to write.
    ///
    /// # Safety
    /// The caller holds the buffer (`take`) and no other reference to these bytes lives while
    /// the slice does: the pipeline hands each part of a stage to one thread, parts do not
    /// overlap, and a stage is not read until all its parts are written.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn part(&self, at: usize, len: usize) -> &mut [u8] {
        assert!(at.checked_add(len).is_some_and(|end| end <= self.map.len()), "a part past its staging buffer");
        // SAFETY: the map is `self.map.len()` bytes of writable anonymous memory that lives as
        // long as `self`; the range is within it (checked above); the caller's contract makes
        // this slice the only reference to these bytes while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(at), len) }
    }
}

impl StageBuffer {
    /// The first `len` bytes, to read.
    ///
    /// # Safety
    /// No one writes these bytes while the slice lives.
    pub(super) unsafe fn filled(&self, len: usize) -> &[u8] {
        assert!(len <= self.map.len(), "a stage past its staging buffer");
        // SAFETY: the map is `self.map.len()` bytes of anonymous memory that lives as long as
        // `self`, `len` is within it, and the caller's contract keeps writers away.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr(), len) }
    }
}

/// A [`StageBuffer`] held to be written, by [`Held::bytes_mut`] or by its address; let go
/// when dropped.
pub struct Held {
    buffer: Arc<StageBuffer>,
}

impl Held {
    /// Where the buffer starts in memory.
    pub fn address(&self) -> usize {
        self.buffer.address()
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether the buffer has no bytes (never: at least a page).
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// The buffer's bytes, to fill.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: this holds the buffer alone, and the slice borrows it mutably: no other
        // slice of it lives at the same time.
        unsafe { self.buffer.part(0, self.buffer.len()) }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.buffer.give_back();
    }
}
