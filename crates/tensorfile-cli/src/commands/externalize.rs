//! `tensorfile externalize A.pte [B.pte...] -o OUT --data OUT.ptd`: constants into a `.ptd`.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;
use tensorfile::{Error, TensorFile};

use crate::outcome::Outcome;
use crate::render;

/// Move the constants of ExecuTorch programs into one .ptd file, under the names `ls` shows
/// (`constant.<N>`; with several programs, `<program>/constant.<N>`). Each new program marks
/// them EXTERNAL and loads with the .ptd; identical tensors are stored in it once.
#[derive(clap::Args)]
pub struct Args {
    /// The programs.
    #[arg(required = true)]
    programs: Vec<PathBuf>,
    /// The new program (one input), or a folder for the new programs (several inputs, each
    /// keeping its file name).
    #[arg(short = 'o', long = "output", value_name = "OUT.pte|DIR")]
    output: PathBuf,
    /// The .ptd to write.
    #[arg(long, value_name = "OUT.ptd")]
    data: PathBuf,
    /// Print what was moved as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let destinations: Vec<PathBuf> = if args.programs.len() == 1 {
        vec![args.output.clone()]
    } else {
        crate::output_folder::create(&args.output)?;
        args.programs
            .iter()
            .map(|p| {
                p.file_name()
                    .map(|n| args.output.join(n))
                    .ok_or_else(|| Error::usage(format!("{} has no file name", p.display())))
            })
            .collect::<Result<_, _>>()?
    };
    let files = args.programs.iter().map(TensorFile::open).collect::<Result<Vec<_>, _>>()?;
    let pairs: Vec<(&TensorFile, PathBuf)> = files.iter().zip(destinations).collect();
    let results = tensorfile::executorch::externalize(&pairs, &args.data)?;
    if args.json {
        let programs: Vec<_> =
            results.iter().map(|r| json!({ "program": r.program.display().to_string(), "moved": r.moved })).collect();
        render::json(out, &json!({ "data": args.data.display().to_string(), "programs": programs }))?;
        return Ok(Outcome::Success);
    }
    for r in &results {
        writeln!(
            out,
            "wrote {}: {} moved to {}",
            r.program.display(),
            render::count(r.moved.len(), "constant"),
            args.data.display()
        )?;
    }
    Ok(Outcome::Success)
}
