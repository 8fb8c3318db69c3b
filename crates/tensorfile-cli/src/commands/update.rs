//! `tensorfile update MODEL --weights NEW -o OUT`: new weights, same program (ExecuTorch
//! programs, PyTorch `.pt2` archives, `torch.save` files).

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;
use tensorfile::formats::executorch::pte::rewrite;
use tensorfile::formats::pytorch::pt2;
use tensorfile::{Error, Format, TensorFile};

use super::Outcome;
use crate::render;

/// Replace tensors of a program by name with the tensors of another file (.safetensors,
/// .zt, .ptd...). Each must have the dtype and shape of the one it replaces, named as
/// `tensorfile ls` shows them. For an ExecuTorch .pte: constant.<N>, mutable state, named
/// data keys; for a PyTorch .pt2 or torch.save file: fully qualified names. The program is
/// otherwise unchanged.
#[derive(clap::Args)]
pub struct Args {
    /// The program to update (.pte, .pt2, or a torch.save file).
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

/// What was replaced.
struct Report {
    replaced: Vec<String>,
    unchanged: usize,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let program = TensorFile::open(&args.program)?;
    let weights = TensorFile::open(&args.weights)?;
    let report = match program.format() {
        Format::Pte => {
            let r = rewrite::update(&program, &weights, &args.output, args.skip_unknown)
                .map_err(|e| e.in_file(&args.weights))?;
            rewrite::reopen_check(&args.output, None)?;
            Report { replaced: r.replaced, unchanged: r.unchanged }
        }
        Format::Pt2 | Format::Pt => {
            let r = pt2::update::update(&program, &weights, &args.output, args.skip_unknown)
                .map_err(|e| e.in_file(&args.weights))?;
            // The result must read back whole before we say it is written.
            if let Some(problem) = TensorFile::open(&args.output)?.verify().into_iter().next() {
                return Err(problem.into());
            }
            Report { replaced: r.replaced, unchanged: r.unchanged }
        }
        other => {
            let msg = format!(
                "{}: update rewrites programs (.pte, .pt2, torch.save); this is a {other} file: use convert",
                args.program.display()
            );
            return Err(Error::usage(msg).into());
        }
    };
    if args.json {
        let j = json!({ "output": args.output.display().to_string(), "replaced": report.replaced, "unchanged": report.unchanged });
        render::json(out, &j)?;
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
