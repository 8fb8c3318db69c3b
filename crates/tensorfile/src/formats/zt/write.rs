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

use super::cbor::Encoder;
use super::index::KNOWN_KEYS;
use super::{ALIGNMENT, MAGIC, check_supported, dtype_name, sparse, zstd_frames};
use crate::error::{Error, Result};
use crate::formats::{Compression, FormatWriter, Output, WriteOptions, check_data};
use crate::model::{ByteOrder, Checksum, Layout, MetaValue, TensorData, TensorInfo};
use crate::swap;

/// What the index records of one written blob.
struct Written {
    offset: u64,
    size: u64,
    raw: bool,
    checksum: Option<Checksum>,
}

/// Consecutive tensors being compressed by one job on the thread pool: their input size,
/// their number, and where their stored bytes and checksums will arrive.
struct Pending {
    input_bytes: u64,
    tensors: usize,
    result: Receiver<Result<Vec<Stored>>>,
}

/// A tensor's bytes as stored, and their checksum.
type Stored = (Vec<u8>, Option<Checksum>);

/// Small tensors are gathered into one job until they hold this much input (a job per 9 KB
/// tensor costs as much as compressing it); a larger tensor makes a job of its own.
const BATCH_BYTES: u64 = 1 << 20;

/// While compressing, tensors are handed to the thread pool as they arrive and written out
/// in order as they finish, so that several small tensors compress at once and the writing
/// of one overlaps the compression of the next. At most this much input is in flight...
const MAX_PENDING_BYTES: u64 = 64 << 20;
/// ...in at most this many tensors.
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
    /// Compressed tensors not yet written, in plan order after `written`.
    pending: VecDeque<Pending>,
    pending_bytes: u64,
    pending_tensors: usize,
    /// Tensors gathered for the next job, in plan order after `pending`.
    batch: Vec<(TensorInfo, TensorData)>,
    batch_bytes: u64,
}

const ZEROS: [u8; ALIGNMENT as usize] = [0; ALIGNMENT as usize];

impl<'w> ZtWriter<'w> {
    /// A writer for the tensors of `plan`; errors naming the first one `.zt` cannot hold.
    pub fn new(mut out: Box<dyn Output + 'w>, plan: &[TensorInfo], options: &WriteOptions) -> Result<Self> {
        let dtype_names = plan
            .iter()
            .map(|info| {
                check_supported(info).map_err(|e| e.for_tensor(&info.name))?;
                dtype_name(info.dtype).ok_or_else(|| Error::unsupported(format!("no zTensor dtype {}", info.dtype)))
            })
            .collect::<Result<Vec<_>>>()?;
        out.write_all(MAGIC)?;
        Ok(ZtWriter {
            out,
            pos: MAGIC.len() as u64,
            plan: plan.to_vec(),
            dtype_names,
            written: Vec::with_capacity(plan.len()),
            options: options.clone(),
            pending: VecDeque::new(),
            pending_bytes: 0,
            pending_tensors: 0,
            batch: Vec::new(),
            batch_bytes: 0,
        })
    }

    /// Append one blob at the next aligned offset.
    fn emit(&mut self, stored: &[u8], checksum: Option<Checksum>) -> Result<()> {
        let pad = self.pos.next_multiple_of(ALIGNMENT) - self.pos;
        self.out.write_all(&ZEROS[..pad as usize])?;
        self.pos += pad;
        self.out.write_all(stored)?;
        self.written.push(Written {
            offset: self.pos,
            size: stored.len() as u64,
            raw: self.options.compression == Compression::None,
            checksum,
        });
        self.pos += stored.len() as u64;
        Ok(())
    }

    /// Write out the oldest pending job's tensors once they are compressed.
    fn emit_oldest(&mut self) -> Result<()> {
        let Some(p) = self.pending.pop_front() else { return Ok(()) };
        self.pending_bytes -= p.input_bytes;
        self.pending_tensors -= p.tensors;
        for (stored, checksum) in wait(&p.result)? {
            self.emit(&stored, checksum)?;
        }
        Ok(())
    }

    /// Hand the gathered tensors to the thread pool as one job.
    fn flush_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let (tensors, input_bytes) = (batch.len(), std::mem::take(&mut self.batch_bytes));
        let options = self.options.clone();
        let (tx, rx) = sync_channel(1);
        rayon::spawn(move || {
            let result = batch
                .iter()
                .map(|(info, data)| compressed(&options, info, data).map_err(|e| e.for_tensor(&info.name)))
                .collect();
            let _ = tx.send(result);
        });
        self.pending.push_back(Pending { input_bytes, tensors, result: rx });
        self.pending_bytes += input_bytes;
        self.pending_tensors += tensors;
    }

    fn stored_bytes<'d>(&self, info: &TensorInfo, data: &'d TensorData) -> Result<std::borrow::Cow<'d, [u8]>> {
        use std::borrow::Cow;
        let order = self.options.byte_order;
        let zstd = match self.options.compression {
            Compression::Zstd(level) => Some(level),
            Compression::None => None,
        };
        match (data, zstd) {
            (TensorData::Dense(bytes), None) => {
                let unit = info.dtype.swap_unit();
                if order == ByteOrder::Big && unit > 1 {
                    Ok(Cow::Owned(swap::swapped(bytes, unit)))
                } else {
                    Ok(Cow::Borrowed(&bytes[..]))
                }
            }
            (TensorData::Dense(bytes), Some(level)) => Ok(Cow::Owned(zstd_frames::compress(bytes, level)?)),
            (TensorData::Sparse(s), None) => Ok(Cow::Owned(sparse::encode(s, info.dtype, order))),
            (TensorData::Sparse(s), Some(level)) => {
                Ok(Cow::Owned(zstd_frames::compress(&sparse::encode(s, info.dtype, ByteOrder::Little), level)?))
            }
        }
    }

    fn index(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.array_header(self.written.len() as u64);
        for ((info, w), dtype) in self.plan.iter().zip(&self.written).zip(&self.dtype_names) {
            e.map_begin_indefinite();
            e.text("name");
            e.text(&info.name);
            e.text("offset");
            e.uint(w.offset);
            e.text("size");
            e.uint(w.size);
            e.text("dtype");
            e.text(dtype);
            e.text("layout");
            e.text(if info.layout.is_sparse() { "sparse" } else { "dense" });
            e.text("shape");
            e.array_header(info.shape.len() as u64);
            info.shape.iter().for_each(|&d| e.uint(d));
            e.text("encoding");
            e.text(if w.raw { "raw" } else { "zstd" });
            if w.raw && (info.dtype.swap_unit() > 1 || info.layout.is_sparse()) {
                e.text("data_endianness");
                e.text(self.options.byte_order.name());
            }
            if let Some(c) = &w.checksum {
                e.text("checksum");
                e.text(&c.to_string());
            }
            let mut rest: Vec<(String, MetaValue)> =
                info.extra.iter().filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str())).cloned().collect();
            if let Layout::Sparse { format, nnz } = info.layout {
                rest.push(("sparse_format".into(), format.name().into()));
                rest.push(("nnz".into(), MetaValue::Int(i128::from(nnz))));
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

impl FormatWriter for ZtWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let planned = self.written.len() + self.pending_tensors + self.batch.len();
        let info = self.plan.get(planned).ok_or_else(|| Error::usage("more tensors written than planned"))?.clone();
        check_data(&info, data).map_err(|e| e.for_tensor(&info.name))?;
        if self.options.compression == Compression::None {
            let stored = self.stored_bytes(&info, data).map_err(|e| e.for_tensor(&info.name))?;
            let checksum = Checksum::compute(self.options.checksum, &stored);
            return self.emit(&stored, checksum);
        }
        self.batch_bytes += data.len();
        self.batch.push((info, data.clone()));
        if self.batch_bytes >= BATCH_BYTES {
            self.flush_batch();
        }
        // Two jobs stay in flight whatever their size, so that writing one overlaps
        // compressing the next.
        while self.pending.len() > 2 && (self.pending_bytes > MAX_PENDING_BYTES || self.pending.len() > MAX_PENDING) {
            self.emit_oldest()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.flush_batch();
        while !self.pending.is_empty() {
            self.emit_oldest()?;
        }
        if self.written.len() != self.plan.len() {
            let missing = &self.plan[self.written.len()].name;
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
    let stored = match data {
        TensorData::Dense(bytes) => zstd_frames::compress(bytes, level)?,
        TensorData::Sparse(s) => zstd_frames::compress(&sparse::encode(s, info.dtype, ByteOrder::Little), level)?,
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
