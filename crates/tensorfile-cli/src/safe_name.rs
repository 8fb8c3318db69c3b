//! File names for tensors: any tensor name, made into one file name that stays in its folder.

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

#[cfg(test)]
mod tests {
    use super::*;

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
