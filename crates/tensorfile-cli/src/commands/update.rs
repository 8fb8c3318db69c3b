//! `tensorfile update MODEL.pte --weights NEW -o OUT.pte`: new weights, same program.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;
use tensorfile::TensorFile;
use tensorfile::formats::pte::rewrite;

use super::Outcome;
use crate::render;

/// Replace tensors of an ExecuTorch program by name with the tensors of another file
/// (.safetensors, .zt, .ptd...). Each must have the dtype and shape of the one it replaces
/// (names as `tensorfile ls` shows them: constant.<N>, mutable state, named data keys).
/// The program is otherwise unchanged.
#[derive(clap::Args)]
pub struct Args {
    /// The program to update.
    program: PathBuf,
    /// The file holding the new tensors.
    #[arg(long, value_name = "FILE")]
    weights: PathBuf,
    /// Where to write the updated program.
    #[arg(short = 'o', long = "output", value_name = "OUT.pte")]
    output: PathBuf,
    /// Ignore tensors of the weights file that the program lacks (else an error).
    #[arg(long)]
    skip_unknown: bool,
    /// Print what was replaced as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let program = TensorFile::open(&args.program)?;
    let weights = TensorFile::open(&args.weights)?;
    let report =
        rewrite::update(&program, &weights, &args.output, args.skip_unknown).map_err(|e| e.in_file(&args.weights))?;
    rewrite::reopen_check(&args.output, None)?;
    if args.json {
        return Ok(render::json(out, &json!({ "output": args.output.display().to_string(), "replaced": report.replaced, "unchanged": report.unchanged })).map(|()| Outcome::Success)?);
    }
    writeln!(
        out,
        "wrote {}: {} replaced, {} unchanged",
        args.output.display(),
        render::count(report.replaced.len(), "tensor"),
        report.unchanged
    )?;
    Ok(Outcome::Success)
}
