//! Reading ahead of a consumer: items read on a few threads, a bounded number of bytes ahead,
//! handed over in order. What keeps a network busy across tensor boundaries: fetched one
//! after another, every tensor would end with its last request alone in flight, and every
//! small tensor would cost a round trip of its own.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};

/// How far ahead reading goes: items are read on up to `threads` threads while the bytes of
/// those read (or being read) and not yet handed over stay within `window`. One item larger
/// than the window is still read, alone.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ahead {
    pub threads: usize,
    pub window: u64,
}

struct State<T> {
    /// The next item no thread has taken.
    next: usize,
    /// Bytes taken by a thread and not yet handed over.
    ahead: u64,
    ready: BTreeMap<usize, T>,
    /// The consumer stopped (its error), or a reading thread panicked.
    stop: bool,
    panicked: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State<T>>) -> MutexGuard<'a, State<T>> {
        self.changed.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Marks the state when a reading thread unwinds, so that the consumer does not wait for an
/// item that will never come.
struct PanicGuard<'a, T>(&'a Shared<T>);

impl<T> Drop for PanicGuard<'_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().panicked = true;
            self.0.changed.notify_all();
        }
    }
}

/// `read(k)` for every `k` in `0..count`, handed to `consume` in order of `k`; stops at the
/// first error `consume` returns (items being read are finished and dropped). `size(k)` is
/// what item `k` holds in memory once read.
pub(crate) fn read_in_order<T: Send>(
    count: usize,
    ahead: Ahead,
    size: &(dyn Fn(usize) -> u64 + Sync),
    read: &(dyn Fn(usize) -> T + Sync),
    consume: &mut dyn FnMut(usize, T) -> Result<()>,
) -> Result<()> {
    let shared = Shared {
        state: Mutex::new(State { next: 0, ahead: 0, ready: BTreeMap::new(), stop: false, panicked: false }),
        changed: Condvar::new(),
    };
    let reader = || {
        let _guard = PanicGuard(&shared);
        loop {
            let k = {
                let mut state = shared.lock();
                loop {
                    if state.stop || state.next >= count {
                        return;
                    }
                    let bytes = size(state.next);
                    if state.ahead == 0 || state.ahead.saturating_add(bytes) <= ahead.window {
                        state.ahead = state.ahead.saturating_add(bytes);
                        state.next += 1;
                        break state.next - 1;
                    }
                    state = shared.wait(state);
                }
            };
            let item = read(k);
            shared.lock().ready.insert(k, item);
            shared.changed.notify_all();
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..ahead.threads.clamp(1, count.max(1)) {
            scope.spawn(reader);
        }
        let consumed = (0..count).try_for_each(|k| {
            let item = {
                let mut state = shared.lock();
                loop {
                    if let Some(item) = state.ready.remove(&k) {
                        state.ahead = state.ahead.saturating_sub(size(k));
                        break item;
                    }
                    if state.panicked {
                        return Err(Error::unsupported("a reading thread stopped unexpectedly"));
                    }
                    state = shared.wait(state);
                }
            };
            shared.changed.notify_all();
            consume(k, item)
        });
        shared.lock().stop = true;
        shared.changed.notify_all();
        consumed
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn items_arrive_in_order_and_reading_stays_within_the_window() {
        let sizes = [5u64, 1, 1, 30, 2, 2, 2, 9, 1, 1, 1, 1];
        let window = 10;
        let started = Mutex::new(vec![false; sizes.len()]);
        let mut seen = Vec::new();
        let mut went_ahead = false;
        read_in_order(
            sizes.len(),
            Ahead { threads: 4, window },
            &|k| sizes[k],
            &|k| {
                started.lock().unwrap()[k] = true;
                // Later items finish first: order comes from the handing over.
                std::thread::sleep(std::time::Duration::from_millis(20 - k as u64));
                k * 10
            },
            &mut |k, item| {
                // The consumer is slow: readers go as far ahead as the window lets them.
                std::thread::sleep(std::time::Duration::from_millis(30));
                // Nothing is handed over while the consumer works, so what has started beyond
                // item k is all the readers have taken: within the window, or one item alone.
                let beyond: Vec<usize> = (k + 1..sizes.len()).filter(|&j| started.lock().unwrap()[j]).collect();
                let bytes: u64 = beyond.iter().map(|&j| sizes[j]).sum();
                assert!(bytes <= window || beyond.len() == 1, "at item {k}: {beyond:?} started, {bytes} bytes");
                went_ahead |= !beyond.is_empty();
                seen.push((k, item));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..sizes.len()).map(|k| (k, k * 10)).collect::<Vec<_>>());
        assert!(went_ahead, "items are read while the consumer works");
    }

    #[test]
    fn the_consumers_error_stops_reading() {
        let read = AtomicU64::new(0);
        let ahead = Ahead { threads: 2, window: 3 };
        let got = read_in_order(
            1000,
            ahead,
            &|_| 1,
            &|k| {
                read.fetch_add(1, Ordering::SeqCst);
                k
            },
            &mut |k, _| if k == 5 { Err(Error::usage("enough")) } else { Ok(()) },
        );
        assert!(got.unwrap_err().to_string().contains("enough"));
        // At most the window (plus what was being read) beyond the failing item.
        assert!(read.load(Ordering::SeqCst) <= 6 + 3 + 2, "{}", read.load(Ordering::SeqCst));
    }

    #[test]
    fn a_panicking_reader_is_an_error_not_a_hang() {
        let got = std::panic::catch_unwind(|| {
            read_in_order(
                4,
                Ahead { threads: 2, window: 100 },
                &|_| 1,
                &|k| if k == 2 { panic!("broken reader") } else { k },
                &mut |_, _| Ok(()),
            )
        });
        // The scope re-raises the thread's panic once the consumer has returned.
        assert!(got.is_err());
    }
}
