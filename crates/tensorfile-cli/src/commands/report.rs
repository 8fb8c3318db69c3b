//! `tensorfile report FILE -o report.html`: one self-contained page to look at a file.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;
use tensorfile::compare::Tolerance;
use tensorfile::report::{self, ReportOptions};
use tensorfile::stats;

use crate::outcome::Outcome;
use crate::progress::{Progress, Unit};
use crate::render;

/// Write an HTML report of a file: its summary, where its bytes go (by name prefix, dtype,
/// file; for programs by method, delegate, segment and padding), its tensors in a sortable,
/// filterable table with each tensor's statistics and histogram, and what the format says of
/// itself (an ExecuTorch program's methods, operators and delegates; a .pt2's signature;
/// GGUF metadata).
///
/// The page is one file: it opens from disk, fetches nothing and runs no code but its own.
/// Its size grows with the number of tensors, not with their bytes.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::input::Input,
    /// Where to write the page (default: the file's name with `.html` added, in the current
    /// folder).
    #[arg(short, long, value_name = "PAGE.html")]
    output: Option<PathBuf>,
    /// Add the per-tensor differences from another file (any format; max abs and rel
    /// difference, cosine, NMSE, values over the tolerance).
    #[arg(long, value_name = "OTHER")]
    compare: Option<PathBuf>,
    /// Absolute tolerance of the comparison (numpy's 1e-8 by default).
    #[arg(long, value_name = "ATOL", requires = "compare", value_parser = super::diff::tolerance)]
    atol: Option<f64>,
    /// Relative tolerance of the comparison (numpy's 1e-5 by default).
    #[arg(long, value_name = "RTOL", requires = "compare", value_parser = super::diff::tolerance)]
    rtol: Option<f64>,
    /// Leave out the statistics (no tensor data is read).
    #[arg(long)]
    no_stats: bool,
    /// Bins of each tensor's histogram.
    #[arg(long, value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    bins: u32,
    /// Print what was written as JSON (`output`, `bytes`, `tensors`, `compared`).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = args.input.open()?;
    let other = args.compare.as_ref().map(tensorfile::TensorFile::open).transpose()?;
    let options = ReportOptions {
        stats: !args.no_stats,
        bins: args.bins as usize,
        tolerance: Tolerance::or_numpy(args.atol, args.rtol)?,
    };
    let name = args.input.file.display().to_string();
    let other_name = args.compare.as_ref().map(|p| p.display().to_string());
    let total =
        if options.stats { stats::total_values(&file, &(0..file.entries().len()).collect::<Vec<_>>()) } else { 0 };
    let bar = Progress::new(total, Unit::Values);
    let data = report::gather(&file, &name, &options, other.as_ref().zip(other_name.as_deref()), &|n| bar.add(n));
    bar.finish();
    let data = data?;
    let output = args.output.clone().unwrap_or_else(|| {
        let base = args.input.file.file_name().map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
        PathBuf::from(format!("{base}.html"))
    });
    report::write_html(&output, &data)?;
    let bytes = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
    let tensors = file.entries().len();
    if args.json {
        render::json(
            out,
            &json!({ "output": output.display().to_string(), "bytes": bytes, "tensors": tensors, "compared": other_name }),
        )?;
    } else {
        writeln!(
            out,
            "wrote {} ({}, {})",
            render::printable(&output.display().to_string()),
            render::size(bytes),
            render::count(tensors, "tensor")
        )?;
    }
    Ok(Outcome::Success)
}
