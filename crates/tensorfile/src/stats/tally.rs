//! Tensors of 8- and 16-bit dtypes summarised from a tally of their bit patterns.
//!
//! Such a dtype has at most 65,536 distinct values, so counting how often each bit pattern
//! occurs (one table increment per element, no decoding, no floating-point work in the hot
//! loop) gives everything `stats` reports: the moments are then computed once per distinct
//! value, in float64, with two passes over the table (the mean, then the squared deviations
//! from it), which is both exact in its counts and as stable as float64 summation can be; the
//! histogram bins each distinct value once with its count. Counting is commutative: the
//! result does not depend on how the work was split between threads.

use rayon::prelude::*;

use super::hist::Histogram;
use super::kernel::Moments;
use crate::error::Result;
use crate::file::TensorFile;
use crate::model::elements::Elements;
use crate::numbers;

/// Bytes of one unit of parallel work.
const SPAN_BYTES: usize = 1 << 20;

/// How often each bit pattern of a tensor's elements occurs.
pub(crate) struct Tally {
    elements: Elements,
    /// Indexed by bit pattern (256 or 65,536 entries).
    counts: Vec<u64>,
}

/// Exactly `buf.len()` bytes of `file` at `offset`.
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_read(file, &mut buf[done..], offset + done as u64)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Counts of 16-bit little-endian patterns in `bytes` (a whole number of elements).
fn count16(bytes: &[u8], counts: &mut [u64; 1 << 16]) {
    // Four tables counted into in turn (shorter chains of increments to one entry) measured
    // slower on llama-1b: weights' neighbours rarely repeat, and one table stays in cache.
    for c in bytes.chunks_exact(2) {
        counts[usize::from(u16::from_le_bytes([c[0], c[1]]))] += 1;
    }
}

fn count8(bytes: &[u8], counts: &mut [u64; 1 << 8]) {
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
}

/// The tally of entry `index`'s values when its dtype is one of 8 or 16 bits read as
/// numbers (and the tensor is not dequantized); `None` otherwise. `progress` is told how
/// many values each span held.
pub(crate) fn tally(file: &TensorFile, index: usize, progress: &(dyn Fn(u64) + Sync)) -> Result<Option<Tally>> {
    let info = file.entries()[index].info();
    if info.layout().quant().is_some() {
        return Ok(None);
    }
    let Ok(elements) = Elements::of(info.dtype()) else { return Ok(None) };
    // Tallied: dtypes of one number per one or two bytes (bool, 8-bit integers and floats,
    // 16-bit integers and floats), whose bit pattern is the value.
    let group = elements.group_bytes();
    if elements.group_values() != 1 || group > 2 {
        return Ok(None);
    }
    let bits = 8 * group as u32;
    // A 16-bit table costs more to clear and read than a small tensor costs to decode.
    if bits == 16 && info.numel().unwrap_or(0) < 1 << 16 {
        return Ok(None);
    }
    let pieces = numbers::dense_pieces(file, index, false)?;
    let mut counts = vec![0u64; 1 << bits];
    let span = SPAN_BYTES / group * group;
    let count = |t: &mut Vec<u64>, bytes: &[u8]| {
        match bits {
            16 => {
                if let Ok(table) = <&mut [u64; 1 << 16]>::try_from(t.as_mut_slice()) {
                    count16(bytes, table);
                }
            }
            _ => {
                if let Ok(table) = <&mut [u64; 1 << 8]>::try_from(t.as_mut_slice()) {
                    count8(bytes, table);
                }
            }
        }
        progress((bytes.len() / group) as u64);
    };
    let add = |mut a: Vec<u64>, b: Vec<u64>| {
        a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
        a
    };
    for piece in numbers::aligned(pieces.chunks, group) {
        let piece = piece?;
        let part = match piece.mapped_file() {
            // A slice of a mapped file is read with `pread` into a buffer of each thread's,
            // reused: a copy out of the page cache instead of faulting in a page-table entry
            // for every 4 KiB of the map (what limited the count through the map).
            Some((f, offset)) => {
                let len = piece.len();
                (0..len.div_ceil(span))
                    .into_par_iter()
                    .try_fold(
                        || (vec![0u64; 1 << bits], vec![0u8; span]),
                        |(mut t, mut buf), k| {
                            let n = span.min(len - k * span);
                            read_exact_at(f, &mut buf[..n], offset + (k * span) as u64)?;
                            count(&mut t, &buf[..n]);
                            Ok::<_, std::io::Error>((t, buf))
                        },
                    )
                    .map(|r| r.map(|(t, _)| t))
                    .try_reduce(|| vec![0u64; 1 << bits], |a, b| Ok(add(a, b)))
                    .map_err(|e| crate::error::Error::from(e).for_tensor(file.entries()[index].info().name()))?
            }
            None => piece
                .par_chunks(span)
                .fold(
                    || vec![0u64; 1 << bits],
                    |mut t, bytes| {
                        count(&mut t, bytes);
                        t
                    },
                )
                .reduce(|| vec![0u64; 1 << bits], add),
        };
        counts.iter_mut().zip(&part).for_each(|(x, y)| *x += y);
    }
    Ok(Some(Tally { elements, counts }))
}

impl Tally {
    /// Each distinct value with how often it occurs, in bit-pattern order.
    fn values(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let width = self.elements.group_bytes();
        let mut value = Vec::with_capacity(1);
        self.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(move |(pattern, &c)| {
            value.clear();
            self.elements.decode_into(&(pattern as u16).to_le_bytes()[..width], &mut value);
            (value.first().copied().unwrap_or(f64::NAN), c)
        })
    }

    /// The statistics of the tallied values.
    pub(crate) fn moments(&self) -> Moments {
        let mut m = Moments::new();
        // Neumaier's compensated sum of count * value (each product exact: at most 11
        // significant bits times a count below 2^42).
        let (mut sum, mut carry) = (0.0f64, 0.0f64);
        for (v, c) in self.values() {
            if v.is_nan() {
                m.nan += c;
            } else if v == f64::INFINITY {
                m.posinf += c;
            } else if v == f64::NEG_INFINITY {
                m.neginf += c;
            } else {
                m.count += c;
                m.min = m.min.min(v);
                m.max = m.max.max(v);
                if v == 0.0 {
                    m.zeros += c;
                }
                let term = v * c as f64;
                let t = sum + term;
                carry += if sum.abs() >= term.abs() { (sum - t) + term } else { (term - t) + sum };
                sum = t;
            }
        }
        if m.count > 0 {
            m.mean = (sum + carry) / m.count as f64;
            let mean = m.mean;
            m.m2 = self.values().filter(|(v, _)| v.is_finite()).map(|(v, c)| (v - mean) * (v - mean) * c as f64).sum();
        }
        m
    }

    /// The tallied values counted into the bins of `hist`.
    pub(crate) fn fill(&self, hist: &mut Histogram) {
        for (v, c) in self.values() {
            hist.add_count(v, c);
        }
    }
}
