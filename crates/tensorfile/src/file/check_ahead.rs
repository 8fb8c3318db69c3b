//! Checking stored checksums ahead of a caller that reads a file's entries in order.
//!
//! With [`super::Verify`] on, every read of an entry checks its checksum first: a pass over its
//! bytes on the caller's thread (zTensor 2's XXH3 at about 6 GB/s from memory here) before
//! the caller's own use of them. A caller that goes through the file in order (`for name in
//! f`) would pay that pass on one core while the others idle. Once a read follows the one
//! before it (or is of the first entry), the entries after it are read and checked on the
//! library's thread pool, up to [`WINDOW_BYTES`] of entries checked and not yet taken; a read
//! of one of them takes its result, waits for it if its check has started, and reads it
//! itself if not (so that callers on the pool's own threads never wait for a check queued
//! behind them). Reads out of order check what they read themselves, as before.
//!
//! Nothing unchecked is ever handed over: a result made ahead is the reader's own
//! `read(index, true)`, a failed check included (the caller gets that error, as it would
//! have got it reading). A check that panics leaves its entry to be read by the caller.
//! When the file is dropped ([`Checks`]), checks not started are dropped and those under way
//! waited for: nothing reads the file's map once its holder is gone (someone may then
//! truncate the file, and a map read past a file's end is a fatal signal).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::error::Result;
use crate::formats::FormatReader;
use crate::model::TensorData;

/// Bytes of entries checked (or being checked) ahead and not yet taken, at most; one entry
/// larger than this is still checked ahead, alone.
pub(crate) const WINDOW_BYTES: u64 = 256 << 20;

enum Slot {
    /// Spawned, not started: a caller asking for it reads it itself (the pool's threads may
    /// all be callers waiting, as in a parallel load, and the check would never start).
    Queued,
    /// Started: a caller asking for it waits for it.
    Running,
    Done(Result<TensorData>),
    /// The check panicked: the caller reads the entry itself.
    Failed,
}

#[derive(Default)]
struct State {
    slots: HashMap<usize, Slot>,
    /// The entry the caller read last.
    last: Option<usize>,
    /// Every entry before this one has been scheduled (or was read by the caller).
    scheduled_to: usize,
    /// Bytes of the entries in `slots`.
    ahead: u64,
    /// Checks reading now.
    running: usize,
    /// The file was dropped: checks not started never will.
    stopped: bool,
}

/// The checks of one opened file: stopped when it is dropped ([`CheckAhead::stop`]).
pub(crate) struct Checks(pub(crate) Arc<CheckAhead>);

impl Checks {
    /// For a file of `entries` entries; none where there is no other thread to check on.
    pub(crate) fn for_entries(entries: usize) -> Option<Checks> {
        if rayon::current_num_threads() < 2 || entries < 2 {
            return None;
        }
        Some(Checks(Arc::new(CheckAhead { state: Mutex::default(), changed: Condvar::new() })))
    }
}

impl Drop for Checks {
    fn drop(&mut self) {
        self.0.stop();
    }
}

pub(crate) struct CheckAhead {
    state: Mutex<State>,
    changed: Condvar,
}

impl CheckAhead {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Entry `index` read and checked by `reader`: taken from a check made ahead (waited for
    /// if under way), else read now; then the entries after it are scheduled when the
    /// caller reads in order.
    pub(crate) fn read(self: &Arc<Self>, reader: &Arc<dyn FormatReader>, index: usize) -> Result<TensorData> {
        let taken = {
            let mut state = self.lock();
            let in_order = match state.last {
                None => index == 0,
                Some(last) => last.checked_add(1) == Some(index),
            };
            state.last = Some(index);
            let taken = loop {
                match state.slots.remove(&index) {
                    Some(Slot::Running) => {
                        state.slots.insert(index, Slot::Running);
                        state = self.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
                    }
                    None => break None,
                    // Done is taken; Queued is claimed (its task finds it gone and does
                    // nothing) and Failed left, both read below.
                    Some(slot) => {
                        state.ahead = state.ahead.saturating_sub(size(reader, index));
                        break match slot {
                            Slot::Done(result) => Some(result),
                            _ => None,
                        };
                    }
                }
            };
            if in_order {
                self.schedule(&mut state, reader, index);
            }
            taken
        };
        taken.unwrap_or_else(|| reader.read(index, true))
    }

    /// Checks of the entries after `index`, on the pool, while the window allows.
    fn schedule(self: &Arc<Self>, state: &mut State, reader: &Arc<dyn FormatReader>, index: usize) {
        let mut next = state.scheduled_to.max(index.saturating_add(1));
        while next < reader.entries().len() {
            let size = size(reader, next);
            if state.ahead > 0 && state.ahead.saturating_add(size) > WINDOW_BYTES {
                break;
            }
            state.ahead = state.ahead.saturating_add(size);
            state.slots.insert(next, Slot::Queued);
            let (this, reader, k) = (Arc::clone(self), Arc::clone(reader), next);
            rayon::spawn(move || {
                {
                    let mut state = this.lock();
                    if state.stopped || !matches!(state.slots.get(&k), Some(Slot::Queued)) {
                        return;
                    }
                    state.slots.insert(k, Slot::Running);
                    state.running += 1;
                }
                // A panic in a task of the pool would end the process: caught, and the entry
                // left to the caller's own read.
                let result = std::panic::catch_unwind(AssertUnwindSafe(|| reader.read(k, true)));
                let mut state = this.lock();
                state.running -= 1;
                if !state.stopped {
                    state.slots.insert(k, result.map_or(Slot::Failed, Slot::Done));
                }
                drop(state);
                this.changed.notify_all();
            });
            next += 1;
        }
        state.scheduled_to = next;
    }

    /// No check starts from now on; returns once those under way have finished.
    fn stop(&self) {
        let mut state = self.lock();
        state.stopped = true;
        while state.running > 0 {
            state = self.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        state.slots.clear();
    }

    /// Entries checked ahead and not taken (a test's view).
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.lock().slots.values().filter(|s| matches!(s, Slot::Done(_) | Slot::Failed)).count()
    }
}

/// Entry `index`'s bytes, as counted against the window.
fn size(reader: &Arc<dyn FormatReader>, index: usize) -> u64 {
    reader.entries().get(index).map_or(0, |e| e.nbytes())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    use crate::file::{OpenOptions, Verify};

    fn fixture() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zt2/dtypes.zt")
    }

    /// Read in order with checksums on, the entries after the one read are checked on the
    /// pool before the caller asks for them; read out of order, nothing is checked ahead.
    #[test]
    fn reads_in_order_are_checked_ahead_and_reads_out_of_order_are_not() {
        let verified = OpenOptions::new().verify(Verify::Checksums).open(fixture()).unwrap();
        let Some(ahead) = verified.check_ahead.as_ref().map(|c| c.0.clone()) else {
            // One thread in the pool: nothing to check on (the caller checks as before).
            assert!(rayon::current_num_threads() < 2);
            return;
        };
        let plain = OpenOptions::new().open(fixture()).unwrap();
        let n = verified.entries().len();
        assert!(n > 10);
        verified.read_index(0).unwrap();
        let start = Instant::now();
        while ahead.waiting() < n - 1 && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(ahead.waiting(), n - 1, "every later entry (a small file) checked ahead");
        for i in 1..n {
            let (got, want) = (verified.read_index(i).unwrap(), plain.read_index(i).unwrap());
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "entry {i}");
        }
        assert_eq!(ahead.waiting(), 0, "each result taken once");

        let verified = OpenOptions::new().verify(Verify::Checksums).open(fixture()).unwrap();
        let ahead = verified.check_ahead.as_ref().unwrap().0.clone();
        verified.read_index(5).unwrap();
        verified.read_index(2).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(ahead.waiting(), 0, "nothing checked ahead of reads out of order");
    }

    /// Callers on the pool's own threads (a parallel load) never wait for a check queued
    /// behind them: a file read in order from the only thread of a pool (its checks queued
    /// on that same thread), and every entry read at once from a pool of two, complete.
    #[test]
    fn reads_from_the_pools_own_threads_never_wait_for_a_queued_check() {
        use rayon::prelude::*;
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            for _ in 0..50 {
                let verified = OpenOptions::new().verify(Verify::Checksums).open(fixture()).unwrap();
                let n = verified.entries().len();
                one.install(|| (0..n).for_each(|i| drop(verified.read_index(i).unwrap())));
                let verified = OpenOptions::new().verify(Verify::Checksums).open(fixture()).unwrap();
                two.install(|| (0..n).into_par_iter().for_each(|i| drop(verified.read_index(i).unwrap())));
            }
            let _ = done.send(());
        });
        assert!(finished.recv_timeout(Duration::from_secs(120)).is_ok(), "verified reads on the pool never finished");
    }
}
