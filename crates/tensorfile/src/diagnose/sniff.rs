//! Files that are not tensor files at all: zeros, Git LFS pointers, HTML pages, JSON bodies,
//! other known formats (by their magic bytes), plain text.

use super::{Diagnosis, Sample};

/// Bytes looked at for text, HTML and JSON.
const TEXT_BYTES: usize = 64 << 10;
/// Bytes scanned for leading zeros (a mapped file is scanned this far at most).
const ZERO_BYTES: usize = 256 << 20;
/// Leading zeros that say the content is missing: more than any magic and its first fields.
const LEAST_ZEROS: usize = 16;
/// Characters kept of a title, an error text or a line.
const SHOWN_CHARS: usize = 100;
/// The longest pointer git-lfs writes or accepts.
const MAX_LFS_POINTER: u64 = crate::source::lfs_pointer::MAX_LFS_POINTER as u64;

/// Zeros, an LFS pointer, an HTML page, a JSON document or another known format: what the
/// sample is, when its bytes say so (plain text is [`text`], asked last).
pub(super) fn structured(s: &Sample) -> Option<Diagnosis> {
    zeros(s).or_else(|| lfs_pointer(s)).or_else(|| html(s)).or_else(|| json(s)).or_else(|| foreign(s.head()))
}

fn zeros(s: &Sample) -> Option<Diagnosis> {
    let scan = &s.head()[..s.head().len().min(ZERO_BYTES)];
    let zeros = scan.iter().position(|&b| b != 0).unwrap_or(scan.len());
    (zeros >= LEAST_ZEROS || (zeros as u64 == s.len() && zeros > 0))
        .then_some(Diagnosis::Zeros { zeros: zeros as u64, len: s.len() })
}

/// A Git LFS pointer (read as git-lfs writes it, [`crate::source::lfs_pointer::parse_pointer`]).
fn lfs_pointer(s: &Sample) -> Option<Diagnosis> {
    if s.len() > MAX_LFS_POINTER || !s.whole() {
        return None;
    }
    let p = crate::source::lfs_pointer::parse_pointer(s.head())?;
    Some(Diagnosis::LfsPointer { oid: format!("sha256:{}", hex::encode(p.sha256)), size: p.size })
}

/// The first bytes as text: at most [`TEXT_BYTES`], a UTF-8 character cut at the end dropped,
/// a byte-order mark skipped; `None` when they are not text (a NUL, invalid UTF-8, control
/// characters other than whitespace).
fn text_head(s: &Sample) -> Option<&str> {
    let head = &s.head()[..s.head().len().min(TEXT_BYTES)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // A character cut by the sample's end, not by the file's.
        Err(e) if e.error_len().is_none() && head.len() < s.len() as usize => {
            std::str::from_utf8(&head[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bad = text.chars().filter(|c| c.is_control() && !c.is_whitespace()).count();
    (!text.trim().is_empty() && bad == 0).then_some(text)
}

fn html(s: &Sample) -> Option<Diagnosis> {
    let text = text_head(s)?;
    let lower = text.to_ascii_lowercase();
    let start = lower.trim_start();
    let is_html = start.starts_with("<!doctype html")
        || start.starts_with("<html")
        || (start.starts_with('<') && ["<head", "<body", "<title"].iter().any(|t| lower.contains(t)));
    if !is_html {
        return None;
    }
    // `<title ...>` up to `</title>`, both found in the lowercase copy (same byte offsets:
    // lowercasing ASCII keeps every character's length).
    let title = lower.find("<title").and_then(|at| {
        let open = at + lower[at..].find('>')? + 1;
        let close = open + lower[open..].find("</title")?;
        Some(shown(&unescape(&text[open..close])))
    });
    Some(Diagnosis::Html { title: title.filter(|t| !t.is_empty()) })
}

/// The few entities page titles use.
fn unescape(s: &str) -> String {
    let pairs = [("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&#x27;", "'")];
    let mut out = s.to_string();
    for (from, to) in [("&nbsp;", " "), ("&ndash;", "–"), ("&mdash;", "—"), ("&middot;", "·")] {
        out = out.replace(from, to);
    }
    // `&amp;` last: `&amp;lt;` is the text `&lt;`.
    for (from, to) in pairs.iter().skip(1).chain(pairs.iter().take(1)) {
        out = out.replace(from, to);
    }
    out
}

/// `s` with runs of whitespace made one space, trimmed, control characters dropped, at most
/// [`SHOWN_CHARS`] characters (then `…`).
fn shown(s: &str) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    let flat: String = words.join(" ").chars().filter(|c| !c.is_control()).collect();
    if flat.chars().count() <= SHOWN_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(SHOWN_CHARS).collect();
    cut.push('…');
    cut
}

/// A JSON document (a shard index opens before any diagnosis: this is anything else). Its
/// `error` or `message` text is shown when the whole document is in the sample.
fn json(s: &Sample) -> Option<Diagnosis> {
    let text = text_head(s)?;
    if !text.trim_start().starts_with(['{', '[']) {
        return None;
    }
    if !s.whole() {
        return Some(Diagnosis::Json { error: None });
    }
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let error = ["error", "message", "detail", "errors"].iter().find_map(|k| message_of(value.get(k)?));
    Some(Diagnosis::Json { error: error.map(|e| shown(&e)).filter(|e| !e.is_empty()) })
}

/// The text of an error value: a string, an object's `message` or `error`, an array's first.
fn message_of(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => ["message", "error", "detail"].iter().find_map(|k| message_of(o.get(*k)?)),
        serde_json::Value::Array(a) => message_of(a.first()?),
        _ => None,
    }
}

/// Plain text: its first non-empty line.
pub(super) fn text(s: &Sample) -> Option<Diagnosis> {
    let text = text_head(s)?;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(Diagnosis::Text { first_line: shown(line) })
}

/// Formats tensorfile does not read, by their leading bytes.
const MAGICS: &[(&[u8], &str)] = &[
    (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x7fELF", "an ELF executable or library"),
    (b"MZ", "a Windows executable"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable or library"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x00asm", "a WebAssembly module"),
    (b"TFL3", "a TensorFlow Lite model"),
];

/// Another format, by its magic: the table above, a tar archive, a zip archive of no tensor
/// format, or a pickle that is not a `torch.save` file.
fn foreign(head: &[u8]) -> Option<Diagnosis> {
    let what = if let Some((_, what)) = MAGICS.iter().find(|(m, _)| head.starts_with(m)) {
        (*what).to_string()
    } else if head.get(257..262) == Some(b"ustar") {
        "a tar archive".to_string()
    } else if head.get(4..8) == Some(b"TFL3") {
        "a TensorFlow Lite model".to_string()
    } else if head.starts_with(b"PK\x05\x06") {
        "an empty zip archive".to_string()
    } else if head.starts_with(b"PK\x03\x04") {
        zip_of(head)
    } else if head.first() == Some(&0x80) && head.get(1).is_some_and(|v| (2..=5).contains(v)) {
        "a plain Python pickle".to_string()
    } else {
        return None;
    };
    Some(Diagnosis::Foreign { what })
}

/// A zip archive, named by its first entry when that is in the sample.
fn zip_of(head: &[u8]) -> String {
    let name_len = head.get(26..28).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let name = name_len.and_then(|n| head.get(30..30 + n)).and_then(|n| std::str::from_utf8(n).ok());
    match name {
        Some(n) if !n.is_empty() => format!("a zip archive of no tensor format (first entry {:?})", shown(n)),
        _ => "a zip archive of no tensor format".to_string(),
    }
}
