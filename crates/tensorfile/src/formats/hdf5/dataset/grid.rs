//! The grid of chunks over a dataset: how many chunks each dimension has, and how the chunk
//! indexes of layout version 4 number them.

use crate::checked;
use crate::error::{Error, Result, Rule};

use super::dataspace::UNLIMITED;

/// One stored chunk: where it is in the grid and in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::formats::hdf5) struct ChunkRef {
    /// The chunk's position in the grid (its first element's index divided by the chunk
    /// shape), one entry per dimension.
    pub scaled: Vec<u64>,
    /// The chunk's address.
    pub addr: u64,
    /// Its stored (filtered) size in bytes.
    pub size: u64,
    /// The filters skipped for it (bit `i`: filter `i`).
    pub mask: u32,
}

/// The chunk grid of a dataset.
#[derive(Debug, Clone)]
pub(in crate::formats::hdf5) struct Grid {
    /// Chunks along each dimension covering the current shape.
    pub counts: Vec<u64>,
    /// Chunks along each dimension covering the maximum shape ([`UNLIMITED`] for an
    /// unlimited dimension).
    pub max_counts: Vec<u64>,
    /// The number of chunks covering the current shape.
    pub total: u64,
}

impl Grid {
    /// The grid of chunks of shape `chunk` over `dims`, growing up to `max_dims`.
    pub(in crate::formats::hdf5) fn new(dims: &[u64], max_dims: &[u64], chunk: &[u64]) -> Result<Grid> {
        let counts: Vec<u64> = dims.iter().zip(chunk).map(|(&d, &c)| d.div_ceil(c)).collect();
        let max_counts =
            max_dims.iter().zip(chunk).map(|(&d, &c)| if d == UNLIMITED { UNLIMITED } else { d.div_ceil(c) }).collect();
        let total = checked::numel(&counts)?;
        Ok(Grid { counts, max_counts, total })
    }

    /// Whether `scaled` lies in the grid of the current shape.
    pub(in crate::formats::hdf5) fn contains(&self, scaled: &[u64]) -> bool {
        scaled.len() == self.counts.len() && scaled.iter().zip(&self.counts).all(|(s, c)| s < c)
    }

    /// The row-major numbering of chunks over the maximum shape that the implicit and fixed
    /// array indexes use; the extensible array's, which moves its unlimited dimension first.
    /// Returns the dimensions in numbering order (positions into `scaled`) and their counts,
    /// the first count left unbounded.
    fn order(&self, extensible: bool) -> Result<(Vec<usize>, Vec<u64>)> {
        let rank = self.max_counts.len();
        let mut order: Vec<usize> = (0..rank).collect();
        if extensible {
            let unlimited: Vec<usize> = (0..rank).filter(|&d| self.max_counts[d] == UNLIMITED).collect();
            let &[u] = unlimited.as_slice() else {
                return Err(Error::invalid(
                    Rule::BadField,
                    format!(
                        "HDF5 extensible array chunk index over {} unlimited dimensions (needs one)",
                        unlimited.len()
                    ),
                ));
            };
            order.remove(u);
            order.insert(0, u);
        } else if self.max_counts.contains(&UNLIMITED) {
            return Err(Error::invalid(
                Rule::BadField,
                "HDF5 implicit or fixed array chunk index over an unlimited dimension",
            ));
        }
        let counts = order.iter().map(|&d| self.max_counts[d]).collect();
        Ok((order, counts))
    }

    /// The numbering of chunks an implicit, fixed array or (with `extensible`) extensible
    /// array index uses.
    pub(in crate::formats::hdf5) fn numbering(&self, extensible: bool) -> Result<Numbering> {
        let (order, counts) = self.order(extensible)?;
        let rank = counts.len();
        // Strides of the numbering: the product of the following counts (the first unused).
        let mut strides = vec![1u64; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            strides[d] = checked::mul(strides[d + 1], counts[d + 1], "chunk number")?;
        }
        Ok(Numbering { order, strides, counts: self.counts.clone() })
    }
}

/// How an index numbers chunks: row-major over the maximum shape, in some order of the
/// dimensions.
pub(in crate::formats::hdf5) struct Numbering {
    order: Vec<usize>,
    strides: Vec<u64>,
    counts: Vec<u64>,
}

impl Numbering {
    /// The number of the chunk at grid position `scaled`.
    pub(in crate::formats::hdf5) fn number(&self, scaled: &[u64]) -> Result<u64> {
        let mut number = 0u64;
        for (k, &d) in self.order.iter().enumerate() {
            number = checked::add(number, checked::mul(scaled[d], self.strides[k], "chunk number")?, "chunk number")?;
        }
        Ok(number)
    }

    /// The grid position of chunk `number`, or `None` when it lies outside the current shape.
    pub(in crate::formats::hdf5) fn position(&self, number: u64) -> Option<Vec<u64>> {
        let mut scaled = vec![0u64; self.order.len()];
        let mut rest = number;
        for (k, &d) in self.order.iter().enumerate() {
            let stride = self.strides[k];
            scaled[d] = rest / stride;
            rest %= stride;
        }
        scaled.iter().zip(&self.counts).all(|(s, c)| s < c).then_some(scaled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_over_the_maximum_shape() {
        // 5x7 in chunks of 2x3 (3x3 chunks), maximum 8x7 (4x3 chunks).
        let g = Grid::new(&[5, 7], &[8, 7], &[2, 3]).unwrap();
        assert_eq!((g.counts.clone(), g.total), (vec![3, 3], 9));
        let n = g.numbering(false).unwrap();
        assert_eq!(n.position(4), Some(vec![1, 1]));
        assert_eq!(n.position(8), Some(vec![2, 2]));
        assert_eq!(n.position(9), None);
        assert_eq!(n.number(&[2, 1]).unwrap(), 7);
        // Unlimited second dimension: it goes first in the extensible array's numbering.
        let g = Grid::new(&[4, 5], &[4, UNLIMITED], &[2, 2]).unwrap();
        let n = g.numbering(true).unwrap();
        assert_eq!(
            [0, 1, 2, 5].map(|i| n.position(i)),
            [Some(vec![0, 0]), Some(vec![1, 0]), Some(vec![0, 1]), Some(vec![1, 2])]
        );
        assert_eq!(n.position(6), None);
        assert!(g.numbering(false).is_err());
        assert!(Grid::new(&[1 << 40, 1 << 40], &[1 << 40, 1 << 40], &[1, 1]).is_err());
    }
}
