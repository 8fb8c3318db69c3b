//! Buffers for large downloads, used again once the bytes they held are dropped.
//!
//! Receiving into fresh memory costs a page fault and the kernel zeroing every page, about as
//! much as receiving itself. A reader that goes through a file tensor by tensor (a conversion,
//! a full load) drops each tensor's bytes before the next arrives: their buffer then serves
//! the next download of a size it can hold, already faulted in.

use std::sync::{Arc, Mutex, OnceLock};

use memmap2::MmapMut;

use super::Bytes;

/// Buffers larger than this are not kept for reuse (an embedding table of gigabytes).
const REUSED_MAX: usize = 256 << 20;
/// At most this many bytes of buffers wait for reuse.
const POOL_MAX: usize = 512 << 20;
/// Buffer sizes are rounded up to this, so that sizes close to each other share buffers.
const GRAIN: usize = 2 << 20;

#[derive(Default)]
struct Pool {
    free: Mutex<Vec<MmapMut>>,
}

fn pool() -> &'static Arc<Pool> {
    static POOL: OnceLock<Arc<Pool>> = OnceLock::new();
    POOL.get_or_init(Arc::default)
}

/// A writable buffer of at least `len` bytes (its content is unspecified: a download
/// overwrites all of it); [`Buffer::freeze`] turns it into [`Bytes`] of its first `len`.
pub struct Buffer {
    map: MmapMut,
    len: usize,
}

impl Buffer {
    pub fn new(len: usize) -> std::io::Result<Buffer> {
        if len <= REUSED_MAX {
            let mut free = pool().free.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            // The smallest free buffer that holds `len`.
            let best = free.iter().enumerate().filter(|(_, m)| m.len() >= len).min_by_key(|(_, m)| m.len());
            if let Some((k, _)) = best {
                return Ok(Buffer { map: free.swap_remove(k), len });
            }
        }
        let size = if len <= REUSED_MAX { len.div_ceil(GRAIN).saturating_mul(GRAIN) } else { len };
        Ok(Buffer { map: super::mapped::large_buffer(size)?, len })
    }

    /// The `len` bytes to fill.
    pub fn as_mut(&mut self) -> &mut [u8] {
        &mut self.map[..self.len]
    }

    /// The filled bytes, shared; the buffer goes back to the pool when the last of them is
    /// dropped.
    pub fn freeze(self) -> crate::error::Result<Bytes> {
        let len = self.len as u64;
        Bytes::from_owner(Returned(Some(self.map))).slice(0, len)
    }
}

/// A buffer handed out as [`Bytes`]: given back to the pool when dropped.
struct Returned(Option<MmapMut>);

impl AsRef<[u8]> for Returned {
    fn as_ref(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }
}

impl Drop for Returned {
    fn drop(&mut self) {
        let Some(map) = self.0.take() else { return };
        if map.len() > REUSED_MAX {
            return;
        }
        let mut free = pool().free.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let held: usize = free.iter().map(|m| m.len()).sum();
        if held + map.len() <= POOL_MAX {
            free.push(map);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_are_used_again() {
        let mut a = Buffer::new(3 << 20).unwrap();
        a.as_mut().fill(7);
        let bytes = a.freeze().unwrap();
        assert_eq!(bytes.len(), 3 << 20);
        assert!(bytes.iter().all(|&b| b == 7));
        let address = bytes.as_ptr() as usize;
        drop(bytes);
        // A smaller download reuses the returned buffer.
        let mut b = Buffer::new(1 << 20).unwrap();
        assert_eq!(b.as_mut().as_ptr() as usize, address);
        assert_eq!(b.as_mut().len(), 1 << 20);
    }
}
