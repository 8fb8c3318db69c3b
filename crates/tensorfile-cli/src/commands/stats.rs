//! `tensorfile stats FILE [NAME...] [--hist N]`: the numbers of each tensor summarised.

use std::io::Write;

use serde_json::json;
use tensorfile::stats::{self, StatsOptions, TensorStats};

use crate::outcome::Outcome;
use crate::progress::{Progress, Unit};
use crate::render::{self, Table};

/// Summarise the values of each tensor: elements, min, max, mean, standard deviation
/// (population) and largest magnitude of the finite values, counts of zeros, NaNs and
/// infinities.
///
/// Integer (bool as 0 and 1), floating (float8, bfloat16...) and quantized tensors
/// (dequantized) are summarised, accumulated in float64; complex and opaque dtypes and blobs
/// are listed with the reason they are not. Tensors are read in pieces (memory stays bounded)
/// on all cores.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::input::Input,
    /// Tensors to summarise, in this order (every entry when none).
    #[arg(value_name = "NAME")]
    names: Vec<String>,
    /// Add an N-bin histogram of each tensor's finite values over [min, max] (bins as
    /// numpy.histogram makes them: the last bin closed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=stats::MAX_BINS as i64))]
    hist: Option<u32>,
    /// Print a JSON object instead of a table: `file` and `tensors`, one record each with
    /// `name`, `dtype`, `shape`, `numel`, `dequantized`, `summarised`, `min`, `max`, `mean`,
    /// `std`, `absmax`, `zeros`, `nan`, `posinf`, `neginf`, `hist` (or `reason`).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = args.input.open()?;
    let options = StatsOptions { names: args.names.clone(), hist: args.hist.map(|n| n as usize) };
    let total = stats::total_values(&file, &stats::select(&file, &options.names)?);
    let bar = Progress::new(total, Unit::Values);
    let result = stats::summarise(&file, &options, &|n| bar.add(n));
    bar.finish();
    let tensors = result?;
    if args.json {
        let records: Vec<_> = tensors.iter().map(TensorStats::to_json).collect();
        render::json(out, &json!({ "file": args.input.file.display().to_string(), "tensors": records }))?;
    } else {
        write_table(&tensors, out)?;
        for t in &tensors {
            if let Some(h) = t.summary.as_ref().ok().and_then(|s| s.hist.as_ref()) {
                writeln!(out, "\n{} histogram:", render::printable(&t.name))?;
                let mut table = Table::new(&[("FROM", true), ("TO", true), ("COUNT", true)]);
                for (i, count) in h.counts.iter().enumerate() {
                    let close = if i + 1 == h.counts.len() { "]" } else { ")" };
                    table.push(vec![
                        number(h.edges[i]),
                        format!("{}{close}", number(h.edges[i + 1])),
                        count.to_string(),
                    ]);
                }
                table.write(out)?;
            }
        }
    }
    Ok(Outcome::Success)
}

fn write_table(tensors: &[TensorStats], out: &mut dyn Write) -> std::io::Result<()> {
    let special = tensors.iter().any(|t| t.summary.as_ref().is_ok_and(|s| s.moments.nonfinite() > 0));
    let mut columns = vec![
        ("NAME", false),
        ("DTYPE", false),
        ("NUMEL", true),
        ("MIN", true),
        ("MAX", true),
        ("MEAN", true),
        ("STD", true),
        ("ABSMAX", true),
        ("ZEROS", true),
    ];
    if special {
        columns.extend([("NAN", true), ("POSINF", true), ("NEGINF", true)]);
    }
    let mut table = Table::new(&columns);
    for t in tensors {
        let dtype = if t.dequantized { format!("{} (dequantized)", t.dtype) } else { t.dtype.to_string() };
        let mut row = vec![render::printable(&t.name).into_owned(), dtype, t.numel.to_string()];
        match &t.summary {
            Ok(s) => {
                let shown = |v: Option<f64>| v.map_or_else(|| "-".to_string(), number);
                row.extend([shown(s.min()), shown(s.max()), shown(s.mean()), shown(s.std()), shown(s.absmax())]);
                row.push(s.moments.zeros.to_string());
                if special {
                    let m = &s.moments;
                    row.extend([m.nan.to_string(), m.posinf.to_string(), m.neginf.to_string()]);
                }
            }
            Err(reason) => row.push(format!("not summarised: {reason}")),
        }
        table.push(row);
    }
    table.write(out)
}

/// A number in 7 significant digits: plain when of moderate size, else in exponent form.
fn number(v: f64) -> String {
    if v == 0.0 || v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor();
    if (-4.0..7.0).contains(&exp) {
        let decimals = (6.0 - exp).max(0.0) as usize;
        let text = format!("{v:.decimals$}");
        if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
    } else {
        format!("{v:.6e}")
    }
}

#[cfg(test)]
mod tests {
    use super::number;

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(-3.0), "-3");
        assert_eq!(number(0.123456789), "0.1234568");
        assert_eq!(number(1.5e-9), "1.500000e-9");
        assert_eq!(number(123456.75), "123456.8");
    }
}
