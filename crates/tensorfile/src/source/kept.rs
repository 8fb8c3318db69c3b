//! Small ranges already fetched from a remote file, kept so that asking again for part of
//! one (a reader reading its index out of a speculative read of the file's end) makes no
//! second request.

use std::sync::Mutex;

use super::Bytes;
use crate::error::Result;

/// Fetched ranges at most this large are kept (a speculative read of a header or footer, an
/// index); tensor data is not.
const KEPT_MAX: u64 = 1024 * 1024;
/// How many such ranges are kept (oldest dropped first).
const KEPT_COUNT: usize = 16;

#[derive(Default)]
pub struct Kept {
    ranges: Mutex<Vec<(u64, Bytes)>>,
}

impl Kept {
    /// Bytes `offset..offset + len` when one kept range holds them all.
    pub fn get(&self, offset: u64, len: u64) -> Result<Option<Bytes>> {
        let ranges = self.ranges.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for (start, b) in ranges.iter() {
            let end = start.saturating_add(b.len() as u64);
            if offset >= *start && offset.saturating_add(len) <= end {
                return b.slice(offset - start, len).map(Some);
            }
        }
        Ok(None)
    }

    /// Keep `bytes`, fetched from `offset`, if small enough.
    pub fn keep(&self, offset: u64, bytes: &Bytes) {
        if bytes.len() as u64 > KEPT_MAX || bytes.is_empty() {
            return;
        }
        let mut ranges = self.ranges.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if ranges.len() == KEPT_COUNT {
            ranges.remove(0);
        }
        ranges.push((offset, bytes.clone()));
    }
}
