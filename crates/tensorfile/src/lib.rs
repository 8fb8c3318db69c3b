//! tensorfile: see what is in a tensor file, get the tensors out, move them to another format,
//! check them, compare them and update them, quickly and without running anyone's code.
//!
//! # Entry points
//!
//! Open a file of any format ([`TensorFile`], or [`OpenOptions`] for more) and read its
//! tensors; the format is recognised from the content:
//!
//! ```no_run
//! let file = tensorfile::TensorFile::open("model.safetensors")?;
//! for entry in file.entries() {
//!     println!("{} {} {:?}", entry.info().name(), entry.info().dtype(), entry.info().shape());
//! }
//! let bytes = file.read("weight")?; // zero-copy when stored raw little-endian
//! let program = tensorfile::OpenOptions::new().data("model.ptd").open("model.pte")?;
//! # Ok::<(), tensorfile::Error>(())
//! ```
//!
//! Convert one or several files into another format, or into shards ([`ConvertJob`]):
//!
//! ```no_run
//! let mut job = tensorfile::ConvertJob::new(["a.safetensors", "b.gguf"], "merged.zt");
//! job.dtype = Some(tensorfile::DType::BFloat16);
//! let done = job.run(&mut |_| {})?;
//! println!("{}", done.to_json());
//! # Ok::<(), tensorfile::Error>(())
//! ```
//!
//! Replace the weights of a file that holds more than tensors ([`update()`]), compare two
//! files ([`compare`]), summarise tensors ([`stats`]), draw a report ([`report`]):
//!
//! ```no_run
//! use tensorfile::{TensorFile, UpdateOptions};
//! let (model, weights) = (TensorFile::open("model.gguf")?, TensorFile::open("new.safetensors")?);
//! let replaced = tensorfile::update(&model, &weights, "updated.gguf".as_ref(), &UpdateOptions::default())?;
//! let diff = tensorfile::compare::compare(&model, &TensorFile::open("updated.gguf")?);
//! let summaries = tensorfile::stats::summarise(&model, &Default::default(), &|_| {})?;
//! let page = tensorfile::report::gather(&model, "model.gguf", &Default::default(), None, &|_| {})?;
//! tensorfile::report::write_html("model.html", &page)?;
//! # Ok::<(), tensorfile::Error>(())
//! ```
//!
//! What a file holds, shown as the command line shows it, is in [`inspect`]; what ExecuTorch
//! files offer beyond tensors in [`executorch`]; the formats, what each can hold ([`Caps`])
//! and the write options in [`formats`]; bytes in and out in [`io`].
//!
//! # Layers
//!
//! Each layer names only those below it (a test reads the imports and keeps it so):
//!
//! ```text
//!   shells        the CLI, the Python package: build the library's jobs, render its reports
//!   operations    convert, update, compare, stats, show, report, diagnose, stage, executorch
//!   file          TensorFile and OpenOptions, sets of files (shards, merged files)
//!   formats       one unit per format (reader, writer, updater, every fact), the registry
//!   containers    flatbuffers, pickles, zip archives
//!   model         format-neutral tensors (model), the description vocabulary (describe)
//!   bytes         sources (map, buffer, remote), outputs (atomic files), checked arithmetic
//!   errors        one Error with its Rule, Hint and Diagnosis; limits; units
//! ```

#![warn(missing_docs)]

/// Modules the library keeps to itself; with the feature `internals` (this workspace's own
/// tests, conformance generator and fuzz targets) they are public, hidden from the docs.
macro_rules! internal_modules {
    ($($name:ident),+) => {
        $(
            #[cfg(feature = "internals")]
            #[doc(hidden)]
            pub mod $name;
            #[cfg(not(feature = "internals"))]
            pub(crate) mod $name;
        )+
    };
}

// The library's own machinery: reached through the curated modules and re-exports below.
internal_modules!(
    checked, cursor, describe, diagnose, dump, export, facts, flatbuf, limits, listing, numbers, output, parameters,
    pickle, shards, show, source, stage, units, zip
);

mod ahead;
mod convert_job;
mod error;
mod file;
mod meta;
mod sizes;
mod swap;
mod threads;
mod update;

pub mod compare;
pub mod convert;
pub mod executorch;
pub mod formats;
pub mod inspect;
pub mod io;
pub mod llama;
pub mod model;
pub mod report;
pub mod stats;

/// The library's internal modules, for this workspace's own tests, conformance generator and
/// fuzz targets (feature `internals`): not part of the API, no stability promised.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::fuzzing::{
        HF_TOKENIZER_FILES, exercise, exercise_git_records, exercise_hf_config, exercise_hf_tokenizer_files,
        exercise_sentencepiece, exercise_split_gguf,
    };
    pub use crate::{checked, cursor, flatbuf, pickle, zip};
}

#[cfg(feature = "internals")]
mod fuzzing;

pub use convert_job::{Conversion, ConvertJob, Shards};
pub use error::{Diagnosis, Error, ErrorKind, Hint, JobOption, Result, Rule};
pub use file::{
    Access, Depth, DigestFrom, ExpectedDigest, FileDigest, OpenOptions, READ_AHEAD_BYTES, TensorFile, Verification,
    Verify, digest,
};
pub use formats::{Caps, Compression, Format, WriteOptions};
pub use meta::{Assignment, Given, MetaChange, MetaEdit, MetaReport, MetaType, edit_metadata};
pub use model::{DType, Entry, Kind, Layout, MetaValue, TensorData, TensorInfo};
pub use threads::{set_threads, thread_count};
pub use update::{UpdateOptions, UpdateReport, update};
