//! `tensorfile update MODEL --weights NEW -o OUT`: new weights, same program (ExecuTorch
//! programs, PyTorch `.pt2` archives, `torch.save` files).

use std::io::Write;
use std::path::PathBuf;

use tensorfile::TensorFile;
use tensorfile::UpdateOptions;

use crate::outcome::Outcome;
use crate::render;

/// Replace tensors of a program by name with the tensors of another file (.safetensors,
/// .zt, .ptd...). Each must have the dtype and shape of the one it replaces, named as
/// `tensorfile ls` shows them. For an ExecuTorch .pte: constant.<N>, mutable state, named
/// data keys; for a PyTorch .pt2 or torch.save file: fully qualified names. The program is
/// otherwise unchanged.
#[derive(clap::Args)]
pub struct Args {
    /// The program to update (.pte, .pt2, a torch.save file, or a GGUF file).
    program: PathBuf,
    /// The file holding the new tensors.
    #[arg(long, value_name = "FILE")]
    weights: PathBuf,
    /// Where to write the updated program.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
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
    let options = UpdateOptions::default().skip_unknown(args.skip_unknown);
    let report = tensorfile::update(&program, &weights, &args.output, &options)?;
    if args.json {
        render::json(out, &report.to_json(&args.output))?;
        return Ok(Outcome::Success);
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
