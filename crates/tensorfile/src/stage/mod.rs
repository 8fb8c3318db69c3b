//! Staging tensors through a few fixed buffers on their way into other memory (a GPU's).
//!
//! A device copy runs at its full rate only from pinned host memory, and pinning a whole file
//! costs as much as reading it. A [`StagePlan`] cuts the bytes of a list of tensors into
//! stages of at most one buffer each, and each stage into parts of 2 MiB; the caller has a
//! buffer filled with a stage (one at a time by [`StagePlan::fill`], or stage after stage by
//! a [`StagePipeline`]'s threads), copies each of the stage's [`Piece`]s from the buffer to
//! where its tensor lives, and lets the buffer be filled again once those copies are done. Buffers belong to the
//! caller and are never handed out as tensors: nothing a caller gets is a view of memory that
//! is filled again later.
//!
//! Tensors stored raw in a local file come in *windows*: one read of the file's range that
//! holds them (a few bytes between tensors read through), straight into the buffer, on all
//! cores, with `O_DIRECT` when the file is not in the page cache (no copy out of it, no page
//! faults on a map) or buffered `pread` from the page cache (no faults either). Other tensors
//! (in memory already, or decoded when their first stage is filled: [`StageTensor::later`])
//! are packed into stages and copied in; a tensor decoded for the plan is dropped once every
//! stage holding a piece of it is filled, so that a compressed file is held decoded a tensor
//! or two at a time, not whole.

use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use rayon::prelude::*;

use crate::checked;
use crate::error::{Error, Result};
use crate::source::Bytes;
use crate::source::direct::{self, ALIGN};

// A staging buffer is written by several threads at once, each through a part of its own:
// the slice of a part is made in `buffer` and taken by `pipeline`, each with its reasoning.
#[allow(unsafe_code)]
mod buffer;
#[allow(unsafe_code)]
mod pipeline;

pub use buffer::{Held, StageBuffer};
pub use pipeline::{Filled, StagePipeline};

/// The default bytes per stage (and so per staging buffer).
pub const DEFAULT_CHUNK: usize = 32 << 20;
/// The smallest stage: room for a window's two partial blocks and some bytes between them.
pub const MIN_CHUNK: usize = 4 * ALIGN;
/// Bytes read by one thread at a time when a stage is filled.
const SUB: usize = 2 << 20;
/// Bytes between two tensors of a file that a window reads through rather than ending.
const GAP_MAX: u64 = 1 << 20;

/// Whether windows are read with `O_DIRECT` (where the filesystem and the buffer's alignment
/// allow it; buffered otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direct {
    /// Where the file is not in the page cache (a few pages probed).
    Auto,
    /// Always.
    Always,
    /// Never: buffered reads.
    Never,
}

/// Bytes of one tensor in a stage: `len` bytes from `offset` in the tensor are at `at` in the
/// stage's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Position of the tensor in the list the plan was made from.
    pub tensor: usize,
    /// Where the piece starts within the tensor's bytes.
    pub offset: u64,
    /// Bytes in the piece.
    pub len: u64,
    /// Where the piece starts within the buffer.
    pub at: u64,
}

/// How a stage's buffer is filled.
#[derive(Clone, Copy, Debug)]
enum Fill {
    /// `len` bytes of file `file` (an index into the plan's files) from `offset` (aligned), read
    /// to the buffer's start.
    Window { file: usize, offset: u64, len: u64 },
    /// Each piece copied from its tensor's bytes in memory.
    Packed,
}

/// One buffer's worth of the plan.
#[derive(Debug)]
struct Stage {
    fill: Fill,
    pieces: Vec<Piece>,
}

/// A file that windows read from: the tensor whose bytes map it, and the file opened again
/// for direct I/O on first use (`None` where refused or not wanted).
struct WindowFile {
    tensor: usize,
    direct: bool,
    opened: OnceLock<Option<File>>,
}

/// What reads a tensor's dense bytes when its first stage is filled.
pub type ReadLater = Box<dyn Fn() -> Result<Bytes> + Send + Sync>;

/// A tensor to stage: its dense bytes, or their length and what reads them later.
pub enum StageTensor {
    /// The bytes (a slice of a mapped file is read from the file into the buffers).
    Ready(Bytes),
    /// Bytes to decode when a stage first needs them ([`StageTensor::later`]).
    Later(Deferred),
}

/// A tensor decoded when a stage first needs it, kept until the last stage holding a piece of
/// it is filled.
pub struct Deferred {
    /// The dense bytes' length.
    len: u64,
    /// What decodes them.
    read: ReadLater,
    /// The bytes while some stage still needs them.
    held: Mutex<Option<Bytes>>,
    /// Stages holding a piece of the tensor not yet filled.
    stages_left: AtomicUsize,
}

impl StageTensor {
    /// A tensor of `len` dense bytes that `read` decodes when first needed.
    pub fn later(len: u64, read: ReadLater) -> StageTensor {
        StageTensor::Later(Deferred { len, read, held: Mutex::new(None), stages_left: AtomicUsize::new(0) })
    }

    fn ready(&self) -> Option<&Bytes> {
        match self {
            StageTensor::Ready(b) => Some(b),
            StageTensor::Later(_) => None,
        }
    }

    fn len(&self) -> u64 {
        match self {
            StageTensor::Ready(b) => b.len() as u64,
            StageTensor::Later(d) => d.len,
        }
    }

    /// The bytes, decoded now where they are not held.
    fn bytes(&self, index: usize) -> Result<Bytes> {
        match self {
            StageTensor::Ready(b) => Ok(b.clone()),
            StageTensor::Later(Deferred { len, read, held, .. }) => {
                let mut held = held.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(b) = held.as_ref() {
                    return Ok(b.clone());
                }
                let bytes = read()?;
                if bytes.len() as u64 != *len {
                    return Err(Error::invalid(
                        crate::error::Rule::SizeMismatch,
                        format!("tensor {index} of the plan decoded to {} bytes, not the {len} planned", bytes.len()),
                    ));
                }
                *held = Some(bytes.clone());
                Ok(bytes)
            }
        }
    }

    /// A stage holding a piece of the tensor is filled: the bytes are dropped after the last.
    fn stage_done(&self) {
        if let StageTensor::Later(Deferred { held, stages_left, .. }) = self {
            let before = stages_left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            if before == Ok(1) {
                *held.lock().unwrap_or_else(PoisonError::into_inner) = None;
            }
        }
    }
}

/// The stages that carry a list of tensors through buffers of `chunk` bytes.
pub struct StagePlan {
    chunk: usize,
    /// Bytes of a part: what one thread fills at a time ([`SUB`]; less in tests).
    part: usize,
    tensors: Vec<StageTensor>,
    files: Vec<WindowFile>,
    stages: Vec<Stage>,
}

impl StagePlan {
    /// Plan the stages for `tensors` (the dense bytes of each, in the order the caller will
    /// place them) in buffers of `chunk` bytes (a multiple of 4096, at least [`MIN_CHUNK`]).
    pub fn new(tensors: Vec<Bytes>, chunk: usize, direct: Direct) -> Result<StagePlan> {
        Self::with_later(tensors.into_iter().map(StageTensor::Ready).collect(), chunk, direct)
    }

    /// Plan the stages for `tensors`, some of which are decoded only when a stage needs them
    /// ([`StageTensor::later`]).
    pub fn with_later(tensors: Vec<StageTensor>, chunk: usize, direct: Direct) -> Result<StagePlan> {
        if chunk < MIN_CHUNK || chunk % ALIGN != 0 {
            return Err(Error::usage(format!(
                "a staging chunk is a multiple of {ALIGN} bytes of at least {MIN_CHUNK}, not {chunk}"
            )));
        }
        let mut plan = StagePlan { chunk, part: SUB, tensors, files: Vec::new(), stages: Vec::new() };
        for i in 0..plan.tensors.len() {
            match plan.tensors[i].ready().cloned() {
                Some(bytes) => match bytes.mapped_file() {
                    Some((file, offset)) => {
                        let f = plan.file_slot(file, i, direct);
                        plan.add_windowed(i, f, offset, bytes.len() as u64)?;
                    }
                    None => plan.add_packed(i, bytes.len() as u64),
                },
                None => plan.add_packed(i, plan.tensors[i].len()),
            }
        }
        // Each later tensor is held until the stages with a piece of it (one piece a stage:
        // packing is in order) are all filled.
        for stage in &plan.stages {
            for p in &stage.pieces {
                if let StageTensor::Later(Deferred { stages_left, .. }) = &plan.tensors[p.tensor] {
                    stages_left.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(plan)
    }

    /// The index of the window file that `file` (mapped by tensor `tensor`) is, added if new.
    fn file_slot(&mut self, file: &File, tensor: usize, direct: Direct) -> usize {
        let same = |w: &WindowFile| {
            self.tensors[w.tensor].ready().and_then(Bytes::mapped_file).is_some_and(|(f, _)| std::ptr::eq(f, file))
        };
        if let Some(k) = self.files.iter().position(same) {
            return k;
        }
        let direct = match direct {
            Direct::Always => true,
            Direct::Never => false,
            Direct::Auto => !direct::file_is_cached(file),
        };
        self.files.push(WindowFile { tensor, direct, opened: OnceLock::new() });
        self.files.len() - 1
    }

    /// Tensor `tensor`, `len` bytes at `offset` of window file `file`, into windows: the
    /// current one where it follows closely and fits, new ones for the rest.
    fn add_windowed(&mut self, tensor: usize, file: usize, offset: u64, len: u64) -> Result<()> {
        let chunk = self.chunk as u64;
        let mut done = 0u64;
        while done < len {
            let at = checked::add(offset, done, "tensor offset")?;
            let room = match self.stages.last() {
                Some(Stage { fill: Fill::Window { file: f, offset: start, len: filled }, .. })
                    if *f == file && at >= start + filled && at - (start + filled) <= GAP_MAX =>
                {
                    (start + chunk).saturating_sub(at)
                }
                _ => 0,
            };
            if room == 0 {
                let start = at / ALIGN as u64 * ALIGN as u64;
                self.stages.push(Stage { fill: Fill::Window { file, offset: start, len: 0 }, pieces: Vec::new() });
                continue;
            }
            let n = room.min(len - done);
            let stage = self.stages.last_mut().expect("a window was just found or made");
            if let Fill::Window { offset: start, len: filled, .. } = &mut stage.fill {
                stage.pieces.push(Piece { tensor, offset: done, len: n, at: at - *start });
                *filled = at + n - *start;
            }
            done += n;
        }
        Ok(())
    }

    /// Tensor `tensor` of `len` bytes in memory, packed after the pieces of the current packed
    /// stage, on new ones for what does not fit.
    fn add_packed(&mut self, tensor: usize, len: u64) {
        let chunk = self.chunk as u64;
        let mut done = 0u64;
        while done < len {
            let used = match self.stages.last() {
                Some(Stage { fill: Fill::Packed, pieces }) => pieces.last().map_or(0, |p| p.at + p.len),
                _ => chunk,
            };
            if used == chunk {
                self.stages.push(Stage { fill: Fill::Packed, pieces: Vec::new() });
                continue;
            }
            let n = (chunk - used).min(len - done);
            let stage = self.stages.last_mut().expect("a packed stage was just found or made");
            stage.pieces.push(Piece { tensor, offset: done, len: n, at: used });
            done += n;
        }
    }

    /// Stages in the plan.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether the plan has no stages (no tensor has a byte).
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// The bytes each buffer holds.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// The pieces of stage `k`, each to copy from the buffer to its tensor once filled.
    pub fn pieces(&self, k: usize) -> Result<&[Piece]> {
        Ok(&self.stage(k)?.pieces)
    }

    /// Whether stage `k` is read from its file with `O_DIRECT` (where the buffer allows).
    pub fn is_direct(&self, k: usize) -> Result<bool> {
        Ok(match self.stage(k)?.fill {
            Fill::Window { file, .. } => self.files[file].direct,
            Fill::Packed => false,
        })
    }

    fn stage(&self, k: usize) -> Result<&Stage> {
        self.stages.get(k).ok_or_else(|| Error::usage(format!("stage {k} of a plan of {}", self.stages.len())))
    }

    /// Fill `buffer` (of at least [`StagePlan::chunk`] bytes) with stage `k`, its parts on
    /// rayon's threads: after it, each piece's bytes are at its `at`. (A [`StagePipeline`]
    /// fills stage after stage on threads of its own, with no join between them.)
    pub fn fill(&self, k: usize, buffer: &mut [u8]) -> Result<()> {
        self.stage(k)?;
        if buffer.len() < self.chunk {
            return Err(Error::usage(format!("a buffer of {} bytes for stages of {}", buffer.len(), self.chunk)));
        }
        let aligned = buffer.as_ptr() as usize % ALIGN == 0;
        let extent = self.extent(k);
        buffer[..extent]
            .par_chunks_mut(self.part)
            .enumerate()
            .try_for_each(|(part, dst)| self.fill_part(k, part * self.part, dst, aligned))?;
        self.stage_filled(k);
        Ok(())
    }

    /// Bytes of stage `k`'s buffer that its fill writes (from the start): a window's length
    /// rounded up to whole blocks (its tail may read on), a packed stage's pieces.
    fn extent(&self, k: usize) -> usize {
        let stage = &self.stages[k];
        match stage.fill {
            // A window's length is at most the chunk, a multiple of the block.
            Fill::Window { len, .. } => (len as usize).next_multiple_of(ALIGN),
            Fill::Packed => stage.pieces.last().map_or(0, |p| (p.at + p.len) as usize),
        }
    }

    /// Parts of stage `k`: each [`SUB`] bytes of its extent (the last fewer), filled by one
    /// thread at a time.
    fn parts(&self, k: usize) -> usize {
        self.extent(k).div_ceil(self.part)
    }

    /// Where part `part` of stage `k` lies in its buffer: its start and length.
    fn part_span(&self, k: usize, part: usize) -> (usize, usize) {
        let start = part * self.part;
        (start, (self.extent(k) - start).min(self.part))
    }

    /// Fill the part of stage `k` that starts `start` bytes into its buffer: `dst` is the
    /// buffer's bytes there ([`StagePlan::part_span`]); `aligned` whether the buffer starts on
    /// a block (so that a direct read can land in it).
    fn fill_part(&self, k: usize, start: usize, dst: &mut [u8], aligned: bool) -> Result<()> {
        let stage = &self.stages[k];
        match stage.fill {
            Fill::Window { file, offset, len } => {
                let file = &self.files[file];
                let (buffered, _) =
                    self.tensors[file.tensor].ready().and_then(Bytes::mapped_file).expect("window files are mapped");
                let direct = if file.direct && aligned {
                    file.opened.get_or_init(|| direct::reopen_direct(buffered)).as_ref()
                } else {
                    None
                };
                // A part starts on a block within the window's length rounded up, so at or
                // before its end.
                let want = (len as usize).saturating_sub(start).min(dst.len());
                direct::read_into(direct, buffered, offset + start as u64, dst, want)?;
            }
            Fill::Packed => {
                let (from, to) = (start as u64, (start + dst.len()) as u64);
                // Pieces lie one after another from the buffer's start.
                let first = stage.pieces.partition_point(|p| p.at + p.len <= from);
                for p in stage.pieces[first..].iter().take_while(|p| p.at < to) {
                    let (a, b) = (p.at.max(from), (p.at + p.len).min(to));
                    let bytes = self.tensors[p.tensor].bytes(p.tensor)?;
                    let src = &bytes[(p.offset + a - p.at) as usize..(p.offset + b - p.at) as usize];
                    dst[(a - from) as usize..(b - from) as usize].copy_from_slice(src);
                }
            }
        }
        Ok(())
    }

    /// The plan with parts of `len` bytes (a multiple of the block): more parts to a stage.
    #[cfg(test)]
    fn with_part(mut self, len: usize) -> StagePlan {
        assert!(len % ALIGN == 0 && len > 0);
        self.part = len;
        self
    }

    /// Every part of stage `k` is filled: a tensor decoded for it is dropped after its last.
    fn stage_filled(&self, k: usize) {
        for p in &self.stages[k].pieces {
            self.tensors[p.tensor].stage_done();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn pattern(len: usize, seed: u32) -> Vec<u8> {
        (0..len as u32).map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 13) as u8).collect()
    }

    /// How the tests fill the stages.
    #[derive(Clone, Copy, Debug)]
    enum Filling {
        /// `StagePlan::fill`, one stage after another into one reused buffer (dirtied between).
        OneByOne,
        /// A `StagePipeline` of `threads` threads over `buffers` buffers.
        Pipeline { buffers: usize, threads: usize },
    }

    const FILLINGS: [Filling; 4] = [
        Filling::OneByOne,
        Filling::Pipeline { buffers: 1, threads: 1 },
        Filling::Pipeline { buffers: 2, threads: 3 },
        Filling::Pipeline { buffers: 3, threads: 8 },
    ];

    /// Copy stage `k`'s pieces out of `buffer` into `out`.
    fn copy_out(plan: &StagePlan, k: usize, buffer: &[u8], out: &mut [Vec<u8>]) {
        for p in plan.pieces(k).unwrap() {
            let (o, at, n) = (p.offset as usize, p.at as usize, p.len as usize);
            assert!(at + n <= plan.chunk(), "a piece past the buffer");
            out[p.tensor][o..o + n].copy_from_slice(&buffer[at..at + n]);
        }
    }

    /// Every tensor's bytes, put together from the stages as `filling` fills them.
    fn through_stages(plan: &Arc<StagePlan>, sizes: &[usize], filling: Filling) -> Result<Vec<Vec<u8>>> {
        let mut out: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
        match filling {
            Filling::OneByOne => {
                let staged = Arc::new(StageBuffer::new(plan.chunk()).unwrap());
                assert_eq!(staged.address() % ALIGN, 0);
                let mut held = staged.hold().unwrap();
                let buffer = held.bytes_mut();
                for k in 0..plan.len() {
                    buffer.fill(0xA5);
                    plan.fill(k, buffer)?;
                    copy_out(plan, k, buffer, &mut out);
                }
            }
            Filling::Pipeline { buffers, threads } => {
                let buffers: Vec<Arc<StageBuffer>> =
                    (0..buffers).map(|_| Arc::new(StageBuffer::new(plan.chunk()).unwrap())).collect();
                let pipeline = StagePipeline::start(plan.clone(), buffers.clone(), threads)?;
                // Held by the pipeline: no one else may write them.
                assert!(buffers[0].hold().is_err());
                buffers.iter().for_each(|_| pipeline.release());
                for k in 0..plan.len() {
                    let filled = pipeline.wait(k)?;
                    assert_eq!(filled.index(), k % buffers.len());
                    copy_out(plan, k, filled.bytes(), &mut out);
                    drop(filled);
                    pipeline.release();
                }
                drop(pipeline);
                // Let go once stopped.
                drop(buffers[0].hold().unwrap());
            }
        }
        Ok(out)
    }

    #[test]
    fn windows_and_packed_stages_carry_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = pattern(3 * MIN_CHUNK + 5000, 7);
        std::fs::write(&path, &file).unwrap();
        let map = Bytes::map_file(&path).unwrap();
        // Mapped tensors with gaps, one larger than a chunk, one out of order, an empty one,
        // and tensors in memory between them.
        let spans = [(10, 100), (200, MIN_CHUNK + 17), (MIN_CHUNK + 300, 0), (150, 40), (2 * MIN_CHUNK, 9000)];
        let owned = [pattern(MIN_CHUNK * 2 + 3, 1), pattern(5, 2)];
        for direct in [Direct::Never, Direct::Always, Direct::Auto] {
            let mut tensors = Vec::new();
            let mut want = Vec::new();
            for (k, &(at, n)) in spans.iter().enumerate() {
                tensors.push(map.slice(at as u64, n as u64).unwrap());
                want.push(file[at..at + n].to_vec());
                if k < owned.len() {
                    tensors.push(Bytes::from_vec(owned[k].clone()));
                    want.push(owned[k].clone());
                }
            }
            let sizes: Vec<usize> = want.iter().map(Vec::len).collect();
            // Parts of a block: four to a stage.
            let plan = Arc::new(StagePlan::new(tensors, MIN_CHUNK, direct).unwrap().with_part(ALIGN));
            for filling in FILLINGS {
                assert_eq!(through_stages(&plan, &sizes, filling).unwrap(), want, "{direct:?}, {filling:?}");
            }
            // Where the filesystem takes direct I/O, the windows were read with it.
            let can = direct::reopen_direct(&File::open(&path).unwrap()).is_some();
            let used = plan.files.iter().all(|f| f.opened.get().is_some_and(Option::is_some));
            assert_eq!(used, can && direct == Direct::Always, "{direct:?}");
            let windows = (0..plan.len()).filter(|&k| matches!(plan.stages[k].fill, Fill::Window { .. })).count();
            assert!(windows >= 3 && windows < plan.len(), "{direct:?}: {windows} windows of {}", plan.len());
        }
    }

    #[test]
    fn tensors_read_later_are_decoded_once_held_while_needed_and_dropped() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        // Three tensors to decode (one over two chunks, one small, one empty) between ready ones.
        let sizes = [MIN_CHUNK * 2 + 100, 3000, 0, 700];
        let data: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| pattern(n, i as u32 + 40)).collect();
        let reads = Arc::new(AtomicUsize::new(0));
        let later = |i: usize| {
            let (bytes, reads) = (data[i].clone(), reads.clone());
            StageTensor::later(
                bytes.len() as u64,
                Box::new(move || {
                    reads.fetch_add(1, Ordering::SeqCst);
                    Ok(Bytes::from_vec(bytes.clone()))
                }),
            )
        };
        let tensors = vec![later(0), StageTensor::Ready(Bytes::from_vec(data[1].clone())), later(2), later(3)];
        let plan = StagePlan::with_later(tensors, MIN_CHUNK, Direct::Never).unwrap();
        // Before any stage is filled nothing is decoded; as the stages go by, the tensor over
        // three stages is held between them and dropped after its last.
        assert_eq!(reads.load(Ordering::SeqCst), 0);
        let held = |i: usize| match &plan.tensors[i] {
            StageTensor::Later(d) => d.held.lock().unwrap().is_some(),
            StageTensor::Ready(_) => false,
        };
        let mut out: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
        let mut buffer = vec![0u8; plan.chunk()];
        for k in 0..plan.len() {
            plan.fill(k, &mut buffer).unwrap();
            for p in plan.pieces(k).unwrap() {
                let (o, at, n) = (p.offset as usize, p.at as usize, p.len as usize);
                out[p.tensor][o..o + n].copy_from_slice(&buffer[at..at + n]);
            }
            let last_of_0 = plan.pieces(k).unwrap().iter().any(|p| p.tensor == 0 && p.offset + p.len == sizes[0] as u64);
            assert_eq!(held(0), !last_of_0 && k < 2, "stage {k}");
        }
        assert_eq!(out, data);
        // The empty tensor is never read; the others once each.
        assert_eq!(reads.load(Ordering::SeqCst), 2);
        assert!(!held(0) && !held(3));
        // A tensor decoding to another length than planned, or failing, fails the fill.
        let short = StageTensor::later(10, Box::new(|| Ok(Bytes::from_vec(vec![1; 9]))));
        let plan = StagePlan::with_later(vec![short], MIN_CHUNK, Direct::Never).unwrap();
        assert_eq!(plan.fill(0, &mut buffer).unwrap_err().rule(), Some(crate::error::Rule::SizeMismatch));
        let broken = StageTensor::later(10, Box::new(|| Err(Error::usage("cannot"))));
        let plan = StagePlan::with_later(vec![broken], MIN_CHUNK, Direct::Never).unwrap();
        assert!(plan.fill(0, &mut buffer).unwrap_err().to_string().contains("cannot"));
    }

    #[test]
    fn tensors_that_follow_share_a_window() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, pattern(1 << 20, 3)).unwrap();
        let map = Bytes::map_file(&path).unwrap();
        let tensors: Vec<Bytes> = (0..8).map(|i| map.slice(100 + i * 1000, 1000).unwrap()).collect();
        let plan = StagePlan::new(tensors, 1 << 20, Direct::Never).unwrap();
        assert_eq!(plan.len(), 1);
        let pieces = plan.pieces(0).unwrap();
        assert_eq!(pieces.iter().map(|p| p.at).collect::<Vec<_>>(), (0..8).map(|i| 100 + i * 1000).collect::<Vec<_>>());
        // Far apart (past the gap a window reads through): a window each.
        std::fs::write(dir.path().join("g"), vec![0u8; 3 << 20]).unwrap();
        let big = Bytes::map_file(&dir.path().join("g")).unwrap();
        let far = vec![big.slice(0, 1).unwrap(), big.slice(1, 1).unwrap(), big.slice(2 << 20, 1).unwrap()];
        assert_eq!(StagePlan::new(far, 4 << 20, Direct::Never).unwrap().len(), 2);
    }

    #[test]
    fn refuses_chunks_it_cannot_align_and_small_buffers() {
        assert!(StagePlan::new(Vec::new(), MIN_CHUNK + 1, Direct::Never).is_err());
        assert!(StagePlan::new(Vec::new(), ALIGN, Direct::Never).is_err());
        let plan = StagePlan::new(vec![Bytes::from_vec(vec![1; 10])], MIN_CHUNK, Direct::Never).unwrap();
        assert!(plan.fill(0, &mut [0u8; 100]).is_err());
        assert!(plan.fill(1, &mut vec![0u8; MIN_CHUNK]).is_err());
    }
}
