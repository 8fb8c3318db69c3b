//! File names for tensors: any tensor name, made into one file name that stays in its folder
//! and that file systems accept.

use tensorfile::model::{Checksum, ChecksumKind};

/// `name` as a single file name component that can neither leave its folder nor hide.
///
/// `/`, `\`, NUL and `%` are percent-encoded (`%2F`, `%5C`, `%00`, `%25`), so distinct
/// names stay distinct. A leading `.` becomes `%2E` (so `.`, `..` and hidden names cannot
/// occur), and the empty name becomes `%`, which no other name produces.
pub fn safe_name(name: &str) -> String {
    if name.is_empty() {
        return "%".into();
    }
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.char_indices() {
        match c {
            '/' => out.push_str("%2F"),
            '\\' => out.push_str("%5C"),
            '\0' => out.push_str("%00"),
            '%' => out.push_str("%25"),
            '.' if i == 0 => out.push_str("%2E"),
            c => out.push(c),
        }
    }
    out
}

/// The longest file name written for a tensor, in bytes: under the 255 that common file
/// systems allow, with room for the temporary name it is written under first (12 bytes more).
pub const MAX_FILE_NAME: usize = 200;

/// `stem` then `tail` (a part's suffix and the extension) as one file name of at most
/// [`MAX_FILE_NAME`] bytes, and whether it had to be shortened. A name that fits is kept; a
/// longer one keeps as much of `stem` as fits (cut between characters), then `~` and 16
/// hexadecimal digits of the sha256 of `key` (the tensor's own name, so that names sharing a
/// long beginning stay distinct), then `tail`.
pub fn fitted(stem: &str, tail: &str, key: &str) -> (String, bool) {
    if stem.len() + tail.len() <= MAX_FILE_NAME {
        return (format!("{stem}{tail}"), false);
    }
    let digest = match Checksum::compute(ChecksumKind::Sha256, key.as_bytes()) {
        Some(Checksum::Sha256(d)) => d.iter().take(8).map(|b| format!("{b:02x}")).collect::<String>(),
        _ => String::new(),
    };
    let room = MAX_FILE_NAME.saturating_sub(tail.len() + 1 + digest.len());
    let mut cut = room.min(stem.len());
    while !stem.is_char_boundary(cut) {
        cut -= 1;
    }
    (format!("{}~{digest}{tail}", &stem[..cut]), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_and_told_apart_by_a_hash() {
        assert_eq!(fitted("w", ".npy", "w"), ("w.npy".to_string(), false));
        let exact = "a".repeat(MAX_FILE_NAME - 4);
        assert_eq!(fitted(&exact, ".npy", &exact), (format!("{exact}.npy"), false));
        let (long, longer) = ("b".repeat(300), format!("{}c", "b".repeat(300)));
        let (one, cut) = fitted(&long, ".indices.npy", &long);
        let (two, _) = fitted(&longer, ".indices.npy", &longer);
        assert!(cut && one.len() == MAX_FILE_NAME && one.ends_with(".indices.npy"), "{one}");
        assert!(one.starts_with(&"b".repeat(150)) && one.contains('~'), "{one}");
        assert_ne!(one, two);
        // Cut between characters: 'é' is two bytes.
        let accents = "é".repeat(150);
        let (name, _) = fitted(&accents, ".npy", &accents);
        assert!(name.len() <= MAX_FILE_NAME && name.starts_with("éé"), "{name}");
    }

    #[test]
    fn separators_and_percent_are_encoded() {
        assert_eq!(safe_name("layers.0/weight"), "layers.0%2Fweight");
        assert_eq!(safe_name("a\\b\0c%d"), "a%5Cb%00c%25d");
        assert_eq!(safe_name("ünïcode.名前"), "ünïcode.名前");
    }

    #[test]
    fn names_cannot_leave_the_folder_or_hide() {
        assert_eq!(safe_name(""), "%");
        assert_eq!(safe_name("."), "%2E");
        assert_eq!(safe_name(".."), "%2E.");
        assert_eq!(safe_name(".hidden"), "%2Ehidden");
        assert_eq!(safe_name("../../etc/passwd"), "%2E.%2F..%2Fetc%2Fpasswd");
        assert_eq!(safe_name("/abs"), "%2Fabs");
    }

    #[test]
    fn distinct_names_stay_distinct() {
        let names = ["", "%", ".", "%2E", "a/b", "a%2Fb", "..", "%2E."];
        let safe: std::collections::HashSet<String> = names.iter().map(|n| safe_name(n)).collect();
        assert_eq!(safe.len(), names.len());
    }
}
