//! `tensorfile info FILE`: what a file is, at a glance.

use std::io::Write;

use tensorfile::facts::FileFacts;
use tensorfile::model::MetaValue;
use tensorfile::parameters::Parameters;

use super::Outcome;
use crate::render;

/// Show a file's format, version, size, entry counts, dtypes and metadata.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::input::Input,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The facts as text.
fn write_text(f: &FileFacts, path: &str, out: &mut dyn Write) -> std::io::Result<()> {
    let dtypes: Vec<String> = f.dtypes.iter().map(|(d, n)| format!("{d} x{n}")).collect();
    let mut pairs = vec![
        ("file".to_string(), render::printable(path).into_owned()),
        ("format".into(), f.format.into()),
        ("version".into(), if f.version.is_empty() { "-".into() } else { f.version.clone() }),
        ("size".into(), render::size_exact(f.file_bytes)),
        ("tensors".into(), f.tensors.to_string()),
        ("blobs".into(), f.blobs.to_string()),
        ("unreadable".into(), f.unreadable.to_string()),
        ("data".into(), render::size_exact(f.data_bytes)),
        ("stored".into(), render::size_exact(f.stored_bytes)),
        ("dtypes".into(), if dtypes.is_empty() { "-".into() } else { dtypes.join(", ") }),
    ];
    pairs.extend(parameter_lines(&f.parameters));
    pairs.extend(f.details.iter().map(|(k, v)| (render::printable(k).into_owned(), meta_text(v))));
    render::key_values(out, "", &pairs)?;
    if !f.metadata.is_empty() {
        writeln!(out, "metadata:")?;
        let pairs: Vec<(String, String)> =
            f.metadata.iter().map(|(k, v)| (render::printable(k).into_owned(), meta_text(v))).collect();
        render::key_values(out, "  ", &pairs)?;
    }
    if let Some(s) = &f.structure {
        out.write_all(s.text.as_bytes())?;
    }
    Ok(())
}

/// `parameters  1,235,814,400 (bfloat16 1,235,814,400)`, then the size at each width of
/// [`tensorfile::parameters::WIDTHS`] (`at float16/bfloat16  2.3 GiB (2471628800 bytes)`).
fn parameter_lines(p: &Parameters) -> Vec<(String, String)> {
    let by: Vec<String> = p.by_dtype.iter().map(|(d, n)| format!("{d} {}", thousands(*n))).collect();
    let by = if by.is_empty() { String::new() } else { format!(" ({})", by.join(", ")) };
    let mut lines = vec![("parameters".to_string(), format!("{}{by}", thousands(p.total)))];
    for (width, bytes) in &p.size_at {
        let width = if *width == "float16" { "float16/bfloat16" } else { width };
        lines.push((format!("at {width}"), render::size_exact(*bytes)));
    }
    lines
}

/// `1235814400` as `1,235,814,400`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Arrays longer than this show their length, element type and first elements only.
const LONG_ARRAY: usize = 8;
/// How many elements of a long array are shown.
const SHOWN: usize = 3;

/// A metadata value on one line: text as is, a long typed array summarised
/// (`[151936 × string: "!", "\"", "#", …]`), anything else as JSON.
fn meta_text(value: &MetaValue) -> String {
    match value {
        MetaValue::Text(s) => render::printable(s).into_owned(),
        MetaValue::TypedArray(a) if a.len() > LONG_ARRAY => {
            let first: Vec<String> = (0..SHOWN).filter_map(|i| a.get(i)).map(|v| item_text(&v)).collect();
            format!("[{} × {}: {}, …]", a.len(), a.element_name(), first.join(", "))
        }
        other => render::printable(&other.to_json().to_string()).into_owned(),
    }
}

/// An element of a long array: as JSON (text quoted), or summarised when it is an array.
fn item_text(value: &MetaValue) -> String {
    match value {
        MetaValue::TypedArray(_) => meta_text(value),
        other => render::printable(&other.to_json().to_string()).into_owned(),
    }
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = args.input.open()?;
    let facts = FileFacts::of(&file);
    let path = args.input.file.display().to_string();
    if args.json {
        render::json(out, &facts.to_json(&path))?;
    } else {
        write_text(&facts, &path, out)?;
    }
    Ok(Outcome::Success)
}
