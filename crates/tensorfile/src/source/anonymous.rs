//! Anonymous maps of this process's own held as [`super::Bytes`]: made for an output
//! ([`super::FreshBuffer`]) or a download (given back to the download pool when dropped).

use memmap2::MmapMut;

/// Bytes a map may hold beyond those its holder keeps and still be taken whole by it: a
/// download buffer rounded up to the pool's grain is, one chosen for a much larger download
/// is not.
pub(super) const SPARE_MAX: usize = 2 << 20;

/// An anonymous map held as [`super::Bytes`]. A sole holder may take it whole
/// ([`AnonymousMap::take`]: [`super::Bytes::into_private`]), which keeps it from the pool.
pub(super) struct AnonymousMap {
    map: Option<MmapMut>,
    /// Where the map goes when dropped instead of being unmapped (a download buffer: back to
    /// its pool).
    give_back: Option<fn(MmapMut)>,
}

impl AnonymousMap {
    /// A map made for its bytes alone, unmapped when dropped.
    pub(super) fn fresh(map: MmapMut) -> Self {
        AnonymousMap { map: Some(map), give_back: None }
    }

    /// A map handed to `give_back` when dropped, unless taken (a download buffer of a pool).
    #[cfg(feature = "remote")]
    pub(super) fn given_back_to(map: MmapMut, give_back: fn(MmapMut)) -> Self {
        AnonymousMap { map: Some(map), give_back: Some(give_back) }
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
        if let (Some(give_back), Some(map)) = (self.give_back, self.map.take()) {
            give_back(map);
        }
    }
}
