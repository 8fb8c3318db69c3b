//! ggml's grids as its quantizers see them (`iq2xs_init_impl`, `iq3xs_init_impl`): every grid
//! point as odd coordinates `2l + 1`, a map from each packed code (`l` of every coordinate,
//! `bits` each, first coordinate lowest) to its grid index, and for each code off the grid the
//! list of grid points nearest to it (those at the `nwant` smallest squared distances, nearest
//! first, equal distances by grid index): the order in which the quantizers try them, which
//! decides their ties.
//!
//! The points come from the dequantization tables (same order as ggml's `kgrid_*` tables,
//! which list each point's codes), built once on first use. Only codes whose coordinates the
//! quantizers can produce (their clamped range) get a neighbour list; ggml's lists for the
//! others are never read.

use std::sync::OnceLock;

use super::Step;
use crate::model::quant::ggml::grid_iq1::IQ1S_GRID;
use crate::model::quant::ggml::grid_iq2::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID};
use crate::model::quant::ggml::grid_iq3::{IQ3S_GRID, IQ3XXS_GRID};

/// Marks a code that is neither on the grid nor has a neighbour list.
const NO_LIST: i32 = i32::MIN;

/// The byte values of each level `l` in the dequantization tables.
const IQ2_LEVELS: [u8; 3] = [0x08, 0x19, 0x2b];
/// IQ1's levels are the signed bytes -1, 0, 1.
const IQ1_LEVELS: [u8; 3] = [0xff, 0x00, 0x01];
const IQ3XXS_LEVELS: [u8; 8] = [0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e];
const IQ3S_LEVELS: [u8; 8] = [0x01, 0x03, 0x05, 0x07, 0x09, 0x0b, 0x0d, 0x0f];

/// A grid of points with `D` coordinates, with its code map and neighbour lists.
pub(super) struct Lattice<const D: usize> {
    /// The grid points, each coordinate `2l + 1`.
    points: Vec<[i8; D]>,
    /// Per code: its grid index (>= 0), `-(start + 1)` of its list in `neighbours`, or
    /// [`NO_LIST`].
    map: Vec<i32>,
    /// The neighbour lists, each its length and then grid indices.
    neighbours: Vec<u16>,
}

/// Where a code lies.
pub(super) enum Place<'a> {
    /// On the grid, at this index.
    On(u16),
    /// Off the grid: the nearest grid indices, in the order ggml tries them.
    Near(&'a [u16]),
}

impl<const D: usize> Lattice<D> {
    /// The lattice of the table `rows` (coordinate `k` in byte `k`, one of `levels` each), codes
    /// of `bits` bits per coordinate, neighbours at the `nwant` smallest distances.
    fn build(rows: impl IntoIterator<Item = u64>, levels: &[u8], bits: u32, nwant: usize) -> Self {
        let points: Vec<[i8; D]> = rows
            .into_iter()
            .map(|row| {
                std::array::from_fn(|k| {
                    // Every byte of the tables is one of their levels (checked by the tests).
                    let l = levels.iter().position(|&v| v == (row >> (8 * k)) as u8).unwrap_or(0);
                    2 * l as i8 + 1
                })
            })
            .collect();
        let mut map = vec![NO_LIST; 1 << (bits as usize * D)];
        for (i, p) in points.iter().enumerate() {
            let code = (0..D).fold(0usize, |c, k| c | ((p[k] as usize - 1) / 2) << (bits as usize * k));
            map[code] = i as i32;
        }
        let mut neighbours = Vec::new();
        let mut d2 = vec![0i32; points.len()];
        let digit = |code: usize, k: usize| (code >> (bits as usize * k)) & ((1 << bits) - 1);
        for (code, entry) in map.iter_mut().enumerate() {
            if *entry >= 0 || (0..D).any(|k| digit(code, k) >= levels.len()) {
                continue;
            }
            let pos: [i32; D] = std::array::from_fn(|k| 2 * digit(code, k) as i32 + 1);
            for (d, p) in d2.iter_mut().zip(&points) {
                *d = (0..D).map(|k| (i32::from(p[k]) - pos[k]).pow(2)).sum();
            }
            // The nwant-th smallest distinct distance (or the largest there is).
            let mut cutoff = i32::MIN;
            for _ in 0..nwant {
                match d2.iter().copied().filter(|&d| d > cutoff).min() {
                    Some(next) => cutoff = next,
                    None => break,
                }
            }
            let mut near: Vec<(i32, u16)> =
                d2.iter().enumerate().filter(|&(_, &d)| d <= cutoff).map(|(j, &d)| (d, j as u16)).collect();
            near.sort_unstable();
            *entry = -(neighbours.len() as i32 + 1);
            neighbours.push(near.len() as u16);
            neighbours.extend(near.iter().map(|&(_, j)| j));
        }
        Lattice { points, map, neighbours }
    }

    /// Grid point `index` (an index from this lattice's map or lists, or a stored 11-bit code
    /// of the 2048-point grid).
    #[inline(always)]
    pub(super) fn point(&self, index: u16) -> &[i8; D] {
        &self.points[usize::from(index)]
    }

    /// The nearest of `neighbours` to `xval` at `scale` by weighted squared distance (the
    /// first of equals), its levels written to `l`: ggml's `iq2_find_best_neighbour` and
    /// `iq3_find_best_neighbour`.
    #[inline(always)]
    pub(super) fn nearest(
        &self,
        neighbours: &[u16],
        xval: &[f32],
        weight: &[f32],
        scale: f32,
        l: &mut [i8],
    ) -> Step<u16> {
        let mut best_d2 = f32::MAX;
        let mut best = None;
        for &g in neighbours {
            let pg = self.point(g);
            let mut d2 = 0f32;
            for i in 0..D {
                let diff = scale * f32::from(pg[i]) - xval[i];
                d2 += weight[i] * diff * diff;
            }
            if d2 < best_d2 {
                best_d2 = d2;
                best = Some(g);
            }
        }
        let g = best.ok_or("no neighbour nearer than FLT_MAX")?;
        self.levels(g, l);
        Ok(g)
    }

    /// Writes the levels of grid point `g` (`(p - 1) / 2` of each coordinate) to `l`.
    #[inline(always)]
    pub(super) fn levels(&self, g: u16, l: &mut [i8]) {
        for (l, p) in l.iter_mut().zip(self.point(g)) {
            *l = (p - 1) / 2;
        }
    }

    /// Where `code` lies; a code ggml has no entry for (its table is smaller, or the code
    /// holds a coordinate the quantizers never produce) is where ggml reads outside its tables.
    #[inline(always)]
    pub(super) fn place(&self, code: u16) -> Step<Place<'_>> {
        match self.map.get(usize::from(code)).copied() {
            Some(i) if i >= 0 => Ok(Place::On(i as u16)),
            Some(i) if i != NO_LIST => {
                let start = (-(i + 1)) as usize;
                let n = usize::from(self.neighbours[start]);
                Ok(Place::Near(&self.neighbours[start + 1..start + 1 + n]))
            }
            _ => Err("codes outside the grid's map"),
        }
    }

    /// The grid index of `code`, which must be on the grid (ggml's final check).
    #[inline(always)]
    pub(super) fn index_on_grid(&self, code: u16) -> Step<u16> {
        match self.map.get(usize::from(code)) {
            Some(&i) if i >= 0 => Ok(i as u16),
            _ => Err("found a point not on the grid"),
        }
    }
}

/// The code of `l` (one level per coordinate, `bits` each) as ggml packs it: each `int8`
/// shifted as an `int` and or-ed into a 16-bit word, so that out-of-range levels wrap as in C.
#[inline(always)]
pub(super) fn code(l: &[i8], bits: u32) -> u16 {
    let mut u = 0u16;
    for (i, &v) in l.iter().enumerate() {
        u |= (i32::from(v) << (bits * i as u32)) as u16;
    }
    u
}

/// IQ2_XXS: 256 points, two nearest distances.
pub(super) fn iq2_xxs() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(IQ2XXS_GRID, &IQ2_LEVELS, 2, 2))
}

/// IQ2_XS: 512 points, two nearest distances.
pub(super) fn iq2_xs() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(IQ2XS_GRID, &IQ2_LEVELS, 2, 2))
}

/// IQ2_S: 1024 points, the nearest distance only.
pub(super) fn iq2_s() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(IQ2S_GRID, &IQ2_LEVELS, 2, 1))
}

/// IQ1_S and IQ1_M: 2048 points, three nearest distances.
pub(super) fn iq1() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(IQ1S_GRID, &IQ1_LEVELS, 2, 3))
}

/// IQ3_XXS: 256 points of four coordinates, two nearest distances.
pub(super) fn iq3_xxs() -> &'static Lattice<4> {
    static L: OnceLock<Lattice<4>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(IQ3XXS_GRID.map(u64::from), &IQ3XXS_LEVELS, 3, 2))
}

/// IQ3_S: 512 points of four coordinates, three nearest distances.
pub(super) fn iq3_s() -> &'static Lattice<4> {
    static L: OnceLock<Lattice<4>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(IQ3S_GRID.map(u64::from), &IQ3S_LEVELS, 3, 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte of every table is one of its levels, so that no point decodes by default.
    #[test]
    fn every_table_byte_is_a_level() {
        let check = |name: &str, rows: &[u64], levels: &[u8], dims: usize| {
            for (i, &row) in rows.iter().enumerate() {
                for k in 0..dims {
                    let b = (row >> (8 * k)) as u8;
                    assert!(levels.contains(&b), "{name}[{i}] byte {k} is {b:#04x}");
                }
            }
        };
        check("IQ2XXS", &IQ2XXS_GRID, &IQ2_LEVELS, 8);
        check("IQ2XS", &IQ2XS_GRID, &IQ2_LEVELS, 8);
        check("IQ2S", &IQ2S_GRID, &IQ2_LEVELS, 8);
        check("IQ1S", &IQ1S_GRID, &IQ1_LEVELS, 8);
        check("IQ3XXS", &IQ3XXS_GRID.map(u64::from), &IQ3XXS_LEVELS, 4);
        check("IQ3S", &IQ3S_GRID.map(u64::from), &IQ3S_LEVELS, 4);
    }

    /// Facts of ggml's tables: its first codes (`kgrid_2bit_256` starts 0, 2, 5, 8;
    /// `kgrid_256` of IQ3_XXS 0, 2, 4, 9), and the size of its neighbour tables.
    #[test]
    fn codes_and_neighbours_are_ggmls() {
        let l = iq2_xxs();
        for (i, c) in [0u16, 2, 5, 8].into_iter().enumerate() {
            assert!(matches!(l.place(c), Ok(Place::On(g)) if usize::from(g) == i));
        }
        let l3 = iq3_xxs();
        for (i, c) in [0u16, 2, 4, 9].into_iter().enumerate() {
            assert!(matches!(l3.place(c), Ok(Place::On(g)) if usize::from(g) == i));
        }
        // Code 1 (first coordinate at level 1) is off IQ2_XXS's grid: its neighbours sorted by
        // distance, then index, all within the two smallest distances.
        let Ok(Place::Near(near)) = l.place(1) else { panic!("code 1 is on the grid") };
        let dist = |g: u16| {
            let p = l.point(g);
            (0..8).map(|k| (i32::from(p[k]) - if k == 0 { 3 } else { 1 }).pow(2)).sum::<i32>()
        };
        assert!(near.windows(2).all(|w| (dist(w[0]), w[0]) < (dist(w[1]), w[1])));
        assert!(near.iter().map(|&g| dist(g)).collect::<std::collections::BTreeSet<_>>().len() <= 2);
        // A level-3 coordinate is never produced: ggml's lists for it are never read.
        assert!(l.place(3).is_err());
        assert!(l.place(0xffff).is_err());
        assert_eq!(l.index_on_grid(1), Err("found a point not on the grid"));
    }

    #[test]
    fn codes_wrap_as_in_c() {
        assert_eq!(code(&[2, 1, 0, 0, 0, 0, 0, 0], 2), 0b0110);
        assert_eq!(code(&[7, 7, 7, 7], 3), 0x0fff);
        // -1 shifted into the top: every bit above set, truncated to 16 bits.
        assert_eq!(code(&[0, 0, 0, 0, 0, 0, 0, -1], 2), 0xc000);
    }
}
