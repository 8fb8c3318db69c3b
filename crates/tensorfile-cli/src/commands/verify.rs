//! `tensorfile verify FILE [--deep]`: check everything a file says about itself.

use std::io::Write;

use tensorfile::{Depth, Verification};

use super::Outcome;
use crate::render;

/// Check a file: its structure (every rule of its format, and what a consumer checks when
/// it loads it) and every stored checksum (zTensor checksums, zip CRC-32s); with `--deep`,
/// also decode every tensor.
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
    if args.json {
        render::json(out, &verification.to_json(&path))?;
    } else if problems.is_empty() {
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
    } else {
        for p in problems {
            writeln!(out, "{}", render::printable(&render::error(p)))?;
        }
        writeln!(out, "FAILED {}: {}", render::printable(&path), render::count(problems.len(), "problem"))?;
    }
    Ok(Outcome::failure_if(!problems.is_empty()))
}
