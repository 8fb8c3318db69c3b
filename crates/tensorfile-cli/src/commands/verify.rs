//! `tensorfile verify FILE [--deep]`: check everything a file says about itself.

use std::io::Write;

use tensorfile::{Depth, Verification};

use crate::outcome::Outcome;
use crate::render;

/// Check a file: its structure (every rule of its format, and what a consumer checks when
/// it loads it) and every stored checksum (zTensor checksums, zip CRC-32s); with `--deep`,
/// also decode every tensor and hash every file (against FILE.sha256 or the Hugging Face
/// cache blob's name where one is known) and every tensor (`--json`: `files`,
/// `tensor_sha256`, to record and compare); with `--finite`, also check that every value is
/// finite.
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
    let mut verification = file.verify_with(depth);
    if args.finite {
        verification.check_finite(&file);
    }
    let path = args.input.file.display().to_string();
    let failed = !verification.ok();
    if args.json {
        render::json(out, &verification.to_json(&path))?;
    } else if !failed {
        let Verification { checksums, decoded_bytes, tensors, blobs, .. } = &verification;
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
        for f in &verification.files {
            let known = match &f.expected {
                Some(e) => format!(" (as expected: {})", e.from),
                None => String::new(),
            };
            let hex = tensorfile::digest::hex_sha256(&f.sha256);
            writeln!(out, "sha256 {hex}  {}{known}", render::printable(&f.path.display().to_string()))?;
        }
    } else {
        let nonfinite = verification.nonfinite.as_deref().unwrap_or(&[]);
        for p in &verification.problems {
            writeln!(out, "{}", render::printable(&render::error(p)))?;
        }
        for t in nonfinite {
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
        let count = verification.problems.len() + nonfinite.len();
        writeln!(out, "FAILED {}: {}", render::printable(&path), render::count(count, "problem"))?;
    }
    Ok(Outcome::failure_if(failed))
}
