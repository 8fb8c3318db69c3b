//! How many threads the library's parallel work uses (reading, converting, quantizing,
//! statistics): every core by default, or `RAYON_NUM_THREADS`, or what [`set_threads`] says.

use crate::error::{Error, Result};

/// Use `n` threads (at least one) for the library's parallel work, for the rest of the
/// process. Call it before any other work of the library: once that has started its threads
/// the count is fixed, and this errors saying so.
pub fn set_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::usage("the number of threads is at least 1"));
    }
    rayon::ThreadPoolBuilder::new().num_threads(n).build_global().map_err(|e| {
        Error::usage(format!("cannot use {n} threads now: the library's threads have started already ({e})"))
    })
}

/// How many threads the library's parallel work uses.
pub fn thread_count() -> usize {
    rayon::current_num_threads()
}
