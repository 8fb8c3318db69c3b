//! `tensorfile diff A B`: how two files' tensors differ.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value as Json, json};
use tensorfile::TensorFile;
use tensorfile::compare::{self, Diff, Side};

use super::Outcome;
use crate::render;

/// Compare the tensors of two files, of any formats; exit 1 when they differ.
///
/// Tensors are matched by name. Reported: names only in one file; kind, dtype, shape and
/// layout changes; differing values, compared bitwise (a NaN equals only a NaN of the
/// same bits), with the count of differing elements and the largest absolute difference.
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
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let a = TensorFile::open(&args.a)?;
    let b = TensorFile::open(&args.b)?;
    let diff = compare::compare(&a, &b);
    let (name_a, name_b) = (args.a.display().to_string(), args.b.display().to_string());
    if args.json {
        let mut value = json!({ "a": name_a, "b": name_b });
        if let (Some(all), Json::Object(fields)) = (value.as_object_mut(), diff.to_json()) {
            all.extend(fields);
        }
        render::json(out, &value)?;
    } else {
        write_text(&diff, &name_a, &name_b, out)?;
    }
    Ok(Outcome::failure_if(!diff.is_same()))
}

fn write_text(diff: &Diff, a: &str, b: &str, out: &mut dyn Write) -> std::io::Result<()> {
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
    }
    for u in &diff.unreadable {
        let file = if u.side == Side::A { &a } else { &b };
        writeln!(out, "unreadable in {file}: {}: {}", render::printable(&u.name), render::printable(&u.message))?;
    }
    if diff.is_same() {
        return writeln!(out, "same: {} identical", render::count(diff.identical, "tensor"));
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
