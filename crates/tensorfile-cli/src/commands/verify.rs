//! `tensorfile verify FILE [--deep]`: check everything a file says about itself.

use std::io::Write;

use tensorfile::stats::{self, NonFinite};
use tensorfile::{Depth, Verification};

use super::Outcome;
use crate::render;

/// Check a file: its structure (every rule of its format, and what a consumer checks when
/// it loads it) and every stored checksum (zTensor checksums, zip CRC-32s); with `--deep`,
/// also decode every tensor; with `--finite`, also check that every value is finite.
///
/// Prints each problem (file, tensor, what is wrong and the rule broken) and exits 1 when
/// there is any, or when the file cannot be opened at all.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::input::Input,
    /// Also decode every tensor (decompress, gather views, check sparse indices), in
    /// pieces so that memory stays bounded.
    #[arg(long)]
    deep: bool,
    /// Also read every tensor's values and report each one holding NaNs or infinities (with
    /// their counts); any is a failure.
    #[arg(long)]
    finite: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = args.input.open()?;
    let depth = if args.deep { Depth::Deep } else { Depth::Checksums };
    let verification = file.verify_with(depth);
    let path = args.input.file.display().to_string();
    let Verification { problems, checksums, decoded_bytes, tensors, blobs, .. } = &verification;
    // With --finite, the values of every tensor whose entry reads (a read error is already a
    // problem above, or becomes one here).
    let (nonfinite, mut extra): (Vec<NonFinite>, _) =
        if args.finite { stats::nonfinite(&file) } else { (Vec::new(), Vec::new()) };
    extra.retain(|e| !problems.iter().any(|p| p.tensor().is_some() && p.tensor() == e.tensor()));
    let failed = !problems.is_empty() || !extra.is_empty() || !nonfinite.is_empty();
    if args.json {
        let mut value = verification.to_json(&path);
        if let Some(fields) = value.as_object_mut() {
            if args.finite {
                fields.insert("nonfinite".into(), nonfinite.iter().map(NonFinite::to_json).collect());
                fields.insert("ok".into(), (!failed).into());
            }
            if let (false, Some(list)) = (extra.is_empty(), fields.get_mut("problems").and_then(|p| p.as_array_mut())) {
                list.extend(extra.iter().map(|e| {
                    serde_json::json!({
                        "tensor": e.tensor(),
                        "rule": e.rule().map(|r| r.id()),
                        "message": e.message(),
                        "error": e.to_string(),
                    })
                }));
            }
        }
        render::json(out, &value)?;
    } else if !failed {
        let decoded = if args.deep {
            format!("{} decoded", render::size(*decoded_bytes))
        } else {
            "not decoded (--deep decodes every tensor)".to_string()
        };
        writeln!(
            out,
            "OK {}: {}, {}, {} verified, {decoded}",
            render::printable(&path),
            render::count(*tensors, "tensor"),
            render::count(*blobs, "blob"),
            render::count(*checksums, "checksum"),
        )?;
        if args.finite {
            writeln!(out, "every value finite")?;
        }
    } else {
        for p in problems.iter().chain(&extra) {
            writeln!(out, "{}", render::printable(&render::error(p)))?;
        }
        for t in &nonfinite {
            writeln!(
                out,
                "{}: tensor {:?}: not finite: {} NaN, {} +inf, {} -inf",
                render::printable(&path),
                t.name,
                t.nan,
                t.posinf,
                t.neginf
            )?;
        }
        let count = problems.len() + extra.len() + nonfinite.len();
        writeln!(out, "FAILED {}: {}", render::printable(&path), render::count(count, "problem"))?;
    }
    Ok(Outcome::failure_if(failed))
}
