//! Buffers for large downloads, used again once the bytes they held are dropped.
//!
//! Receiving into fresh memory costs a page fault and the kernel zeroing every page, about as
//! much as receiving itself. A reader that goes through a file tensor by tensor (a conversion,
//! a full load) drops each tensor's bytes before the next arrives: their buffer then serves
//! the next download of a size it can hold, already faulted in.

use std::sync::{Arc, Mutex, OnceLock};

use memmap2::MmapMut;

use super::Bytes;
use super::anonymous::AnonymousMap;

/// Buffers larger than this are not kept for reuse (an embedding table of gigabytes).
const REUSED_MAX: usize = 256 << 20;
/// At most this many bytes of buffers wait for reuse.
const POOL_MAX: usize = 512 << 20;
/// Buffer sizes are rounded up to this, so that sizes close to each other share buffers.
const GRAIN: usize = 2 << 20;
// A buffer rounded up to the grain is still taken whole by the holder that keeps it.
const _: () = assert!(GRAIN <= super::anonymous::SPARE_MAX);

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
        Bytes::from_anonymous(AnonymousMap::given_back_to(self.map, give_back)).slice(0, len)
    }
}

/// A download buffer given back by its holder ([`AnonymousMap`]'s drop): kept for the next
/// download that fits, unless too large or the pool is full.
fn give_back(map: MmapMut) {
    if map.len() > REUSED_MAX {
        return;
    }
    let mut free = pool().free.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let held: usize = free.iter().map(|m| m.len()).sum();
    if held + map.len() <= POOL_MAX {
        free.push(map);
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

    /// A download kept by its caller (a tensor loaded into numpy or torch) becomes the
    /// caller's memory as it is: no copy, no second set of pages; shared, or in a buffer
    /// much larger than itself, it is copied (and the buffer goes back to the pool).
    #[test]
    fn a_download_its_holder_keeps_is_taken_without_a_copy() {
        let mut a = Buffer::new((3 << 20) + 5).unwrap();
        a.as_mut().fill(9);
        let bytes = a.freeze().unwrap();
        let address = bytes.as_ptr() as usize;
        let private = bytes.into_private();
        assert_eq!((private.address(), private.len()), (address, (3 << 20) + 5));
        assert!(private.iter().all(|&b| b == 9));

        let mut b = Buffer::new(4 << 20).unwrap();
        b.as_mut().fill(3);
        let bytes = b.freeze().unwrap();
        let shared = bytes.clone();
        let private = bytes.into_private();
        assert_ne!(private.address(), shared.as_ptr() as usize);
        assert_eq!(&private[..], &shared[..]);
        let address = shared.as_ptr() as usize;
        drop(shared);

        // The 4 MiB buffer is back in the pool; a small download given it is copied out of it
        // when kept, and the buffer returns again.
        let mut c = Buffer::new(64 << 10).unwrap();
        assert_eq!(c.as_mut().as_ptr() as usize, address);
        c.as_mut().fill(5);
        let private = c.freeze().unwrap().into_private();
        assert_ne!(private.address(), address);
        assert_eq!((private.len(), private.iter().all(|&b| b == 5)), (64 << 10, true));
        assert_eq!(Buffer::new(1 << 20).unwrap().as_mut().as_ptr() as usize, address);
    }
}
