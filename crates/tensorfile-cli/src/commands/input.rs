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

/// What is checked as a file is read: `--verify` (every checksum it stores, and its sha256
/// where one is known) and `--expect-sha256`.
#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Check the file's sha256 before using it where one is known: a FILE.sha256 beside it
    /// (as sha256sum writes it), or the one the Hugging Face hub lists for it (the cache blob's
    /// name, the record of a --local-dir download, a clone's Git LFS pointer); a mismatch is an
    /// error naming the file and both digests (exit 1), and nothing is done.
    #[arg(long)]
    pub verify: bool,
    /// The sha256 the file must have (64 hexadecimal digits); implies --verify.
    #[arg(long, value_name = "HEX")]
    pub expect_sha256: Option<String>,
}

impl VerifyArgs {
    /// Whether a digest is to be checked (`--verify` or `--expect-sha256`).
    pub fn asked(&self) -> bool {
        self.verify || self.expect_sha256.is_some()
    }

    /// Open `file` (with `data`) checking what these ask: stored checksums always, and with
    /// --verify or --expect-sha256 the file's sha256, checked before the file is returned.
    pub fn open(&self, file: &Path, data: Option<&Path>) -> tensorfile::Result<TensorFile> {
        let mut options = tensorfile::OpenOptions::new();
        options.verify(if self.verify { tensorfile::Verify::Full } else { tensorfile::Verify::Checksums });
        if let Some(hex) = &self.expect_sha256 {
            options.expect_sha256(hex)?;
        }
        if let Some(data) = data {
            options.data(data);
        }
        let opened = options.open(file)?;
        opened.check_digests()?;
        Ok(opened)
    }
}
