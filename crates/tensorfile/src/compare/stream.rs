//! Two tensors read in lockstep, piece by piece: memory is bounded by the pieces and a block
//! of decoded values, never the whole tensors. Each block is cut into sub-slices of a fixed
//! size measured on rayon's threads; their results are merged in order, so that the sums do
//! not depend on the number of threads.
//!
//! Two tensors of one dtype advance by bytes (the bitwise facts and the metrics in one pass);
//! tensors of two dtypes advance by decoded values.

use rayon::prelude::*;

use super::Side;
use super::ValueDiff;
use super::metrics::{Metrics, Sums, Tolerance};
use super::values::value_diff;
use crate::error::{Error, Result, Rule};
use crate::model::elements::Elements;
use crate::model::{Chunks, DType};
use crate::numbers::aligned;
use crate::source::Bytes;

/// Numbers measured by one task.
const SUB: usize = 1 << 14;
/// Numbers (or groups) held decoded per side at a time.
const BLOCK: usize = 1 << 20;

/// An error of one side's data.
pub(super) type SideError = (Side, Error);

/// A position in a tensor's pieces, cut on groups of whole elements.
struct Cursor<'a> {
    pieces: Chunks<'a>,
    piece: Option<Bytes>,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(chunks: Chunks<'a>, group: usize) -> Self {
        Cursor { pieces: aligned(chunks, group), piece: None, pos: 0 }
    }

    /// Bytes left in the current piece, moving on to the next non-empty piece when it is used
    /// up; 0 at the end of the data.
    fn available(&mut self) -> Result<usize> {
        loop {
            if let Some(p) = &self.piece
                && self.pos < p.len()
            {
                return Ok(p.len() - self.pos);
            }
            match self.pieces.next() {
                None => {
                    self.piece = None;
                    return Ok(0);
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(p)) => {
                    self.piece = Some(p);
                    self.pos = 0;
                }
            }
        }
    }

    /// The next `n` bytes of the current piece (`n` at most [`Cursor::available`]).
    fn take(&mut self, n: usize) -> &[u8] {
        let start = self.pos;
        self.pos += n;
        self.piece.as_deref().and_then(|p| p.get(start..start + n)).unwrap_or(&[])
    }
}

fn short_data(side: Side, what: &str) -> SideError {
    (side, Error::invalid(Rule::SizeMismatch, format!("its data ends before the other file's: {what}")))
}

/// The outcome of comparing two tensors of one dtype.
pub(super) struct Streamed {
    /// How their bytes differ; `None` when they are equal.
    pub values: Option<ValueDiff>,
    /// Their metrics, when asked for.
    pub metrics: Option<Metrics>,
}

/// Compare two tensors of `dtype` whose bytes come in `a` and `b`: bitwise, and by the metrics
/// when `numbers` (the count of numbers the tensor decodes to) is given.
pub(super) fn same_dtype(
    dtype: DType,
    a: Chunks<'_>,
    b: Chunks<'_>,
    numbers: Option<u64>,
    tol: Tolerance,
) -> std::result::Result<Streamed, SideError> {
    let elements = numbers.and_then(|_| Elements::of(dtype).ok());
    let (unit, unit_bytes) = match dtype.size().and_then(|s| usize::try_from(s).ok()) {
        Some(s) if s > 0 => (super::Unit::Element, s),
        _ => (super::Unit::Byte, 1),
    };
    let (mut ca, mut cb) = (Cursor::new(a, unit_bytes), Cursor::new(b, unit_bytes));
    let mut acc = ValueDiff { unit, compared: 0, differing: 0, first_index: 0, max_abs_diff: None, nan_mismatches: 0 };
    let mut sums = Sums::default();
    let mut left = numbers.unwrap_or(0);
    let sub_bytes = SUB * unit_bytes;
    loop {
        let na = ca.available().map_err(|e| (Side::A, e))?;
        let nb = cb.available().map_err(|e| (Side::B, e))?;
        if na == 0 || nb == 0 {
            if na != nb {
                let side = if na == 0 { Side::A } else { Side::B };
                return Err(short_data(side, &format!("after {} {}s", acc.compared, unit.name())));
            }
            break;
        }
        let n = na.min(nb).min(BLOCK * unit_bytes);
        let (xa, xb) = (ca.take(n), cb.take(n));
        let per_sub = elements.as_ref().map_or(0, |e| e.values_in(sub_bytes) as u64);
        let parts: Vec<(Option<ValueDiff>, Option<Sums>)> = xa
            .par_chunks(sub_bytes)
            .zip(xb.par_chunks(sub_bytes))
            .enumerate()
            .map(|(k, (sa, sb))| {
                let sums = elements.as_ref().map(|e| {
                    let limit = left.saturating_sub(per_sub.saturating_mul(k as u64));
                    measure(e, sa, sb, limit, tol)
                });
                (value_diff(dtype, sa, sb), sums)
            })
            .collect();
        for ((d, s), sa) in parts.iter().zip(xa.chunks(sub_bytes)) {
            let units = (sa.len() / unit_bytes) as u64;
            if let Some(d) = d {
                if acc.differing == 0 {
                    acc.first_index = acc.compared + d.first_index;
                }
                acc.differing += d.differing;
                acc.nan_mismatches += d.nan_mismatches;
                acc.max_abs_diff = match (acc.max_abs_diff, d.max_abs_diff) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                };
            }
            acc.compared += units;
            if let Some(s) = s {
                left -= s.compared().min(left);
                sums.merge(s);
            }
        }
    }
    Ok(Streamed { values: (acc.differing > 0).then_some(acc), metrics: elements.is_some().then(|| sums.finish()) })
}

/// The sums of the first `limit` numbers of `a` and `b`, both of the dtype `e` decodes.
fn measure(e: &Elements, a: &[u8], b: &[u8], limit: u64, tol: Tolerance) -> Sums {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut s = Sums::default();
    let mut va = e.decode(a);
    va.truncate(limit);
    if a == b {
        // Equal bytes, equal values: decoded once.
        s.add_equal(&va);
        return s;
    }
    let mut vb = e.decode(b);
    vb.truncate(limit);
    let n = va.len().min(vb.len());
    s.add(&va[..n], &vb[..n], tol);
    s
}

/// One side's decoded values, a block at a time.
struct Values<'a> {
    cursor: Cursor<'a>,
    elements: Elements,
    buf: Vec<f64>,
}

impl Values<'_> {
    /// Decode until `want` numbers are held or the data ends.
    fn fill(&mut self, want: usize) -> Result<()> {
        let (group, per_group) = (self.elements.group_bytes(), self.elements.group_values());
        while self.buf.len() < want {
            let avail = self.cursor.available()?;
            if avail == 0 {
                return Ok(());
            }
            let groups = (want - self.buf.len()).div_ceil(per_group);
            let n = avail.min(groups.saturating_mul(group));
            let bytes = self.cursor.take(n);
            if bytes.len() <= SUB * group {
                self.elements.decode_into(bytes, &mut self.buf);
            } else {
                let e = &self.elements;
                let parts: Vec<Vec<f64>> = bytes.par_chunks(SUB * group).map(|c| e.decode(c)).collect();
                for p in parts {
                    self.buf.extend_from_slice(&p);
                }
            }
        }
        Ok(())
    }
}

/// The metrics of two tensors of `numbers` numbers each, of dtypes `da` and `db`.
pub(super) fn across(
    (da, a): (DType, Chunks<'_>),
    (db, b): (DType, Chunks<'_>),
    numbers: u64,
    tol: Tolerance,
) -> std::result::Result<Metrics, SideError> {
    let side = |s: Side| move |e: Error| (s, e);
    let ea = Elements::of(da).map_err(side(Side::A))?;
    let eb = Elements::of(db).map_err(side(Side::B))?;
    let mut ra = Values { cursor: Cursor::new(a, ea.group_bytes()), elements: ea, buf: Vec::new() };
    let mut rb = Values { cursor: Cursor::new(b, eb.group_bytes()), elements: eb, buf: Vec::new() };
    let mut sums = Sums::default();
    let mut left = numbers;
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(BLOCK);
        ra.fill(want).map_err(side(Side::A))?;
        rb.fill(want).map_err(side(Side::B))?;
        let n = ra.buf.len().min(rb.buf.len()).min(want);
        if n == 0 {
            let short = if ra.buf.is_empty() { Side::A } else { Side::B };
            return Err(short_data(short, &format!("after {} of {numbers} numbers", numbers - left)));
        }
        let parts: Vec<Sums> = ra.buf[..n]
            .par_chunks(SUB)
            .zip(rb.buf[..n].par_chunks(SUB))
            .map(|(x, y)| {
                let mut s = Sums::default();
                s.add(x, y, tol);
                s
            })
            .collect();
        for p in &parts {
            sums.merge(p);
        }
        ra.buf.drain(..n);
        rb.buf.drain(..n);
        left -= n as u64;
    }
    Ok(sums.finish())
}
