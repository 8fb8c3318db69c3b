//! `tensorfile show FILE NAME`: a tensor's values, printed as numpy prints them.

use std::io::Write;

use tensorfile::inspect::{self as show, Extent};

use crate::outcome::Outcome;
use crate::render;

/// Print a tensor's values as numpy's `print(array)` does (numpy 2's default options: the
/// first and last three of each axis of an array over 1000 elements, 8 digits at most).
///
/// Dtypes numpy lacks print as numpy prints the same values in its type holding them:
/// bfloat16, float8 and float4 as float32, int4/int2 as int8, uint4/uint2 as uint8, complex32
/// as complex64. Quantized tensors are dequantized (said on stderr). Only the rows shown are
/// read.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::input::Input,
    /// The tensor's name.
    name: String,
    /// numpy basic slicing, one item per axis: `i`, `a:b`, `a:b:s`, `:`, negative from the end
    /// (`0:4,:8`; `-1` takes the last row and drops the axis).
    #[arg(long, value_name = "SLICE", allow_hyphen_values = true)]
    slice: Option<String>,
    /// Print the name, dtype, shape, slice and every selected value as JSON (NaN and
    /// infinities as "nan", "inf", "-inf").
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    verify: super::input::VerifyArgs,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let checked = args.verify.asked();
    let file =
        if checked { args.verify.open(&args.input.file, args.input.data.as_deref())? } else { args.input.open()? };
    if checked {
        // The whole tensor read once, its stored checksum checked, before any row is shown.
        let index = file.index_of(&args.name).ok_or_else(|| tensorfile::Error::not_found(&args.name))?;
        file.read_verified(index)?;
    }
    let extent = if args.json { Extent::All } else { Extent::Printed };
    let shown = show::show(&file, &args.name, args.slice.as_deref(), extent)?;
    if shown.dequantized {
        eprintln!("tensorfile: {}: quantized, shown dequantized to float32", render::printable(&shown.name));
    }
    if args.json {
        render::json(out, &shown.to_json())?;
    } else {
        writeln!(out, "{}", shown.to_text())?;
    }
    Ok(Outcome::Success)
}
