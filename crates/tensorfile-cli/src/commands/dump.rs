//! `tensorfile dump FILE`: the whole flatbuffer of an ExecuTorch file as JSON.

use std::io::Write;
use std::path::PathBuf;

use tensorfile::TensorFile;
use tensorfile::executorch as dump;

use crate::outcome::Outcome;
use crate::render;

/// Print the full program (`.pte`) or named-data table (`.ptd`) as JSON, like
/// `flatc --json`: tables as objects of their fields, enums by name, unions as
/// `<field>_type` beside `<field>`. Byte arrays longer than `--bytes` are summarised by size
/// and sha256.
#[derive(clap::Args)]
pub struct Args {
    /// An ExecuTorch program or named-data file (a path or a URL).
    file: PathBuf,
    /// List byte arrays of up to this many bytes in full (default 256).
    #[arg(long, value_name = "N", default_value_t = 256, conflicts_with = "all_bytes")]
    bytes: usize,
    /// List every byte array in full, however long.
    #[arg(long)]
    all_bytes: bool,
    /// Print the program's delegate payloads decoded instead (XNNPACK: its operators, values
    /// and constants with dtype, shape, quantization and named-data key), per method and
    /// delegate index.
    #[arg(long)]
    delegates: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = TensorFile::open(&args.file)?;
    if args.delegates {
        render::json(out, &dump::delegates_json(&file)?)?;
        return Ok(Outcome::Success);
    }
    let limit = (!args.all_bytes).then_some(args.bytes);
    render::json(out, &dump::structure_json(&file, limit)?)?;
    Ok(Outcome::Success)
}
