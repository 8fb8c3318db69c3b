//! Text output shared by the commands: JSON, aligned tables and key/value blocks, sizes.

use std::borrow::Cow;
use std::io::{self, Write};

use serde_json::Value as Json;

/// Write `value` as pretty JSON followed by a newline.
pub fn json(out: &mut dyn Write, value: &Json) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// `text` safe to print on one line: control characters (newlines, escapes...) escaped.
pub fn printable(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_control) {
        Cow::Owned(text.chars().flat_map(|c| c.escape_debug()).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// A shape as `[2, 3]`; a scalar is `[]`.
pub fn shape(dims: &[u64]) -> String {
    format!("{dims:?}")
}

/// `n` things: `1 tensor`, `2 tensors`.
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

pub use tensorfile::inspect::size;

/// Lines of `key  value`, the values aligned, each line starting with `indent`.
pub fn key_values(out: &mut dyn Write, indent: &str, pairs: &[(String, String)]) -> io::Result<()> {
    let width = pairs.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    for (k, v) in pairs {
        writeln!(out, "{indent}{k:width$}  {v}")?;
    }
    Ok(())
}

/// A table: a header row, then rows of cells in aligned columns two spaces apart.
///
/// A row may have fewer cells than the header: its last cell is then free text running past
/// the columns. The last cell of a row is never padded, so it does not widen its column.
pub struct Table {
    header: Vec<&'static str>,
    right_aligned: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Columns named `header`; those with `right_aligned` set (numbers) align right.
    pub fn new(header: &[(&'static str, bool)]) -> Self {
        Table {
            header: header.iter().map(|(h, _)| *h).collect(),
            right_aligned: header.iter().map(|(_, r)| *r).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.len()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(&row[..row.len().saturating_sub(1)]) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let header: Vec<String> = self.header.iter().map(|h| h.to_string()).collect();
        let mut line = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
            line.clear();
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = widths[i].saturating_sub(cell.chars().count());
                let last = i + 1 == row.len();
                if self.right_aligned[i] && !last {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    if !last {
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

/// What the library suggests, in this tool's terms (its flags and commands).
pub fn hint(hint: tensorfile::Hint) -> String {
    use tensorfile::Hint;
    match hint {
        Hint::SkipUnsupported => "use --skip-unsupported to leave it out".into(),
        Hint::ProgramData => "open it with --data FILE.ptd".into(),
        Hint::SkipUnknown => "use --skip-unknown to ignore such tensors".into(),
        Hint::UseConvert => "use tensorfile convert".into(),
        Hint::Drop(option) => format!("leave out {}", job_option(option)),
        other => other.describe().into(),
    }
}

/// A conversion option as this tool's flag.
pub fn job_option(option: tensorfile::JobOption) -> String {
    format!("--{}", option.id())
}

/// A write option as this tool's flag.
pub fn write_option(option: tensorfile::formats::WriteOption) -> &'static str {
    use tensorfile::formats::WriteOption;
    match option {
        WriteOption::Compression => "--compress",
        WriteOption::Checksum => "--checksum",
        WriteOption::ByteOrder => "--big-endian",
        WriteOption::Metadata => "file metadata",
        _ => "an option",
    }
}

/// An error as this tool prints it: the library's message, then its hint in this tool's
/// terms.
pub fn error(err: &tensorfile::Error) -> String {
    hinted(err.to_string(), err.hint())
}

/// `text` (an error's message), followed by `hint` in this tool's terms when there is one.
pub fn hinted(text: String, hint_given: Option<tensorfile::Hint>) -> String {
    match hint_given {
        Some(h) => format!("{text} ({})", hint(h)),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(count(1, "tensor"), "1 tensor");
        assert_eq!(count(0, "blob"), "0 blobs");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a/b"), "a/b");
        assert_eq!(printable("a\nb\u{1b}"), "a\\nb\\u{1b}");
    }

    #[test]
    fn tables_align_and_let_short_rows_run_on() {
        let mut t = Table::new(&[("NAME", false), ("BYTES", true), ("NOTE", false)]);
        t.push(vec!["a".into(), "1000".into(), "".into()]);
        t.push(vec!["long_name".into(), "5".into(), "x".into()]);
        t.push(vec!["bad".into(), "unreadable: a long reason".into()]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let expected =
            "NAME       BYTES  NOTE\na           1000\nlong_name      5  x\nbad        unreadable: a long reason\n";
        assert_eq!(text, expected);
    }
}
