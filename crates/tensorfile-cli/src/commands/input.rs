//! The file a reading command opens, as every such command takes it.

use std::path::{Path, PathBuf};

use tensorfile::TensorFile;

/// A file to read: a path or URL, and for an ExecuTorch program the `.ptd` of its external
/// tensors.
#[derive(clap::Args)]
pub struct Input {
    /// The tensor file, or a sharded checkpoint: its index (model.safetensors.index.json) or
    /// its folder (every shard read). A URL (http(s)://, s3://, gs://, az://) reads a remote
    /// file by range.
    pub file: PathBuf,
    /// The `.ptd` file holding an ExecuTorch program's external tensors.
    #[arg(long, value_name = "FILE.ptd")]
    pub data: Option<PathBuf>,
}

impl Input {
    /// Open the file (with its `.ptd`, when given).
    pub fn open(&self) -> tensorfile::Result<TensorFile> {
        open_with_data(&self.file, self.data.as_deref())
    }
}

/// Open `file`, with `data` as the `.ptd` of its external tensors when given.
pub fn open_with_data(file: &Path, data: Option<&Path>) -> tensorfile::Result<TensorFile> {
    let mut options = tensorfile::OpenOptions::new();
    if let Some(data) = data {
        options.data(data);
    }
    options.open(file)
}
