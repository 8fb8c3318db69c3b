//! Writing `.ptd` files laid out as ExecuTorch lays them out: the `FH01` header, the
//! flatbuffer, then segments each starting at a multiple of 128 bytes from the segment
//! base (itself a multiple of 128), identical bytes stored once.
//!
//! Streaming: the flatbuffer depends on which tensors share a segment, known only once all
//! the data has been seen. The writer reserves room for the largest flatbuffer the plan can
//! need (every tensor in its own segment), streams the segments after it, then seeks back
//! and writes the real flatbuffer, padded with zeros to the reserved size (the flatbuffer
//! size in the header covers that padding, so the segment base is still the flatbuffer's end
//! rounded up to 128, as ExecuTorch computes it).
//!
//! Identical tensors: a tensor whose XXH3-128 digest and length match an earlier segment's is
//! compared with that segment byte for byte (read back from the output), and shares it only
//! when every byte is the same; the digest only finds candidates, so a crafted collision
//! costs a comparison, never a wrong tensor. A large tensor is written ahead, at the next
//! segment's place while it is hashed, where the output can be cut back; when it turns out
//! to be stored already, the output goes back to where the segments ended and is cut there.
//! Elsewhere a tensor is hashed first, then written if new.

use std::collections::HashMap;
use std::io::{Read, SeekFrom};

use twox_hash::XxHash3_128 as Xxh3;

use super::check_supported;
use super::header::{Header, PADDED_LENGTH};
use crate::checked;
use crate::error::{Error, Result};
use crate::flatbuf::{self, Table, Value, new_table};
use crate::formats::executorch::{SEGMENT_ALIGNMENT, TensorLayout, flat_tensor_schema, scalar_type_of};
use crate::formats::{
    FormatWriter, HASH_BESIDE_MIN, Output, WriteOptions, check_data, check_streamed, copy_streamed,
    copy_streamed_hashing, streamed_size,
};
use crate::model::{Chunks, Kind, Layout, TensorData, TensorInfo, gather};
use crate::source::Bytes;

/// A streaming `.ptd` writer.
pub struct PtdWriter<'w> {
    out: Box<dyn Output + 'w>,
    plan: Vec<TensorInfo>,
    /// Bytes reserved for the flatbuffer (with its header) at the start of the file.
    reserved: u64,
    /// Where segments start: `reserved` rounded up to the segment alignment.
    segment_base: u64,
    /// (offset from the segment base, size) of each segment written.
    segments: Vec<(u64, u64)>,
    /// Segment of each planned tensor written so far.
    segment_of: Vec<usize>,
    /// The first segment holding each content, by its [`ContentKey`].
    by_content: HashMap<ContentKey, usize>,
    /// End of the segment data, relative to the segment base.
    end: u64,
    /// Whether the output can be cut back ([`Output::set_len`]), once asked.
    cuttable: Option<bool>,
}

/// The FlatTensor table for `plan`, each tensor `i` in segment `segment_of[i]`.
fn flat_tensor(plan: &[TensorInfo], segments: &[(u64, u64)], segment_of: &[usize]) -> Result<Table> {
    let schema = flat_tensor_schema();
    let mut root = new_table(schema, "FlatTensor");
    let segs = segments
        .iter()
        .map(|&(offset, size)| {
            let mut s = new_table(schema, "DataSegment");
            s.set("offset", Some(Value::UInt(offset)));
            s.set("size", Some(Value::UInt(size)));
            Value::Table(s)
        })
        .collect();
    root.set("segments", Some(Value::Vector(segs)));
    let mut named = Vec::with_capacity(plan.len());
    for (info, &seg) in plan.iter().zip(segment_of) {
        let mut nd = new_table(schema, "NamedData");
        nd.set("key", Some(Value::Str(info.name().to_string())));
        nd.set("segment_index", Some(Value::UInt(seg as u64)));
        if info.kind() == Kind::Tensor {
            let st = scalar_type_of(info.dtype())
                .ok_or_else(|| Error::unsupported(format!("ExecuTorch has no scalar type for {}", info.dtype())))?;
            let mut l = new_table(schema, "TensorLayout");
            l.set("scalar_type", Some(Value::Int(st)));
            let sizes = info.shape().iter().map(|&d| Value::UInt(d)).collect();
            l.set("sizes", Some(Value::Vector(sizes)));
            l.set("dim_order", Some(Value::Bytes(Bytes::from_vec(dim_order(info)))));
            nd.set("tensor_layout", Some(Value::Table(l)));
        }
        named.push(Value::Table(nd));
    }
    root.set("named_data", Some(Value::Vector(named)));
    Ok(root)
}

/// The order a tensor's dimensions are stored in: as its layout says, else row-major.
fn dim_order(info: &TensorInfo) -> Vec<u8> {
    match info.layout() {
        Layout::DimOrder(order) => order.clone(),
        _ => (0..info.shape().len()).map(|d| d as u8).collect(),
    }
}

fn encode(root: &Table) -> Result<Vec<u8>> {
    flatbuf::encode(flat_tensor_schema(), root, PADDED_LENGTH as usize)
}

impl<'w> PtdWriter<'w> {
    /// A writer for the tensors of `plan`; errors naming the first one `.ptd` cannot hold.
    /// Writing options do not apply: `.ptd` stores no checksums and no compression.
    pub fn new(mut out: Box<dyn Output + 'w>, plan: &[TensorInfo], _options: &WriteOptions) -> Result<Self> {
        for info in plan {
            check_supported(info).map_err(|e| e.for_tensor(info.name()))?;
        }
        // The largest flatbuffer: one segment per tensor, offsets and sizes at their widest.
        let widest: Vec<(u64, u64)> = plan.iter().map(|_| (u64::MAX, u64::MAX)).collect();
        let own: Vec<usize> = (0..plan.len()).collect();
        let reserved = encode(&flat_tensor(plan, &widest, &own)?)?.len() as u64;
        let segment_base = checked::align_up(reserved, SEGMENT_ALIGNMENT)?;
        out.seek(SeekFrom::Start(segment_base))?;
        Ok(PtdWriter {
            out,
            plan: plan.to_vec(),
            reserved,
            segment_base,
            segments: Vec::new(),
            segment_of: Vec::with_capacity(plan.len()),
            by_content: HashMap::new(),
            end: 0,
            cuttable: None,
        })
    }
}

/// What finds candidates for identical content: the XXH3-128 digest of the bytes and their
/// length. A candidate is confirmed by comparing the bytes ([`PtdWriter::segment_holds`]).
type ContentKey = (u128, u64);

/// Bytes compared at a time when a candidate segment is read back.
const COMPARE_BYTES: usize = 1 << 20;

/// While its owned pieces hold at most this much, a tensor streamed into a `.ptd` is kept
/// between the pass that hashes it and the pass that writes it, instead of decoded twice.
const KEEP_OWNED_BYTES: u64 = 64 << 20;

impl PtdWriter<'_> {
    /// Record the next planned tensor, `bytes`: in the segment of an identical earlier
    /// tensor, or in a new segment written here.
    fn store(&mut self, bytes: &[u8]) -> Result<()> {
        let key = (Xxh3::oneshot(bytes), bytes.len() as u64);
        let segment = match self.by_content.get(&key).copied() {
            Some(s) if self.segment_holds(s, std::iter::once(Ok(bytes)))? => s,
            _ => {
                let offset = self.pad()?;
                self.out.write_all(bytes)?;
                self.add_segment(key, offset)?
            }
        };
        self.segment_of.push(segment);
        Ok(())
    }

    /// Whether segment `s` holds exactly the bytes `pieces` yields, read back from the output
    /// (whose position is left where it was).
    fn segment_holds<B: AsRef<[u8]>>(&mut self, s: usize, pieces: impl Iterator<Item = Result<B>>) -> Result<bool> {
        let (offset, len) = self.segments[s];
        let back = self.out.stream_position()?;
        let mut at = checked::add(self.segment_base, offset, "segment offset")?;
        let end = checked::add(at, len, "segment end")?;
        let mut buf = vec![0u8; COMPARE_BYTES.min(usize::try_from(len).unwrap_or(COMPARE_BYTES))];
        self.out.seek(SeekFrom::Start(at))?;
        let mut same = true;
        'pieces: for piece in pieces {
            for part in piece?.as_ref().chunks(COMPARE_BYTES) {
                let n = part.len() as u64;
                if n > end - at {
                    same = false;
                    break 'pieces;
                }
                let buf = &mut buf[..part.len()];
                self.out.read_exact(buf)?;
                at += n;
                if buf != part {
                    same = false;
                    break 'pieces;
                }
            }
        }
        self.out.seek(SeekFrom::Start(back))?;
        Ok(same && at == end)
    }

    /// Write the zeros that bring the segment data to the next segment's offset: that offset.
    fn pad(&mut self) -> Result<u64> {
        let offset = checked::align_up(self.end, SEGMENT_ALIGNMENT)?;
        self.out.write_all(&[0u8; SEGMENT_ALIGNMENT as usize][..(offset - self.end) as usize])?;
        Ok(offset)
    }

    /// Record a new segment of `key.1` bytes at `offset`: its index. The first segment with
    /// a key is the one later tensors with that key are compared with.
    fn add_segment(&mut self, key: ContentKey, offset: u64) -> Result<usize> {
        self.end = checked::add(offset, key.1, "segment data end")?;
        self.segments.push((offset, key.1));
        let index = self.segments.len() - 1;
        self.by_content.entry(key).or_insert(index);
        Ok(index)
    }

    /// Whether the output can be cut back: asked once, by making it as long as the segment
    /// data written so far, which at most adds the zeros that writing past its end leaves.
    fn cuttable(&mut self) -> Result<bool> {
        if self.cuttable.is_none() {
            let end = checked::add(self.segment_base, self.end, "segment data end")?;
            self.cuttable = Some(self.out.set_len(end)?);
        }
        Ok(self.cuttable == Some(true))
    }

    /// Write the next planned tensor, in the pieces `open` yields, at the next segment's
    /// offset while hashing it (large pieces on another thread); when an identical tensor is
    /// stored already, go back to the end of the segment data and cut the output there,
    /// leaving it as if the tensor had been hashed first and never written.
    fn write_ahead<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let offset = self.pad()?;
        let mut hasher = Xxh3::new();
        let info = &self.plan[self.segment_of.len()];
        let want = copy_streamed_hashing(&mut *self.out, info, open, Some(&mut |b: &[u8]| hasher.write(b)))?;
        let key = (hasher.finish_128(), want);
        let segment = match self.by_content.get(&key).copied() {
            Some(s) if self.segment_holds(s, open()?)? => {
                let end = checked::add(self.segment_base, self.end, "segment data end")?;
                self.out.seek(SeekFrom::Start(end))?;
                if !self.out.set_len(end)? {
                    return Err(Error::usage("the output could be cut back once and not again"));
                }
                s
            }
            _ => self.add_segment(key, offset)?,
        };
        self.segment_of.push(segment);
        Ok(())
    }
}

impl FormatWriter for PtdWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let info =
            self.plan.get(self.segment_of.len()).ok_or_else(|| Error::usage("more tensors written than planned"))?;
        check_data(info, data).map_err(|e| e.for_tensor(info.name()))?;
        let row_major = data.as_dense()?;
        // Tensors with a dim order are stored in that order, as the program expects them.
        let permuted = match info.layout() {
            Layout::DimOrder(order) => Some(
                TensorLayout { dtype: info.dtype(), shape: info.shape().to_vec(), dim_order: order.clone() }
                    .stored_from_row_major(row_major),
            ),
            _ => None,
        };
        let bytes: &[u8] = permuted.as_deref().unwrap_or(row_major);
        self.store(bytes)
    }

    /// A large tensor is written while it is hashed, and taken back if its content is stored
    /// already, where the output can be cut back. Otherwise two passes over the pieces: the
    /// first finds the content's digest (identical tensors share a segment), the second, only
    /// for new content, writes it. The pieces of the first pass are kept for the second while
    /// they are few or borrowed from the file; otherwise they are asked for again.
    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let cuttable = self.cuttable()?;
        let Some(info) = self.plan.get(self.segment_of.len()) else {
            return Err(Error::usage("more tensors written than planned"));
        };
        if matches!(info.layout(), Layout::DimOrder(_)) {
            // Permuting needs the whole tensor.
            let data = gather(open()?)?;
            return self.write(&TensorData::dense(data));
        }
        let name = info.name().to_string();
        let want = streamed_size(info).map_err(|e| e.for_tensor(&name))?;
        if cuttable && want >= HASH_BESIDE_MIN as u64 {
            return self.write_ahead(open);
        }
        let mut hasher = Xxh3::new();
        let (mut got, mut kept, mut kept_owned, mut keep) = (0u64, Vec::new(), 0u64, true);
        for piece in open()? {
            let piece = piece?;
            got += piece.len() as u64;
            hasher.write(&piece);
            if keep {
                kept_owned += if piece.is_mapped() { 0 } else { piece.len() as u64 };
                keep = kept_owned <= KEEP_OWNED_BYTES;
                kept.push(piece);
            }
            if !keep {
                kept.clear();
            }
        }
        check_streamed(info, got, want).map_err(|e| e.for_tensor(&name))?;
        let key = (hasher.finish_128(), want);
        if let Some(&s) = self.by_content.get(&key) {
            let pieces: Chunks<'_> = if keep { Box::new(kept.iter().cloned().map(Ok)) } else { open()? };
            if self.segment_holds(s, pieces)? {
                self.segment_of.push(s);
                return Ok(());
            }
        }
        let offset = self.pad()?;
        let mut kept = Some(kept).filter(|_| keep);
        copy_streamed(&mut *self.out, &TensorInfo::blob(&name, want), &mut || match kept.take() {
            Some(pieces) => Ok(Box::new(pieces.into_iter().map(Ok))),
            None => open(),
        })?;
        let segment = self.add_segment(key, offset)?;
        self.segment_of.push(segment);
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if self.segment_of.len() != self.plan.len() {
            return Err(Error::usage(format!(
                "writer finished after {} of {} tensors",
                self.segment_of.len(),
                self.plan.len()
            )));
        }
        let mut fb = encode(&flat_tensor(&self.plan, &self.segments, &self.segment_of)?)?;
        let actual = fb.len() as u64;
        if actual > self.reserved {
            return Err(Error::unsupported("flatbuffer outgrew its reserved room (a bug)"));
        }
        // The region ends where the segment base, rounded down, says it may: the actual
        // flatbuffer when that is true of it, else the reserved room (zero padded).
        let region =
            if checked::align_up(actual, SEGMENT_ALIGNMENT)? == self.segment_base { actual } else { self.reserved };
        let header = Header {
            flatbuffer_offset: PADDED_LENGTH,
            flatbuffer_size: region - PADDED_LENGTH,
            segment_base_offset: self.segment_base,
            segment_data_size: self.end,
        };
        fb[8..8 + PADDED_LENGTH as usize].copy_from_slice(&header.to_bytes());
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&fb)?;
        self.out.seek(SeekFrom::Start(self.segment_base + self.end))?;
        self.out.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    fn writer(out: &mut std::io::Cursor<Vec<u8>>, n: usize, len: usize) -> PtdWriter<'_> {
        let plan: Vec<TensorInfo> =
            (0..n).map(|i| TensorInfo::dense(format!("t{i}"), DType::UInt8, vec![len as u64])).collect();
        PtdWriter::new(Box::new(out), &plan, &WriteOptions::default()).unwrap()
    }

    fn dense(bytes: &[u8]) -> TensorData {
        TensorData::dense(Bytes::from_vec(bytes.to_vec()))
    }

    #[test]
    fn a_segment_holds_only_the_very_same_bytes() {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut w = writer(&mut out, 1, 6);
        w.write(&dense(b"abcdef")).unwrap();
        let holds =
            |w: &mut PtdWriter<'_>, pieces: &[&[u8]]| w.segment_holds(0, pieces.iter().map(|p| Ok(*p))).unwrap();
        assert!(holds(&mut w, &[b"abcdef"]));
        assert!(holds(&mut w, &[b"ab", b"", b"cdef"]));
        assert!(!holds(&mut w, &[b"abcdeF"]), "one byte differs");
        assert!(!holds(&mut w, &[b"abcde"]), "shorter");
        assert!(!holds(&mut w, &[b"abcdef", b"g"]), "longer");
        let at = w.out.stream_position().unwrap();
        assert_eq!(at, w.segment_base + w.end, "the position is left where the next segment goes");
    }

    /// Two different tensors whose digests collide (forced here: the key of the second made
    /// to point at the first's segment) are stored apart, whole or streamed, small or large
    /// (written ahead).
    #[test]
    fn a_digest_collision_stores_both_tensors() {
        for len in [6, HASH_BESIDE_MIN + 3] {
            let a: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut b = a.clone();
            b[len - 1] ^= 1;
            for streamed in [false, true] {
                let mut out = std::io::Cursor::new(Vec::new());
                let mut w = writer(&mut out, 3, len);
                w.write(&dense(&a)).unwrap();
                w.by_content.insert((Xxh3::oneshot(&b), len as u64), 0);
                if streamed {
                    let piece = Bytes::from_vec(b.clone());
                    w.write_chunks(&mut || Ok(Box::new(std::iter::once(Ok(piece.clone()))) as Chunks<'_>)).unwrap();
                } else {
                    w.write(&dense(&b)).unwrap();
                }
                w.write(&dense(&a)).unwrap();
                let case = format!("{len} bytes, streamed: {streamed}");
                assert_eq!(w.segments.len(), 2, "{case}");
                assert_eq!(w.segment_of, [0, 1, 0], "{case}");
                Box::new(w).finish().unwrap();
                let bytes = Bytes::from_vec(out.into_inner());
                let file = crate::file::OpenOptions::new().format(crate::Format::Ptd).open_bytes(bytes).unwrap();
                let read = |name: &str| file.read(name).unwrap().as_dense().unwrap().to_vec();
                assert!(read("t0") == a && read("t1") == b && read("t2") == a, "{case}");
            }
        }
    }
}
