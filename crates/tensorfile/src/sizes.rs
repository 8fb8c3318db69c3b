//! Sizes as people write them (`5GB`, `500MiB`, `5G`): what `--max-shard-size`,
//! `--cache-limit` and the environment's limits take.

use crate::error::{Error, Result};

/// A size as `--max-shard-size` takes it: bytes (`123456`), or a number and a unit, `KB`,
/// `MB`, `GB`, `TB` (powers of 1000, as huggingface_hub reads them) or `KiB`, `MiB`, `GiB`,
/// `TiB` (powers of 1024), in any case, with a fraction if wanted (`1.5GiB`, rounded down to
/// a byte); `B` is bytes; `K`, `M`, `G`, `T` alone are the decimal units, as llama.cpp's
/// converter and llama-gguf-split read them (`5G`).
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = |why: &str| Error::usage(format!("bad size {text:?}: {why} (e.g. 5GB, 500MB, 1.5GiB, 123456)"));
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let multiplier: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "k" => 1000,
        "mb" | "m" => 1000u128.pow(2),
        "gb" | "g" => 1000u128.pow(3),
        "tb" | "t" => 1000u128.pow(4),
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(bad("unknown unit")),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') || whole.len() > 20 || fraction.len() > 20 {
        return Err(bad("not a number"));
    }
    let digits = |s: &str| if s.is_empty() { Ok(0) } else { s.parse::<u128>().map_err(|_| bad("not a number")) };
    let scale = 10u128.pow(fraction.len() as u32);
    let part = digits(fraction)? * multiplier / scale;
    let bytes = digits(whole)?
        .checked_mul(multiplier)
        .and_then(|w| w.checked_add(part))
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| bad("too large"))?;
    if bytes == 0 {
        return Err(bad("a shard must hold at least one byte"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_decimal_and_binary_units() {
        assert_eq!(parse_size("5GB").unwrap(), 5_000_000_000);
        assert_eq!(parse_size("500MB").unwrap(), 500_000_000);
        assert_eq!(parse_size("400kb").unwrap(), 400_000);
        assert_eq!(parse_size("5G").unwrap(), 5_000_000_000);
        assert_eq!(parse_size("100K").unwrap(), 100_000);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("2 MiB").unwrap(), 2 << 20);
        assert_eq!(parse_size("123456").unwrap(), 123_456);
        assert_eq!(parse_size("10B").unwrap(), 10);
        assert_eq!(parse_size(".5KB").unwrap(), 500);
        assert_eq!(parse_size("1TiB").unwrap(), 1 << 40);
        for bad in ["", "GB", "0", "0.0001B", "5XB", "1.2.3MB", "-5MB", "99999999999999999999TB", "5 G B"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }
}
