//! Writing `.zt`: blobs streamed as they arrive, the index at the end.
//!
//! For dense tensors the bytes are what the zTensor 0.1 reference writes: the magic, each blob
//! at the next multiple of 64 (zero padding), the index as a definite array of indefinite
//! maps with keys `name, offset, size, dtype, layout, shape, encoding`, then
//! `data_endianness` (raw multi-byte data) and `checksum`, then other keys sorted, and the
//! index length as a little-endian u64.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{Receiver, TryRecvError, sync_channel};

use super::index::KNOWN_KEYS;
use super::{ALIGNMENT, MAGIC, check_supported, dtype_name, sparse};
use crate::error::{Error, Result};
use crate::formats::ztensor::cbor::Encoder;
use crate::formats::ztensor::zstd_frames;
use crate::formats::{
    Compression, FormatWriter, Output, WriteOptions, check_data, check_streamed, streamed_size, write_hashing,
};
use crate::model::{
    ByteOrder, Checksum, ChecksumHasher, ChecksumKind, Chunks, Layout, MetaValue, TensorData, TensorInfo, gather,
};
use crate::source::Bytes;
use crate::swap;

/// What the index records of one written blob.
struct Written {
    offset: u64,
    size: u64,
    raw: bool,
    checksum: Option<Checksum>,
}

/// A blob being written in pieces: where it started, its bytes so far and their checksum.
struct OpenBlob {
    offset: u64,
    size: u64,
    checksum: ChecksumHasher,
}

/// What one job on the thread pool compresses.
enum Job {
    /// Consecutive whole tensors, each stored as one frame.
    Tensors,
    /// One [`CHUNK`](zstd_frames::CHUNK) of a large tensor, stored as one frame of its blob.
    Frame { first: bool, last: bool },
}

/// A job handed to the thread pool: its input size, what it is, and where its stored bytes
/// (and, for whole tensors, their checksums) will arrive.
struct Pending {
    input_bytes: u64,
    job: Job,
    result: Receiver<Result<Vec<Stored>>>,
}

/// A tensor's (or a frame's) bytes as stored, and their checksum.
type Stored = (Vec<u8>, Option<Checksum>);

/// Small tensors are gathered into one job until they hold this much input (a job per 9 KB
/// tensor costs as much as compressing it).
const BATCH_BYTES: u64 = 1 << 20;

/// While compressing, jobs are handed to the thread pool as tensors arrive and written out
/// in order as they finish, so that several compress at once and the writing of one overlaps
/// the compression of the next. At most this much input is in flight (memory stays near
/// twice this, whatever the tensors' sizes)...
const MAX_PENDING_BYTES: u64 = 64 << 20;
/// ...in at most this many jobs.
const MAX_PENDING: usize = 1024;

/// A streaming `.zt` writer.
pub struct ZtWriter<'w> {
    out: Box<dyn Output + 'w>,
    pos: u64,
    plan: Vec<TensorInfo>,
    /// The zTensor name of each planned tensor's dtype.
    dtype_names: Vec<&'static str>,
    written: Vec<Written>,
    options: WriteOptions,
    /// Jobs whose stored bytes are not yet written, in plan order after `written`.
    pending: VecDeque<Pending>,
    pending_bytes: u64,
    /// Tensors handed over but not yet in `written` (in `pending` or `batch`).
    accepted: usize,
    /// Tensors gathered for the next job, in plan order after `pending`.
    batch: Vec<(TensorInfo, TensorData)>,
    batch_bytes: u64,
    /// The large tensor whose frames are being written.
    open_blob: Option<OpenBlob>,
}

const ZEROS: [u8; ALIGNMENT as usize] = [0; ALIGNMENT as usize];

impl<'w> ZtWriter<'w> {
    /// A writer for the tensors of `plan`; errors naming the first one `.zt` cannot hold.
    pub fn new(mut out: Box<dyn Output + 'w>, plan: &[TensorInfo], options: &WriteOptions) -> Result<Self> {
        let dtype_names = plan
            .iter()
            .map(|info| {
                check_supported(info).map_err(|e| e.for_tensor(info.name()))?;
                dtype_name(info.dtype()).ok_or_else(|| Error::unsupported(format!("no zTensor dtype {}", info.dtype())))
            })
            .collect::<Result<Vec<_>>>()?;
        out.write_all(MAGIC)?;
        Ok(ZtWriter {
            out,
            pos: MAGIC.len() as u64,
            plan: plan.to_vec(),
            dtype_names,
            written: Vec::with_capacity(plan.len()),
            // zTensor 0.1 names CRC-32C and SHA-256 only: another checksum is not stored.
            options: match options.checksum {
                ChecksumKind::Xxh3 => WriteOptions { checksum: ChecksumKind::None, ..options.clone() },
                _ => options.clone(),
            },
            pending: VecDeque::new(),
            pending_bytes: 0,
            accepted: 0,
            batch: Vec::new(),
            batch_bytes: 0,
            open_blob: None,
        })
    }

    fn compressing(&self) -> bool {
        self.options.compression != Compression::None
    }

    /// The next planned tensor, counted as handed over.
    fn accept(&mut self) -> Result<TensorInfo> {
        let info = self
            .plan
            .get(self.written.len() + self.accepted)
            .ok_or_else(|| Error::usage("more tensors written than planned"))?
            .clone();
        self.accepted += 1;
        Ok(info)
    }

    /// Pad with zeros to the next aligned offset, where a blob starts.
    fn align(&mut self) -> Result<()> {
        let pad = self.pos.next_multiple_of(ALIGNMENT) - self.pos;
        self.out.write_all(&ZEROS[..pad as usize])?;
        self.pos += pad;
        Ok(())
    }

    /// Start a blob written in pieces at the next aligned offset.
    fn begin_blob(&mut self) -> Result<()> {
        self.align()?;
        self.open_blob =
            Some(OpenBlob { offset: self.pos, size: 0, checksum: ChecksumHasher::new(self.options.checksum) });
        Ok(())
    }

    /// Append bytes to the open blob.
    fn blob_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.count_blob_bytes(bytes)?;
        Ok(self.out.write_all(bytes)?)
    }

    /// Append a piece of the source to the open blob (copied in the kernel where it can be,
    /// its checksum computed beside the copy).
    fn blob_piece(&mut self, piece: &Bytes) -> Result<()> {
        let blob = self.open_blob.as_mut().ok_or_else(|| Error::usage("no blob is open"))?;
        if self.options.checksum == ChecksumKind::None {
            self.out.write_bytes(piece)?;
        } else {
            write_hashing(&mut *self.out, piece, |b| blob.checksum.update(b))?;
        }
        blob.size += piece.len() as u64;
        self.pos += piece.len() as u64;
        Ok(())
    }

    /// Take `bytes`, about to be written, into the open blob's size and checksum.
    fn count_blob_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let blob = self.open_blob.as_mut().ok_or_else(|| Error::usage("no blob is open"))?;
        blob.checksum.update(bytes);
        blob.size += bytes.len() as u64;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Close the open blob: the next planned tensor is written.
    fn end_blob(&mut self) -> Result<()> {
        let blob = self.open_blob.take().ok_or_else(|| Error::usage("no blob is open"))?;
        let raw = !self.compressing();
        self.written.push(Written { offset: blob.offset, size: blob.size, raw, checksum: blob.checksum.finish() });
        self.accepted -= 1;
        Ok(())
    }

    /// Append one whole blob whose checksum is known.
    fn emit(&mut self, stored: &[u8], checksum: Option<Checksum>) -> Result<()> {
        self.align()?;
        let offset = self.pos;
        self.out.write_all(stored)?;
        self.pos += stored.len() as u64;
        let raw = !self.compressing();
        self.written.push(Written { offset, size: stored.len() as u64, raw, checksum });
        self.accepted -= 1;
        Ok(())
    }

    /// Write out the oldest job's bytes once they are compressed.
    fn emit_oldest(&mut self) -> Result<()> {
        let Some(p) = self.pending.pop_front() else { return Ok(()) };
        self.pending_bytes -= p.input_bytes;
        let stored = wait(&p.result)?;
        match p.job {
            Job::Tensors => {
                for (bytes, checksum) in stored {
                    self.emit(&bytes, checksum)?;
                }
            }
            Job::Frame { first, last } => {
                if first {
                    self.begin_blob()?;
                }
                for (bytes, _) in stored {
                    self.blob_bytes(&bytes)?;
                }
                if last {
                    self.end_blob()?;
                }
            }
        }
        Ok(())
    }

    /// Hand a job to the thread pool, then write out finished jobs while too much is in
    /// flight. Two jobs stay in flight whatever their size, so that writing one overlaps
    /// compressing the next.
    fn spawn(
        &mut self,
        job: Job,
        input_bytes: u64,
        work: impl FnOnce() -> Result<Vec<Stored>> + Send + 'static,
    ) -> Result<()> {
        let (tx, rx) = sync_channel(1);
        rayon::spawn(move || {
            let _ = tx.send(work());
        });
        self.pending.push_back(Pending { input_bytes, job, result: rx });
        self.pending_bytes += input_bytes;
        while self.pending.len() > 2 && (self.pending_bytes > MAX_PENDING_BYTES || self.pending.len() > MAX_PENDING) {
            self.emit_oldest()?;
        }
        Ok(())
    }

    /// Hand the gathered tensors to the thread pool as one job.
    fn flush_batch(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        let input_bytes = std::mem::take(&mut self.batch_bytes);
        let options = self.options.clone();
        self.spawn(Job::Tensors, input_bytes, move || {
            batch
                .iter()
                .map(|(info, data)| compressed(&options, info, data).map_err(|e| e.for_tensor(info.name())))
                .collect()
        })
    }

    /// Hand one frame of a large tensor to the thread pool.
    fn spawn_frame(&mut self, input: Bytes, first: bool, last: bool) -> Result<()> {
        let Compression::Zstd(level) = self.options.compression else {
            return Err(Error::usage("a frame without compression"));
        };
        self.spawn(Job::Frame { first, last }, input.len() as u64, move || {
            Ok(vec![(zstd_frames::compress(&input, level)?, None)])
        })
    }

    /// Write a raw dense tensor of `want` bytes from its pieces, swapped to big-endian a
    /// piece at a time when asked.
    fn write_raw_pieces(&mut self, info: &TensorInfo, want: u64, pieces: Chunks<'_>) -> Result<()> {
        let unit = info.dtype().swap_unit();
        let swap = self.options.byte_order == ByteOrder::Big && unit > 1;
        self.begin_blob()?;
        let mut got = 0u64;
        // The start of an element cut by the end of a piece, when swapping.
        let mut carry: Vec<u8> = Vec::with_capacity(unit);
        for piece in pieces {
            let piece = piece?;
            got += piece.len() as u64;
            if got > want {
                break;
            }
            if !swap {
                self.blob_piece(&piece)?;
                continue;
            }
            let mut rest = &piece[..];
            if !carry.is_empty() {
                let n = (unit - carry.len()).min(rest.len());
                carry.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if carry.len() == unit {
                    self.blob_bytes(&swap::swapped(&carry, unit))?;
                    carry.clear();
                }
            }
            let whole = rest.len() / unit * unit;
            for part in rest[..whole].chunks(zstd_frames::CHUNK) {
                self.blob_bytes(&swap::swapped(part, unit))?;
            }
            carry.extend_from_slice(&rest[whole..]);
        }
        check_streamed(info, got, want)?;
        self.end_blob()
    }

    /// Write a large dense tensor of `want` bytes as frames of exactly `CHUNK` input bytes
    /// (the last one shorter), whatever the sizes of the pieces it arrives in.
    fn write_framed_pieces(&mut self, info: &TensorInfo, want: u64, pieces: Chunks<'_>) -> Result<()> {
        const CHUNK: u64 = zstd_frames::CHUNK as u64;
        self.flush_batch()?;
        let mut sent = 0u64;
        let mut partial: Vec<u8> = Vec::new();
        let mut got = 0u64;
        for piece in pieces {
            let piece = piece?;
            got += piece.len() as u64;
            if got > want {
                break;
            }
            let mut rest = &piece[..];
            let mut offset = 0u64;
            while !rest.is_empty() {
                let room = (CHUNK - partial.len() as u64) as usize;
                if partial.is_empty() && (rest.len() as u64 >= CHUNK || sent + rest.len() as u64 == want) {
                    // A whole frame (or the whole last one) inside this piece: no copy.
                    let n = rest.len().min(CHUNK as usize);
                    let frame = piece.slice(offset, n as u64)?;
                    sent += n as u64;
                    self.spawn_frame(frame, sent == n as u64, sent == want)?;
                    rest = &rest[n..];
                    offset += n as u64;
                    continue;
                }
                let n = rest.len().min(room);
                partial.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                offset += n as u64;
                if partial.len() as u64 == CHUNK || sent + partial.len() as u64 == want {
                    let frame = Bytes::from_vec(std::mem::take(&mut partial));
                    let n = frame.len() as u64;
                    sent += n;
                    self.spawn_frame(frame, sent == n, sent == want)?;
                }
            }
        }
        check_streamed(info, got, want)
    }

    fn index(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.array_header(self.written.len() as u64);
        for ((info, w), dtype) in self.plan.iter().zip(&self.written).zip(&self.dtype_names) {
            e.map_begin_indefinite();
            e.text("name");
            e.text(info.name());
            e.text("offset");
            e.uint(w.offset);
            e.text("size");
            e.uint(w.size);
            e.text("dtype");
            e.text(dtype);
            e.text("layout");
            e.text(if info.layout().is_sparse() { "sparse" } else { "dense" });
            e.text("shape");
            e.array_header(info.shape().len() as u64);
            info.shape().iter().for_each(|&d| e.uint(d));
            e.text("encoding");
            e.text(if w.raw { "raw" } else { "zstd" });
            if w.raw && (info.dtype().swap_unit() > 1 || info.layout().is_sparse()) {
                e.text("data_endianness");
                e.text(self.options.byte_order.name());
            }
            if let Some(c) = &w.checksum {
                e.text("checksum");
                e.text(&c.to_string());
            }
            let mut rest: Vec<(String, MetaValue)> =
                info.extra().iter().filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str())).cloned().collect();
            if let Layout::Sparse { format, nnz } = info.layout() {
                rest.push(("sparse_format".into(), format.name().into()));
                rest.push(("nnz".into(), MetaValue::Int(i128::from(*nnz))));
            }
            rest.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, v) in &rest {
                e.text(k);
                e.value(v);
            }
            e.end_indefinite();
        }
        e.out
    }
}

impl ZtWriter<'_> {
    /// Write a dense tensor of `want` bytes from its pieces: raw as they come, compressed in
    /// frames when large, else gathered whole into the next job.
    fn write_dense(&mut self, info: &TensorInfo, want: u64, pieces: Chunks<'_>) -> Result<()> {
        if !self.compressing() {
            return self.write_raw_pieces(info, want, pieces);
        }
        if want >= zstd_frames::SPLIT_AT {
            return self.write_framed_pieces(info, want, pieces);
        }
        let data = gather(pieces)?;
        check_streamed(info, data.len() as u64, want)?;
        self.add_to_batch(info.clone(), TensorData::dense(data))
    }

    fn add_to_batch(&mut self, info: TensorInfo, data: TensorData) -> Result<()> {
        self.batch_bytes += data.len();
        self.batch.push((info, data));
        if self.batch_bytes >= BATCH_BYTES {
            self.flush_batch()?;
        }
        Ok(())
    }
}

impl FormatWriter for ZtWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let info = self.accept()?;
        let name = info.name().to_string();
        check_data(&info, data).map_err(|e| e.for_tensor(&name))?;
        let done = if let Ok(bytes) = data.as_dense() {
            self.write_dense(&info, bytes.len() as u64, Box::new(std::iter::once(Ok(bytes.clone()))))
        } else if self.compressing() {
            self.add_to_batch(info, data.clone())
        } else {
            let stored = sparse::encode(&data.to_sparse()?, info.dtype(), self.options.byte_order);
            let checksum = Checksum::compute(self.options.checksum, &stored);
            self.emit(&stored, checksum)
        };
        done.map_err(|e| e.for_tensor(&name))
    }

    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let info = self.accept()?;
        let want = streamed_size(&info).map_err(|e| e.for_tensor(info.name()))?;
        let pieces = open()?;
        self.write_dense(&info, want, pieces).map_err(|e| e.for_tensor(info.name()))
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.flush_batch()?;
        while !self.pending.is_empty() {
            self.emit_oldest()?;
        }
        if self.written.len() != self.plan.len() || self.open_blob.is_some() {
            let missing = self.plan.get(self.written.len()).map_or("", |i| i.name());
            return Err(Error::usage(format!(
                "writer finished after {} of {} tensors (next: {missing:?})",
                self.written.len(),
                self.plan.len()
            )));
        }
        let index = self.index();
        self.out.write_all(&index)?;
        self.out.write_all(&(index.len() as u64).to_le_bytes())?;
        self.out.flush()?;
        Ok(())
    }
}

/// A tensor's compressed bytes and their checksum (run on the thread pool).
fn compressed(options: &WriteOptions, info: &TensorInfo, data: &TensorData) -> Result<Stored> {
    let Compression::Zstd(level) = options.compression else {
        return Err(Error::usage("compressed() without compression"));
    };
    let stored = match data.as_dense() {
        Ok(bytes) => zstd_frames::compress(bytes, level)?,
        Err(_) => zstd_frames::compress(&sparse::encode(&data.to_sparse()?, info.dtype(), ByteOrder::Little), level)?,
    };
    let checksum = Checksum::compute(options.checksum, &stored);
    Ok((stored, checksum))
}

/// The result of a job on the thread pool. A thread of the pool waiting here runs other
/// jobs meanwhile (the job it waits for may be queued behind it: blocking would deadlock a
/// one-thread pool).
fn wait<T>(result: &Receiver<Result<T>>) -> Result<T> {
    loop {
        match result.try_recv() {
            Ok(r) => return r,
            Err(TryRecvError::Disconnected) => return Err(Error::usage("a compression job died")),
            Err(TryRecvError::Empty) => match rayon::yield_now() {
                // Not a pool thread: block until the job is done.
                None => return result.recv().map_err(|_| Error::usage("a compression job died"))?,
                Some(rayon::Yield::Idle) => std::thread::yield_now(),
                Some(rayon::Yield::Executed) => {}
            },
        }
    }
}
