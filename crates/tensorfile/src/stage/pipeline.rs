//! Filling stage after stage on threads of the pipeline's own, with no join between stages.
//!
//! Each thread takes the next part of the next stage (a window's next 2 MiB, a packed stage's
//! next 2 MiB of pieces), fills it, and takes the next: the parts of one stage are filled on
//! every thread at once, and a thread that ends its part of stage `k` goes on with
//! stage `k + 1` while the others end theirs (no fork-join per stage, nothing between the
//! stages for an interpreter to run). Stage `k` goes into buffer `k % buffers`; it may be filled
//! once the caller has let go `k + 1` times ([`StagePipeline::release`]: once per buffer to
//! start, each time it is ready, then once per stage whose copies out of its buffer are done,
//! in order). The caller waits for the stages in order ([`StagePipeline::wait`]) and copies
//! each out.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::{ALIGN, StageBuffer, StagePlan};
use crate::error::{Error, Result};

/// Threads filling the stages of a plan into a ring of buffers, ahead of a caller that copies
/// them out; stopped (its threads joined, its buffers let go) when dropped.
pub struct StagePipeline {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    plan: Arc<StagePlan>,
    buffers: Vec<Arc<StageBuffer>>,
    aligned: bool,
    state: Mutex<State>,
    /// Notified when a stage may be filled, or the pipeline stops.
    work: Condvar,
    /// Notified when a stage is filled, or a fill fails.
    filled: Condvar,
}

struct State {
    /// Stages that may be filled: the releases so far.
    allowed: usize,
    /// The next stage and part to hand to a thread.
    next_stage: usize,
    next_part: usize,
    /// Parts of each stage not yet filled.
    left: Vec<usize>,
    /// The stage each buffer was last given to fill.
    in_buffer: Vec<Option<usize>>,
    /// Each buffer's stage as read through a [`Filled`] now: none is filled again until 0.
    reading: Vec<usize>,
    /// The first failure, until a waiting caller takes it.
    error: Option<Error>,
    failed: bool,
    stopped: bool,
}

impl StagePipeline {
    /// Start `threads` threads (at least one) filling `plan`'s stages into `buffers` (at least
    /// one, each of at least the plan's chunk), which the pipeline holds until dropped. No
    /// stage is filled before the first [`StagePipeline::release`].
    pub fn start(plan: Arc<StagePlan>, buffers: Vec<Arc<StageBuffer>>, threads: usize) -> Result<StagePipeline> {
        if buffers.is_empty() || threads == 0 {
            return Err(Error::usage("a staging pipeline needs at least one buffer and one thread"));
        }
        if let Some(small) = buffers.iter().find(|b| b.len() < plan.chunk()) {
            return Err(Error::usage(format!("a buffer of {} bytes for stages of {}", small.len(), plan.chunk())));
        }
        for (n, b) in buffers.iter().enumerate() {
            if let Err(e) = b.take() {
                buffers[..n].iter().for_each(|b| b.give_back());
                return Err(e);
            }
        }
        let left = (0..plan.len()).map(|k| plan.parts(k)).collect();
        let aligned = buffers.iter().all(|b| b.address() % ALIGN == 0);
        let n = buffers.len();
        let state = State {
            allowed: 0,
            next_stage: 0,
            next_part: 0,
            left,
            in_buffer: vec![None; n],
            reading: vec![0; n],
            error: None,
            failed: false,
            stopped: false,
        };
        let shared =
            Arc::new(Shared { plan, buffers, aligned, state: Mutex::new(state), work: Condvar::new(), filled: Condvar::new() });
        let pipeline = StagePipeline { shared, threads: Mutex::new(Vec::with_capacity(threads)) };
        for n in 0..threads {
            let shared = pipeline.shared.clone();
            let spawned = std::thread::Builder::new().name(format!("tensorfile-fill-{n}")).spawn(move || shared.fill());
            match spawned {
                Ok(handle) => pipeline.threads.lock().unwrap_or_else(PoisonError::into_inner).push(handle),
                // Dropping the pipeline stops and joins the threads started.
                Err(e) => return Err(e.into()),
            }
        }
        Ok(pipeline)
    }

    /// Stages in the plan.
    pub fn len(&self) -> usize {
        self.shared.plan.len()
    }

    /// Whether the plan has no stages.
    pub fn is_empty(&self) -> bool {
        self.shared.plan.is_empty()
    }

    /// Let one more stage be filled: call it once per buffer to start (each when the buffer
    /// is ready: registered with a driver, say), then once after the copies out of each stage
    /// are done, in the stages' order.
    pub fn release(&self) {
        self.shared.lock().allowed += 1;
        self.shared.work.notify_all();
    }

    /// Wait until stage `k` is filled: its bytes, and which buffer holds them. No stage is
    /// filled into that buffer while the result lives (a caller that copies out by the
    /// buffer's address, asynchronously, keeps it from being filled again by releasing only
    /// once its copies are done). The first failure of any stage is returned to the first
    /// caller that waits after it; later waits say that the pipeline stopped.
    pub fn wait(&self, k: usize) -> Result<Filled<'_>> {
        let shared = &*self.shared;
        if k >= shared.plan.len() {
            return Err(Error::usage(format!("stage {k} of a plan of {}", shared.plan.len())));
        }
        let index = k % shared.buffers.len();
        let mut state = shared.lock();
        loop {
            if state.failed {
                return Err(state.error.take().unwrap_or_else(|| Error::usage("the staging pipeline stopped at a failure")));
            }
            if state.left[k] == 0 {
                // Handed out and filled (or nothing to fill); still in its buffer unless a
                // later stage was given that buffer.
                if state.in_buffer[index].is_some_and(|s| s > k) {
                    return Err(Error::usage(format!(
                        "stage {k} was waited for after its buffer was given to stage {}",
                        k + shared.buffers.len()
                    )));
                }
                state.reading[index] += 1;
                let len = if state.in_buffer[index] == Some(k) { shared.plan.extent(k) } else { 0 };
                return Ok(Filled { shared, index, len });
            }
            if state.stopped {
                return Err(Error::usage("the staging pipeline was stopped"));
            }
            state = shared.filled.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Stop: no part is begun after this, and the threads are joined (a part under way ends
    /// first). Waits after it fail.
    pub fn stop(&self) {
        self.shared.lock().stopped = true;
        self.shared.work.notify_all();
        self.shared.filled.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for handle in threads {
            // A thread that panicked has nothing more to say than its failure, which its
            // stage's waiter hears as a stop.
            let _ = handle.join();
        }
    }
}

impl Drop for StagePipeline {
    fn drop(&mut self) {
        self.stop();
        for b in &self.shared.buffers {
            b.give_back();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One thread's work: the next part, until every stage is handed out or the pipeline
    /// stops or fails.
    fn fill(&self) {
        let stages = self.plan.len();
        loop {
            let (k, part) = {
                let mut state = self.lock();
                loop {
                    // Stages with nothing to fill are filled already.
                    while state.next_stage < stages && state.left[state.next_stage] == 0 && state.next_part == 0 {
                        state.next_stage += 1;
                    }
                    if state.stopped || state.failed || state.next_stage >= stages {
                        return;
                    }
                    let index = state.next_stage % self.buffers.len();
                    if state.next_stage < state.allowed && (state.next_part > 0 || state.reading[index] == 0) {
                        if state.next_part == 0 {
                            state.in_buffer[index] = Some(state.next_stage);
                        }
                        break;
                    }
                    state = self.work.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
                let taken = (state.next_stage, state.next_part);
                state.next_part += 1;
                if state.next_part == self.plan.parts(taken.0) {
                    (state.next_stage, state.next_part) = (taken.0 + 1, 0);
                }
                taken
            };
            let buffer = &self.buffers[k % self.buffers.len()];
            let (start, len) = self.plan.part_span(k, part);
            // SAFETY: the pipeline holds every buffer (taken in `start`, let go after the
            // threads are joined); part `part` of stage `k` is handed to this thread alone,
            // parts of one stage do not overlap, and a stage in the same buffer is handed out
            // only after the caller has released this one's copies (after `wait` saw all its
            // parts filled) and no `Filled` of it lives; the extent is within the chunk, which
            // every buffer holds.
            let dst = unsafe { buffer.part(start, len) };
            let result = self.plan.fill_part(k, start, dst, self.aligned);
            let mut state = self.lock();
            match result {
                Ok(()) => {
                    state.left[k] -= 1;
                    if state.left[k] == 0 {
                        drop(state);
                        self.plan.stage_filled(k);
                        self.filled.notify_all();
                    }
                }
                Err(e) => {
                    if !state.failed {
                        state.failed = true;
                        state.error = Some(e);
                    }
                    drop(state);
                    self.work.notify_all();
                    self.filled.notify_all();
                    return;
                }
            }
        }
    }
}

/// A filled stage, as [`StagePipeline::wait`] gives it: its bytes, which no one writes while
/// this lives.
pub struct Filled<'a> {
    shared: &'a Shared,
    index: usize,
    len: usize,
}

impl Filled<'_> {
    /// Which of the pipeline's buffers holds the stage.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The stage's bytes: its pieces lie at their `at`.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the buffer holds this stage, every part of it filled (seen under the state's
        // lock, after the threads that wrote them took it), and while this lives no thread
        // is given a stage in this buffer (`reading` is above 0); the length is the stage's
        // extent, within the chunk the buffer holds. The slice borrows `self`.
        unsafe { self.shared.buffers[self.index].filled(self.len) }
    }
}

impl std::fmt::Debug for Filled<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filled").field("index", &self.index).field("len", &self.len).finish()
    }
}

impl Drop for Filled<'_> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.reading[self.index] -= 1;
        if state.reading[self.index] == 0 {
            drop(state);
            self.shared.work.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::super::{MIN_CHUNK, StageTensor};
    use super::*;
    use crate::source::Bytes;

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    /// Tensors of `sizes` in memory, each decoded later (counted in `reads`) where `later`
    /// says, failing where `fails` says.
    fn plan_of(data: &[Vec<u8>], later: bool, fails: Option<usize>, reads: &Arc<AtomicUsize>) -> Arc<StagePlan> {
        let tensors = data
            .iter()
            .enumerate()
            .map(|(i, d)| {
                if !later {
                    return StageTensor::Ready(Bytes::from_vec(d.clone()));
                }
                let (d, reads) = (d.clone(), reads.clone());
                StageTensor::later(
                    d.len() as u64,
                    Box::new(move || {
                        reads.fetch_add(1, Ordering::SeqCst);
                        if fails == Some(i) {
                            return Err(Error::usage(format!("tensor {i} cannot be decoded")));
                        }
                        Ok(Bytes::from_vec(d.clone()))
                    }),
                )
            })
            .collect();
        Arc::new(StagePlan::with_later(tensors, MIN_CHUNK, super::super::Direct::Never).unwrap().with_part(ALIGN))
    }

    fn buffers(n: usize) -> Vec<Arc<StageBuffer>> {
        (0..n).map(|_| Arc::new(StageBuffer::new(MIN_CHUNK).unwrap())).collect()
    }

    #[test]
    fn tensors_decoded_later_are_decoded_once_each_on_many_threads() {
        let data: Vec<Vec<u8>> = [MIN_CHUNK * 3 + 5, 10, 0, MIN_CHUNK - 1, 4096].iter().map(|&n| pattern(n, n as u8)).collect();
        let reads = Arc::new(AtomicUsize::new(0));
        let plan = plan_of(&data, true, None, &reads);
        let pipeline = StagePipeline::start(plan.clone(), buffers(2), 6).unwrap();
        (0..2).for_each(|_| pipeline.release());
        let mut out: Vec<Vec<u8>> = data.iter().map(|d| vec![0; d.len()]).collect();
        for k in 0..plan.len() {
            let filled = pipeline.wait(k).unwrap();
            for p in plan.pieces(k).unwrap() {
                let (o, at, n) = (p.offset as usize, p.at as usize, p.len as usize);
                out[p.tensor][o..o + n].copy_from_slice(&filled.bytes()[at..at + n]);
            }
            drop(filled);
            pipeline.release();
        }
        assert_eq!(out, data);
        // Every tensor with bytes decoded once, whatever thread came first; none held after.
        assert_eq!(reads.load(Ordering::SeqCst), 4);
        for t in &plan.tensors {
            if let StageTensor::Later(d) = t {
                assert!(d.held.lock().unwrap().is_none());
            }
        }
    }

    #[test]
    fn a_failure_mid_way_is_given_to_the_waiter_and_stops_every_thread() {
        let data: Vec<Vec<u8>> = (0..12).map(|i| pattern(MIN_CHUNK / 2, i)).collect();
        let reads = Arc::new(AtomicUsize::new(0));
        let plan = plan_of(&data, true, Some(7), &reads);
        let held = buffers(3);
        let pipeline = StagePipeline::start(plan.clone(), held.clone(), 4).unwrap();
        (0..3).for_each(|_| pipeline.release());
        let mut failed = None;
        for k in 0..plan.len() {
            match pipeline.wait(k) {
                Ok(filled) => {
                    assert!(k < 3, "stage {k} (tensor 7's) or after filled");
                    drop(filled);
                    pipeline.release();
                }
                Err(e) => {
                    failed = Some((k, e));
                    break;
                }
            }
        }
        let (k, e) = failed.expect("the failure reaches the waiter");
        assert!(k <= 3 && e.to_string().contains("tensor 7 cannot be decoded"), "stage {k}: {e}");
        // Later waits say that it stopped; the threads end and the buffers are let go.
        assert!(pipeline.wait(plan.len() - 1).unwrap_err().to_string().contains("stopped"));
        drop(pipeline);
        assert!(held.iter().all(|b| b.hold().is_ok()));
    }

    #[test]
    fn a_stage_read_is_not_filled_over_and_stopping_joins_the_threads() {
        let data: Vec<Vec<u8>> = (0..6).map(|i| pattern(MIN_CHUNK, i)).collect();
        let plan = plan_of(&data, false, None, &Arc::new(AtomicUsize::new(0)));
        let held = buffers(1);
        let pipeline = StagePipeline::start(plan.clone(), held.clone(), 4).unwrap();
        // Nothing is filled before a release.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(pipeline.shared.lock().left[0], plan.parts(0));
        pipeline.release();
        let filled = pipeline.wait(0).unwrap();
        // Released early while stage 0 is still read: stage 1 waits for the read to end.
        pipeline.release();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(filled.bytes(), &data[0][..]);
        assert_eq!(pipeline.shared.lock().left[1], plan.parts(1));
        drop(filled);
        assert_eq!(pipeline.wait(1).unwrap().bytes(), &data[1][..]);
        // Stage 0's buffer went to stage 1: waiting for it now is refused, not a wrong read.
        assert!(pipeline.wait(0).unwrap_err().to_string().contains("buffer was given to stage 1"));
        // Stopped mid-way (stage 2 never released): the threads end at once, waits fail.
        let start = Instant::now();
        pipeline.stop();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(pipeline.wait(2).unwrap_err().to_string().contains("stopped"));
        // A buffer held by a pipeline cannot be given to another.
        let other = StagePipeline::start(plan.clone(), held.clone(), 1);
        assert!(other.is_err(), "a buffer filled by two pipelines");
        drop(pipeline);
        assert!(StagePipeline::start(plan, held, 1).is_ok());
    }
}
