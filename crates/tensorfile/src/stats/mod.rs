//! The numbers of a file's tensors summarised (`tensorfile stats`): per tensor the count of
//! elements, the minimum, maximum, mean, population standard deviation and largest magnitude
//! of its finite values, the counts of zeros, NaNs and infinities, and optionally a histogram
//! ([`summarise`]); and the finiteness check of `verify --finite` ([`nonfinite`]).
//!
//! Integer (bool as 0 and 1), floating (every dtype [`Elements`] reads) and quantized tensors
//! (dequantized first) are summarised; complex and opaque dtypes and blobs are listed with the
//! reason they are not. Values are accumulated in float64, block by block with a stable
//! method ([`Moments`]), streaming through the tensor in bounded memory on all cores, tensors
//! in parallel too. Tensors of 8- and 16-bit dtypes (bfloat16, float16, float8, int8...) of
//! some size are instead tallied by bit pattern and summarised from the distinct values
//! (`tally.rs`): exact counts, two-pass moments, and no decoding in the hot loop.

mod hist;
mod kernel;
mod scan;
mod tally;

use rayon::prelude::*;
use serde_json::{Value as Json, json};

pub use hist::Histogram;
pub use kernel::Moments;

use crate::error::{Error, ErrorKind, Result};
pub use crate::file::NonFinite;
use crate::file::{TensorFile, Verification};
use crate::model::elements::Elements;
use crate::model::{DType, Kind};
use scan::Fold;

/// The most histogram bins [`summarise`] makes (each tensor's histogram is held whole).
pub const MAX_BINS: usize = 1_000_000;

/// What to summarise.
#[derive(Debug, Clone, Default)]
pub struct StatsOptions {
    /// The tensors to summarise, in this order (every entry of the file when empty).
    pub names: Vec<String>,
    /// Bins of a histogram of each tensor's finite values (none when `None`).
    pub hist: Option<usize>,
}

/// The statistics of one entry, or why there are none.
#[derive(Debug, Clone)]
pub struct TensorStats {
    /// The entry's name.
    pub name: String,
    /// Its dtype as stored.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its elements (0 for a blob).
    pub numel: u64,
    /// Whether the values were dequantized from a quantized layout.
    pub dequantized: bool,
    /// The summary, or the reason the entry is not summarised (a blob, a complex or opaque
    /// dtype).
    pub summary: std::result::Result<Summary, String>,
}

/// The statistics of a tensor's values.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Counts, extremes and moments.
    pub moments: Moments,
    /// The histogram of the finite values, when asked for, there is any finite value, and
    /// float64 can cut their range into that many bins.
    pub hist: Option<Histogram>,
}

impl Summary {
    /// The smallest finite value (none when no value is finite).
    pub fn min(&self) -> Option<f64> {
        (self.moments.count > 0).then_some(self.moments.min)
    }

    /// The largest finite value.
    pub fn max(&self) -> Option<f64> {
        (self.moments.count > 0).then_some(self.moments.max)
    }

    /// The mean of the finite values.
    pub fn mean(&self) -> Option<f64> {
        (self.moments.count > 0).then_some(self.moments.mean)
    }

    /// The population standard deviation of the finite values.
    pub fn std(&self) -> Option<f64> {
        (self.moments.count > 0).then(|| self.moments.std())
    }

    /// The largest magnitude of the finite values.
    pub fn absmax(&self) -> Option<f64> {
        (self.moments.count > 0).then(|| self.moments.min.abs().max(self.moments.max.abs()))
    }
}

impl TensorStats {
    /// The record `tensorfile stats --json` prints (and Python's `stats` returns): `name`,
    /// `dtype`, `shape`, `numel`, `dequantized`, `summarised`, then either `min`, `max`,
    /// `mean`, `std`, `absmax` (null when no value is finite), `zeros`, `nan`, `posinf`,
    /// `neginf` and `hist` (`{"edges", "counts"}`, or null), or `reason`.
    pub fn to_json(&self) -> Json {
        let mut record = json!({
            "name": self.name,
            "dtype": self.dtype.name(),
            "shape": self.shape,
            "numel": self.numel,
            "dequantized": self.dequantized,
            "summarised": self.summary.is_ok(),
        });
        let fields = match &self.summary {
            Ok(s) => json!({
                "min": s.min(),
                "max": s.max(),
                "mean": s.mean(),
                "std": s.std(),
                "absmax": s.absmax(),
                "zeros": s.moments.zeros,
                "nan": s.moments.nan,
                "posinf": s.moments.posinf,
                "neginf": s.moments.neginf,
                "hist": s.hist.as_ref().map(Histogram::to_json),
            }),
            Err(reason) => json!({ "reason": reason }),
        };
        if let (Some(record), Json::Object(fields)) = (record.as_object_mut(), fields) {
            record.extend(fields);
        }
        record
    }
}

impl Fold for Moments {
    fn add(&mut self, values: &[f64]) {
        for block in values.chunks(kernel::BLOCK) {
            self.merge(&Moments::of_block(block, true));
        }
    }

    fn join(&mut self, later: Self) {
        self.merge(&later);
    }
}

/// Counts only (the finiteness check): no squared deviations summed.
struct Counts(Moments);

impl Fold for Counts {
    fn add(&mut self, values: &[f64]) {
        for block in values.chunks(kernel::BLOCK) {
            self.0.merge(&Moments::of_block(block, false));
        }
    }

    fn join(&mut self, later: Self) {
        self.0.merge(&later.0);
    }
}

impl Fold for Histogram {
    fn add(&mut self, values: &[f64]) {
        Histogram::add(self, values);
    }

    fn join(&mut self, later: Self) {
        self.merge(&later);
    }
}

/// The entries `names` name, in that order (every entry when empty); an unknown name is an
/// error naming it.
pub fn select(file: &TensorFile, names: &[String]) -> Result<Vec<usize>> {
    if names.is_empty() {
        return Ok((0..file.entries().len()).collect());
    }
    names
        .iter()
        .map(|n| {
            file.index_of(n).ok_or_else(|| match file.path() {
                Some(p) => Error::not_found(n).in_file(p),
                None => Error::not_found(n),
            })
        })
        .collect()
}

/// Why entry `index` has no numbers to summarise, if it has none.
fn unsummarised(file: &TensorFile, index: usize) -> Option<String> {
    let info = file.entries()[index].info();
    if info.kind() == Kind::Blob {
        return Some("a blob of bytes, not a tensor".to_string());
    }
    if info.layout().quant().is_some() {
        return None;
    }
    match Elements::of(info.dtype()) {
        Err(_) => Some(format!("{} elements are not numbers", info.dtype())),
        Ok(e) if e.is_complex() => Some(format!("{} elements are complex numbers", info.dtype())),
        Ok(_) => None,
    }
}

/// Elements the entries `indices` hold together (what `progress` counts to).
pub fn total_values(file: &TensorFile, indices: &[usize]) -> u64 {
    let numel = |&i: &usize| file.entries().get(i).and_then(|e| e.info().numel().ok()).unwrap_or(0);
    indices.iter().map(numel).sum()
}

/// The statistics of the tensors `options` names (every entry when none), in order.
/// `progress` is told how many more values are done as work ends (from several threads);
/// they add up to [`total_values`] of the selection.
pub fn summarise(
    file: &TensorFile,
    options: &StatsOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<TensorStats>> {
    summarise_each(file, options, progress)?.into_iter().collect()
}

/// The statistics of the tensors `options` names, like [`summarise`], each tensor's own
/// failure to read kept in its place rather than failing them all.
pub fn summarise_each(
    file: &TensorFile,
    options: &StatsOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<Result<TensorStats>>> {
    if let Some(bins) = options.hist.filter(|&b| b == 0 || b > MAX_BINS) {
        return Err(Error::usage(format!("{bins} histogram bins: between 1 and {MAX_BINS}")));
    }
    let indices = select(file, &options.names)?;
    Ok(indices.par_iter().map(|&i| summarise_one(file, i, options.hist, progress)).collect())
}

fn summarise_one(
    file: &TensorFile,
    index: usize,
    hist: Option<usize>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<TensorStats> {
    let info = file.entries()[index].info();
    let numel = if info.kind() == Kind::Blob { 0 } else { info.numel().map_err(|e| e.for_tensor(info.name()))? };
    let mut stats = TensorStats {
        name: info.name().to_string(),
        dtype: info.dtype(),
        shape: info.shape().to_vec(),
        numel,
        dequantized: info.layout().quant().is_some(),
        summary: Err(String::new()),
    };
    if let Some(reason) = unsummarised(file, index) {
        progress(numel);
        stats.summary = Err(reason);
        return Ok(stats);
    }
    let tallied = tally::tally(file, index, progress)?;
    let scanned = match &tallied {
        Some(t) => Ok(t.moments()),
        None => scan::scan(file, index, &Moments::new, progress),
    };
    let moments = match scanned {
        // Values this library cannot make (a quantization without a reference
        // dequantization): not summarised, like an opaque dtype.
        Err(e) if matches!(e.kind(), ErrorKind::Unsupported(_)) => {
            stats.summary = Err(e.detail());
            return Ok(stats);
        }
        m => m?,
    };
    let hist = match hist {
        Some(bins) if moments.count > 0 => match Histogram::new(moments.min, moments.max, bins) {
            Some(mut empty) => Some(match &tallied {
                Some(t) => {
                    t.fill(&mut empty);
                    empty
                }
                None => scan::scan(file, index, &|| empty.empty_like(), &|_| {})?,
            }),
            None => None,
        },
        _ => None,
    };
    stats.summary = Ok(Summary { moments, hist });
    Ok(stats)
}

/// Every tensor of `file` holding NaNs or infinities, in the file's order, with their
/// counts (the check of `verify --finite`), and the errors of tensors whose values could not
/// be read (each naming its tensor; the others are still checked). Tensors with no numbers to
/// count (blobs, complex and opaque dtypes, quantizations without a dequantization) are
/// passed over; integer tensors hold no such
/// values and are not read.
pub fn nonfinite(file: &TensorFile) -> (Vec<NonFinite>, Vec<Error>) {
    let indices: Vec<usize> = (0..file.entries().len())
        .filter(|&i| {
            let info = file.entries()[i].info();
            let integer = info.layout().quant().is_none() && Elements::of(info.dtype()).is_ok_and(|e| e.is_integer());
            unsummarised(file, i).is_none() && !integer
        })
        .collect();
    let found: Vec<Result<Option<NonFinite>>> = indices
        .par_iter()
        .map(|&i| {
            let m = match tally::tally(file, i, &|_| {})? {
                Some(t) => t.moments(),
                None => scan::scan(file, i, &|| Counts(Moments::new()), &|_| {})?.0,
            };
            let name = file.entries()[i].info().name().to_string();
            Ok((m.nonfinite() > 0).then_some(NonFinite { name, nan: m.nan, posinf: m.posinf, neginf: m.neginf }))
        })
        .collect();
    let (mut tensors, mut errors) = (Vec::new(), Vec::new());
    for f in found {
        match f {
            Ok(Some(t)) => tensors.push(t),
            Ok(None) => {}
            Err(e) if matches!(e.kind(), ErrorKind::Unsupported(_)) => {}
            Err(e) => errors.push(e),
        }
    }
    (tensors, errors)
}

impl Verification {
    /// Also read every tensor's values of `file` (the file verified) and list each one holding
    /// NaNs or infinities (`verify --finite`); a tensor whose values cannot be read becomes a
    /// problem unless it already is one.
    pub fn check_finite(&mut self, file: &TensorFile) {
        let (nonfinite, errors) = nonfinite(file);
        for e in errors {
            if !self.problems.iter().any(|p| p.tensor().is_some() && p.tensor() == e.tensor()) {
                self.problems.push(e);
            }
        }
        self.nonfinite = Some(nonfinite);
    }
}
