//! Anonymous maps of this process's own held as [`Bytes`]: made for an output
//! ([`super::FreshBuffer`]) or a download (`super::pool::Buffer`, given back to the pool when
//! dropped).

use memmap2::MmapMut;

/// Bytes a map may hold beyond those its holder keeps and still be taken whole by it: a
/// download buffer rounded up to the pool's grain is, one chosen for a much larger download
/// is not.
const SPARE_MAX: usize = 2 << 20;

/// An anonymous map held as [`super::Bytes`]. A sole holder may take it whole
/// ([`AnonymousMap::take`]: [`super::Bytes::into_private`]), which keeps it from the pool.
pub(super) struct AnonymousMap {
    map: Option<MmapMut>,
    /// A download buffer, given back to the pool when dropped (read only where there is a
    /// pool: with the `remote` feature).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pooled: bool,
}

impl AnonymousMap {
    /// A map made for its bytes alone, unmapped when dropped.
    pub(super) fn fresh(map: MmapMut) -> Self {
        AnonymousMap { map: Some(map), pooled: false }
    }

    /// A download buffer of the pool.
    #[cfg(feature = "remote")]
    pub(super) fn pooled(map: MmapMut) -> Self {
        AnonymousMap { map: Some(map), pooled: true }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The map, for a holder that keeps its first `len` bytes; itself back when the map is
    /// much larger than that (a pool's buffer chosen for a larger download): the holder then
    /// copies its bytes rather than keep the rest's pages.
    pub(super) fn take(mut self, len: usize) -> Result<MmapMut, AnonymousMap> {
        let spare = self.map.as_ref().map_or(0, |m| m.len().saturating_sub(len));
        match self.map.take() {
            Some(map) if spare <= SPARE_MAX.max(len / 8) => Ok(map),
            map => {
                self.map = map;
                Err(self)
            }
        }
    }
}

impl Drop for AnonymousMap {
    fn drop(&mut self) {
        #[cfg(feature = "remote")]
        if let (true, Some(map)) = (self.pooled, self.map.take()) {
            super::pool::give_back(map);
        }
    }
}
