//! Importance matrices, in both layouts llama.cpp reads (common/imatrix-loader.cpp), and the
//! weights llama-quantize makes of them (tools/quantize/quantize.cpp).
//!
//! GGUF (what `llama-imatrix` writes now): per weight matrix `<name>.in_sum2`, F32, the sums
//! of squared activations (one row per expert), and `<name>.counts`, F32, how many
//! activations each expert's row summed; keys `imatrix.datasets` (strings),
//! `imatrix.chunk_count` and `imatrix.chunk_size` (`u32`). Other tensors are ignored.
//!
//! Legacy (`--output-format dat`): little-endian `i32` entry count (at least 1), then per
//! entry an `i32` name length, the name (cut at its first NUL), an `i32` call count, an `i32`
//! value count (at least 1) and that many `f32`; then, optionally, an `i32` chunk count and an
//! `i32` length and the name of the dataset. A later entry of the same name replaces an
//! earlier one.
//!
//! A file is read as GGUF when it is one, and as legacy otherwise or when it is a GGUF file
//! that does not hold an importance matrix (llama.cpp tries both in that order). Every count
//! and length is checked against the bytes that remain before anything is allocated.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::formats::Format;
use crate::model::{DType, Layout, MetaValue, Number, TypedArray};
use crate::source::Bytes;

const IN_SUM2: &str = ".in_sum2";
const COUNTS: &str = ".counts";

/// What one weight matrix's entry holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ImatrixEntry {
    /// The sums (legacy: already divided by each call's count and multiplied by the calls).
    pub sums: Vec<f32>,
    /// Per expert, how many activations were summed (legacy: one count, of calls).
    pub counts: Vec<i64>,
}

/// An importance matrix as llama.cpp's loader reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Imatrix {
    /// Entries by name (the bytes of the file: a legacy name need not be UTF-8), sorted.
    entries: BTreeMap<Vec<u8>, ImatrixEntry>,
    datasets: Vec<Vec<u8>>,
    chunk_count: i32,
    legacy: bool,
    has_metadata: bool,
}

impl Imatrix {
    /// Read the importance matrix at `path` (mapped, not copied); errors name the file.
    pub fn read(path: &Path) -> Result<Imatrix> {
        let bytes = Bytes::map_file(path).map_err(|e| e.in_file(path))?;
        Imatrix::parse(bytes).map_err(|e| e.in_file(path))
    }

    /// Read an importance matrix from its bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Imatrix> {
        Imatrix::parse(Bytes::from_vec(bytes.to_vec()))
    }

    fn parse(bytes: Bytes) -> Result<Imatrix> {
        if !bytes.starts_with(b"GGUF") {
            return legacy(&bytes);
        }
        match gguf(bytes.clone()) {
            Ok(m) => Ok(m),
            // llama.cpp reads a file its GGUF reader refuses as a legacy one.
            Err(e) => legacy(&bytes).map_err(|_| e),
        }
    }

    /// Whether it is a legacy (`.dat`) file.
    pub fn is_legacy(&self) -> bool {
        self.legacy
    }

    /// Whether a GGUF file has the three `imatrix.*` keys (llama-quantize refuses one that
    /// lacks any; a legacy file has none and needs none).
    pub fn has_metadata(&self) -> bool {
        self.has_metadata
    }

    /// The datasets it was computed on, as the file names them.
    pub fn datasets(&self) -> &[Vec<u8>] {
        &self.datasets
    }

    /// The chunks it was computed on (as llama.cpp keeps it: an `i32`).
    pub fn chunk_count(&self) -> i32 {
        self.chunk_count
    }

    /// The entries, sorted by name.
    pub fn entries(&self) -> &BTreeMap<Vec<u8>, ImatrixEntry> {
        &self.entries
    }

    /// The importance weights llama-quantize gives `ggml_quantize_chunk`, by entry name: a
    /// GGUF entry's sums divided by its expert's count (1 where the count is not above 0,
    /// 0 past the last whole expert), a legacy entry's divided by its calls (as they are
    /// without calls). An entry whose counts are empty is refused (llama-quantize divides by
    /// their number).
    pub fn weights(&self) -> Result<BTreeMap<Vec<u8>, Vec<f32>>> {
        let mut out = BTreeMap::new();
        for (name, e) in &self.entries {
            let mut w = vec![0.0f32; e.sums.len()];
            if self.legacy {
                let calls = e.counts.first().copied().unwrap_or(0);
                for (w, &s) in w.iter_mut().zip(&e.sums) {
                    *w = if calls > 0 { s / calls as f32 } else { s };
                }
            } else {
                if e.counts.is_empty() {
                    return Err(Error::invalid(
                        Rule::BadField,
                        format!(
                            "entry {}: no counts (llama-quantize divides by their number)",
                            String::from_utf8_lossy(name)
                        ),
                    ));
                }
                let per = e.sums.len() / e.counts.len();
                for (j, &count) in e.counts.iter().enumerate() {
                    let count = count as f32;
                    let row = j * per..(j + 1) * per;
                    for (w, &s) in w[row.clone()].iter_mut().zip(&e.sums[row]) {
                        *w = if count > 0.0 { s / count } else { 1.0 };
                    }
                }
            }
            out.insert(name.clone(), w);
        }
        Ok(out)
    }
}

/// C's `lround` of a count as x86-64 glibc returns it: halves away from zero; a value that
/// is not finite or does not fit 64 bits gives the most negative value.
fn c_lround(x: f32) -> i64 {
    let x = f64::from(x);
    if !x.is_finite() || x.abs() >= 2f64.powi(63) {
        return i64::MIN;
    }
    x.round() as i64
}

/// A GGUF importance matrix.
fn gguf(bytes: Bytes) -> Result<Imatrix> {
    let file = crate::file::OpenOptions::new().format(Format::Gguf).open_bytes(bytes)?;
    if let Some(u) = file.unreadable().first() {
        return Err(Error::invalid(Rule::BadField, format!("tensor {:?} is of a type ggml does not know", u.name())));
    }
    if file.entries().is_empty() {
        return Err(Error::invalid(Rule::BadField, "no tensors: an importance matrix has at least one entry"));
    }
    let metadata = file.summary().metadata;
    let find = |k: &str| metadata.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let datasets = match find("imatrix.datasets") {
        Some(MetaValue::TypedArray(TypedArray::Text(v))) => v.iter().map(|s| s.as_bytes().to_vec()).collect(),
        _ => Vec::new(),
    };
    let has_metadata =
        ["imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"].iter().all(|k| find(k).is_some());
    let chunk_count = match find("imatrix.chunk_count") {
        None => 0,
        // Kept in an `int`, as llama.cpp keeps it.
        Some(MetaValue::Number(Number::U32(n))) => *n as i32,
        Some(v) => {
            return Err(Error::invalid(
                Rule::BadMetadata,
                format!("imatrix.chunk_count is {}, not a u32", v.to_json()),
            ));
        }
    };
    if let Some(v) = find("imatrix.chunk_size").filter(|v| !matches!(v, MetaValue::Number(Number::U32(_)))) {
        return Err(Error::invalid(Rule::BadMetadata, format!("imatrix.chunk_size is {}, not a u32", v.to_json())));
    }
    let mut pairs: BTreeMap<String, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (i, e) in file.entries().iter().enumerate() {
        let name = e.info().name();
        if let Some(base) = name.strip_suffix(IN_SUM2) {
            pairs.entry(base.to_string()).or_default().0 = Some(i);
        } else if let Some(base) = name.strip_suffix(COUNTS) {
            pairs.entry(base.to_string()).or_default().1 = Some(i);
        }
    }
    let mut entries = BTreeMap::new();
    for (name, pair) in pairs {
        let (Some(sums), Some(counts)) = pair else {
            return Err(Error::invalid(Rule::MissingField, format!("entry {name:?} lacks its sums or its counts")));
        };
        let sums = floats(&file, sums, &name)?;
        let counts = floats(&file, counts, &name)?.into_iter().map(c_lround).collect();
        entries.insert(name.into_bytes(), ImatrixEntry { sums, counts });
    }
    Ok(Imatrix { entries, datasets, chunk_count, legacy: false, has_metadata })
}

/// The F32 values of entry `i`, which must be F32.
fn floats(file: &TensorFile, i: usize, name: &str) -> Result<Vec<f32>> {
    let e = &file.entries()[i];
    if e.info().dtype() != DType::Float32 || *e.info().layout() != Layout::Dense {
        return Err(Error::invalid(Rule::BadField, format!("entry {name:?}: its sums and counts must be F32")));
    }
    let data = file.read_index(i)?;
    Ok(data.as_dense()?.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Little-endian reads from the front of a legacy file.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(Error::invalid(Rule::Truncated, format!("{what}: {n} bytes wanted, {} left", self.rest.len())));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length of `unit`-byte items that must be positive and fit the bytes left.
    fn count(&mut self, unit: usize, what: &str) -> Result<usize> {
        let n = self.i32(what)?;
        let n = usize::try_from(n).map_err(|_| Error::invalid(Rule::BadField, format!("{what} {n} is negative")))?;
        if n.checked_mul(unit).is_none_or(|bytes| bytes > self.rest.len()) {
            return Err(Error::invalid(
                Rule::Truncated,
                format!("{what} {n}: more than the {} bytes left hold", self.rest.len()),
            ));
        }
        Ok(n)
    }
}

/// Bytes up to the first NUL, as C++ makes a string of a name.
fn c_string(b: &[u8]) -> Vec<u8> {
    b.iter().take_while(|&&c| c != 0).copied().collect()
}

/// A legacy importance matrix.
fn legacy(bytes: &[u8]) -> Result<Imatrix> {
    let mut r = Reader { rest: bytes };
    let n_entries = r.i32("entry count")?;
    if n_entries < 1 {
        return Err(Error::invalid(Rule::BadField, format!("{n_entries} entries: there must be at least one")));
    }
    let mut entries = BTreeMap::new();
    for i in 0..n_entries {
        let within = |e: Error| e.within(format_args!("entry {}", i + 1), Rule::BadField);
        let len = r.count(1, "name length").map_err(within)?;
        let name = c_string(r.take(len, "name").map_err(within)?);
        let calls = r.i32("call count").map_err(within)?;
        let n = r.count(4, "value count").map_err(within)?;
        if n == 0 {
            return Err(within(Error::invalid(Rule::BadField, "no values: an entry has at least one")));
        }
        let sums =
            r.take(n * 4, "values")?.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        entries.insert(name, ImatrixEntry { sums, counts: vec![i64::from(calls)] });
    }
    // The trailer is optional, and llama.cpp takes what of it is there: a chunk count cut
    // short keeps the bytes it has; a dataset name past the end is no dataset.
    let mut chunk_count = 0;
    let mut datasets = Vec::new();
    if !r.rest.is_empty() {
        let have = r.rest.len().min(4);
        let mut word = [0u8; 4];
        word[..have].copy_from_slice(&r.rest[..have]);
        chunk_count = i32::from_le_bytes(word);
        r.rest = &r.rest[have..];
        if have == 4 && r.rest.len() >= 4 {
            let len = r.i32("dataset name length")?;
            if let Ok(len) = usize::try_from(len) {
                if len > 0 && len <= r.rest.len() {
                    datasets.push(c_string(&r.rest[..len]));
                }
            }
        }
    }
    Ok(Imatrix { entries, datasets, chunk_count, legacy: true, has_metadata: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dat(entries: &[(&[u8], i32, &[f32])], trailer: &[u8]) -> Vec<u8> {
        let mut out = (entries.len() as i32).to_le_bytes().to_vec();
        for (name, calls, values) in entries {
            out.extend_from_slice(&(name.len() as i32).to_le_bytes());
            out.extend_from_slice(name);
            out.extend_from_slice(&calls.to_le_bytes());
            out.extend_from_slice(&(values.len() as i32).to_le_bytes());
            values.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        out.extend_from_slice(trailer);
        out
    }

    #[test]
    fn legacy_entries_and_trailer() {
        let mut trailer = 7i32.to_le_bytes().to_vec();
        trailer.extend_from_slice(&4i32.to_le_bytes());
        trailer.extend_from_slice(b"t\0xt");
        let m = Imatrix::from_bytes(&dat(&[(b"a\0junk", 2, &[4.0, 6.0]), (b"b", 0, &[3.0])], &trailer)).unwrap();
        assert!(m.is_legacy());
        assert_eq!(m.chunk_count(), 7);
        assert_eq!(m.datasets(), &[b"t".to_vec()]);
        let w = m.weights().unwrap();
        assert_eq!(w[&b"a".to_vec()], vec![2.0, 3.0]);
        assert_eq!(w[&b"b".to_vec()], vec![3.0]);
    }

    #[test]
    fn legacy_trailer_cut_short_keeps_what_is_there() {
        let m = Imatrix::from_bytes(&dat(&[(b"a", 1, &[1.0])], &[5, 1])).unwrap();
        assert_eq!(m.chunk_count(), 0x105);
        let mut trailer = 3i32.to_le_bytes().to_vec();
        trailer.extend_from_slice(&100i32.to_le_bytes());
        let m = Imatrix::from_bytes(&dat(&[(b"a", 1, &[1.0])], &trailer)).unwrap();
        assert!(m.datasets().is_empty());
    }

    #[test]
    fn legacy_refusals_name_their_rule() {
        let rule = |b: &[u8]| Imatrix::from_bytes(b).unwrap_err().rule();
        assert_eq!(rule(&[1, 0]), Some(Rule::Truncated));
        assert_eq!(rule(&0i32.to_le_bytes()), Some(Rule::BadField));
        assert_eq!(rule(&dat(&[(b"a", 1, &[])], &[])), Some(Rule::BadField));
        let mut huge = 1i32.to_le_bytes().to_vec();
        huge.extend_from_slice(&i32::MAX.to_le_bytes());
        assert_eq!(rule(&huge), Some(Rule::Truncated));
        let mut negative = 1i32.to_le_bytes().to_vec();
        negative.extend_from_slice(&(-1i32).to_le_bytes());
        assert_eq!(rule(&negative), Some(Rule::BadField));
    }

    #[test]
    fn counts_round_as_lround() {
        assert_eq!(c_lround(2.5), 3);
        assert_eq!(c_lround(-2.5), -3);
        assert_eq!(c_lround(f32::NAN), i64::MIN);
        assert_eq!(c_lround(1e30), i64::MIN);
    }
}
