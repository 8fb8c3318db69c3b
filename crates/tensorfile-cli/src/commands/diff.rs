//! `tensorfile diff A B`: how two files' tensors differ.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value as Json, json};
use tensorfile::TensorFile;
use tensorfile::compare::{self, Diff, Side, Tolerance};

use crate::outcome::Outcome;
use crate::render;

/// Compare the tensors of two files, of any formats; exit 1 when they differ.
///
/// Tensors are matched by name. Reported: names only in one file; kind, dtype, shape and
/// layout changes; differing values, compared bitwise (a NaN equals only a NaN of the
/// same bits), with the count of differing elements and the largest absolute difference.
/// Each changed tensor of the same shape in both is also measured by value, across dtypes
/// and quantizations (dequantized), B being the reference: max abs |a-b|, max rel |a-b|/|b|
/// (0/0 counts 0, x/0 infinity), cosine similarity, NMSE Σ(a-b)²/Σb², and the values over
/// tolerance (numpy.isclose with equal_nan: |a-b| > atol + rtol·|b|).
///
/// Exit status: without --atol and --rtol, 1 on any difference (bitwise); with either, 1 only
/// when names or shapes differ, something is unreadable, values cannot be compared as
/// numbers, or some value is over tolerance (a dtype change alone passes).
#[derive(clap::Args)]
pub struct Args {
    /// The first file (a sharded checkpoint's index or folder reads as one file; a URL reads
    /// a remote file by range).
    a: PathBuf,
    /// The second file (likewise).
    b: PathBuf,
    /// Print the differences as JSON.
    #[arg(long)]
    json: bool,
    /// Absolute tolerance (numpy's default 1e-8 when only --rtol is given); giving it makes
    /// the exit status depend on values over tolerance, not on any bitwise difference.
    #[arg(long, value_name = "ATOL", value_parser = tolerance)]
    atol: Option<f64>,
    /// Relative tolerance, a fraction of B's value (numpy's default 1e-5 when only --atol is
    /// given); likewise.
    #[arg(long, value_name = "RTOL", value_parser = tolerance)]
    rtol: Option<f64>,
}

/// A tolerance: a finite number of at least 0 (refused as the command line is read).
pub(super) fn tolerance(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{text:?} is not a finite number of at least 0")),
    }
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let a = TensorFile::open(&args.a)?;
    let b = TensorFile::open(&args.b)?;
    let tolerance = Tolerance::or_numpy(args.atol, args.rtol)?;
    let by_tolerance = args.atol.is_some() || args.rtol.is_some();
    let diff = compare::compare_with(&a, &b, tolerance);
    let (name_a, name_b) = (args.a.display().to_string(), args.b.display().to_string());
    if args.json {
        let mut value = json!({ "a": name_a, "b": name_b });
        if let (Some(all), Json::Object(fields)) = (value.as_object_mut(), diff.to_json()) {
            all.extend(fields);
        }
        render::json(out, &value)?;
    } else {
        write_text(&diff, by_tolerance, &name_a, &name_b, out)?;
    }
    Ok(Outcome::failure_if(if by_tolerance { !diff.is_close() } else { !diff.is_same() }))
}

fn write_text(diff: &Diff, by_tolerance: bool, a: &str, b: &str, out: &mut dyn Write) -> std::io::Result<()> {
    let (a, b) = (render::printable(a), render::printable(b));
    for name in &diff.only_in_a {
        writeln!(out, "only in {a}: {}", render::printable(name))?;
    }
    for name in &diff.only_in_b {
        writeln!(out, "only in {b}: {}", render::printable(name))?;
    }
    for t in &diff.changed {
        for change in &t.changes {
            writeln!(out, "{}: {change}", render::printable(&t.name))?;
        }
        if let Some(m) = &t.metrics {
            writeln!(out, "{}: {m}", render::printable(&t.name))?;
        }
    }
    for u in &diff.unreadable {
        let file = if u.side == Side::A { &a } else { &b };
        writeln!(out, "unreadable in {file}: {}: {}", render::printable(&u.name), render::printable(&u.message))?;
    }
    if diff.is_same() {
        return writeln!(out, "same: {} identical", render::count(diff.identical, "tensor"));
    }
    let tol = diff.tolerance;
    if by_tolerance && diff.is_close() {
        return writeln!(
            out,
            "close: {} identical, {} changed within atol {} rtol {}",
            diff.identical,
            diff.changed.len(),
            tol.atol,
            tol.rtol
        );
    }
    let mut counts = vec![format!("{} identical", diff.identical), format!("{} changed", diff.changed.len())];
    for (n, what) in [
        (diff.only_in_a.len(), format!("only in {a}")),
        (diff.only_in_b.len(), format!("only in {b}")),
        (diff.unreadable.len(), "unreadable".to_string()),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    writeln!(out, "different: {}", counts.join(", "))
}
