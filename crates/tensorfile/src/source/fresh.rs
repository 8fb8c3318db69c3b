//! Memory an output is about to be written into whole (a tensor being dequantized, decoded or
//! cast): zeroed, writable, and for a large output already faulted in.
//!
//! Fresh memory costs a page fault per 4 KiB page the first time it is written, and the
//! kernel zeroes each page inside that fault: dequantizing into a new vector ran at a third
//! of the kernels' speed for it. A large buffer is an anonymous map whose pages are all made
//! at once (`MADV_POPULATE_WRITE`, Linux 5.14 and later), on every core: a few calls instead of
//! a fault per page, made before the kernels run rather than while they do (measured in
//! docs/performance.md, "Dequantizing into fresh memory": 1 GB of float32 1.4x faster on one
//! thread, 1.65x on two, where the faults of two threads had made two no faster than one).
//! Not advised into huge pages: where the kernel compacts memory to find them on demand (a
//! page cache full of model files), that was slower than 4 KiB faults, as it was for
//! downloads (`mapped::large_buffer`).

use memmap2::MmapMut;

use super::Bytes;
use crate::error::{Error, Result};

/// The smallest buffer made as a populated anonymous map: below it a vector (the allocator's
/// memory is often already faulted in, and a map costs a system call to make and to free).
pub(crate) const FRESH_MAP_MIN: usize = 1 << 20;

/// Zeroed, writable bytes of an output the caller fills, then hands on as [`Bytes`] (which
/// [`Bytes::into_private`] gives back as memory of the holder's own, without a copy).
pub(crate) struct FreshBuffer {
    memory: Memory,
}

enum Memory {
    Vec(Vec<u8>),
    Map(MmapMut),
}

impl FreshBuffer {
    /// `len` zeroed bytes; `what` names them in the error when the memory cannot be had.
    pub fn zeroed(len: usize, what: &str) -> Result<Self> {
        if len >= FRESH_MAP_MIN
            && let Ok(map) = populated_map(len)
        {
            return Ok(FreshBuffer { memory: Memory::Map(map) });
        }
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| Error::unsupported(format!("{what}: cannot allocate {len} bytes")))?;
        v.resize(len, 0);
        Ok(FreshBuffer { memory: Memory::Vec(v) })
    }

    /// The bytes, to write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.memory {
            Memory::Vec(v) => v,
            Memory::Map(m) => m,
        }
    }

    /// Whether the bytes are an anonymous map (a large buffer) rather than a vector.
    #[cfg(test)]
    fn is_map(&self) -> bool {
        matches!(self.memory, Memory::Map(_))
    }

    /// The bytes written, as [`Bytes`] owned by them alone.
    pub fn into_bytes(self) -> Bytes {
        match self.memory {
            Memory::Vec(v) => Bytes::from_vec(v),
            Memory::Map(m) => Bytes::from_anonymous_map(m),
        }
    }
}

/// Bytes of a fresh map each thread makes the pages of at once: the kernel makes the pages of
/// disjoint ranges side by side (measured: two threads populate 1 GiB in half the time of
/// one), and zeroes each as it makes it.
const POPULATE_TASK: usize = 8 << 20;

/// An anonymous map of `len` bytes with every page made now, in ranges of [`POPULATE_TASK`]
/// on every core. A map the system refuses is an error (the caller falls back to a vector); a
/// refused population is only a loss of speed (the pages fault in as they are written, as a
/// vector's do).
fn populated_map(len: usize) -> std::io::Result<MmapMut> {
    let map = MmapMut::map_anon(len)?;
    #[cfg(target_os = "linux")]
    {
        use rayon::prelude::*;
        let ranges = len.div_ceil(POPULATE_TASK);
        (0..ranges).into_par_iter().for_each(|i| {
            let start = i * POPULATE_TASK;
            let _ = map.advise_range(memmap2::Advice::PopulateWrite, start, POPULATE_TASK.min(len - start));
        });
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_are_maps_small_ones_vectors_both_zeroed_and_kept_without_a_copy() {
        for (len, map) in [(FRESH_MAP_MIN - 1, false), (FRESH_MAP_MIN, true), (3 * FRESH_MAP_MIN + 5, true)] {
            let mut b = FreshBuffer::zeroed(len, "test").unwrap();
            assert_eq!(b.is_map(), map, "{len}");
            let s = b.as_mut_slice();
            assert!(s.iter().all(|&x| x == 0));
            s[len - 1] = 7;
            let address = s.as_ptr() as usize;
            let bytes = b.into_bytes();
            assert_eq!((bytes.len(), bytes[len - 1], bytes.is_mapped()), (len, 7, false));
            // The holder's own memory, where it was written: no copy.
            let private = bytes.into_private();
            assert_eq!((private.address(), private.len(), private[len - 1]), (address, len, 7));
        }
    }

    #[test]
    fn a_shared_map_is_copied_when_made_private() {
        let mut b = FreshBuffer::zeroed(FRESH_MAP_MIN, "test").unwrap();
        b.as_mut_slice()[0] = 1;
        let bytes = b.into_bytes();
        let kept = bytes.clone();
        let private = bytes.into_private();
        assert_ne!(private.address(), kept.as_ptr() as usize);
        assert_eq!((private[0], kept[0]), (1, 1));
        let tail = kept.slice(1, 10).unwrap().into_private();
        assert_eq!(&*tail, &[0u8; 10]);
    }

    #[test]
    fn an_impossible_size_is_an_error_naming_it() {
        let e = FreshBuffer::zeroed(usize::MAX, "dequantized bytes").err().unwrap();
        assert!(e.to_string().contains("dequantized bytes"), "{e}");
    }
}
