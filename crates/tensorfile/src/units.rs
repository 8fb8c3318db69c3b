//! Sizes for people, as the command line and the report print them.

/// A size for people: `512 B`, `1.5 KiB`, `3.2 GiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// A size for people with the exact count: `1.5 KiB (1536 bytes)`.
pub fn size_exact(bytes: u64) -> String {
    if bytes < 1024 { format!("{bytes} bytes") } else { format!("{} ({bytes} bytes)", size(bytes)) }
}

/// A count with thousands separated by commas: `1,235,814,400`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size_exact(100), "100 bytes");
        assert_eq!(size_exact(3 << 20), "3.0 MiB (3145728 bytes)");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_235_814_400), "1,235,814,400");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }
}
