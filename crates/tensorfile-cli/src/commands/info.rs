//! `tensorfile info FILE`: what a file is, at a glance.

use std::io::Write;

use tensorfile::inspect::FileFacts;

use crate::outcome::Outcome;
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
    let printable = |lines: Vec<(String, String)>| -> Vec<(String, String)> {
        lines
            .into_iter()
            .map(|(k, v)| (render::printable(&k).into_owned(), render::printable(&v).into_owned()))
            .collect()
    };
    render::key_values(out, "", &printable(f.lines(path)))?;
    if !f.metadata.is_empty() {
        writeln!(out, "metadata:")?;
        render::key_values(out, "  ", &printable(f.metadata_lines()))?;
    }
    if let Some(s) = &f.structure {
        out.write_all(s.text.as_bytes())?;
    }
    Ok(())
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
