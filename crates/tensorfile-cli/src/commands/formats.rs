//! `tensorfile formats`: every format the library knows, and what its files can hold.

use std::io::Write;

use serde_json::Value as Json;
use tensorfile::inspect as listing;

use crate::outcome::Outcome;
use crate::render::{self, Table};

/// List the formats: name, what it is, the output extensions that ask for it, whether it can
/// be written and updated and its metadata edited (`meta`), and what its files hold (layouts, checksums, compression, byte
/// orders, file metadata, dtypes).
#[derive(clap::Args)]
pub struct Args {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let rows = listing::format_rows();
    if args.json {
        render::json(out, &Json::Array(rows))?;
        return Ok(Outcome::Success);
    }
    let mut table = Table::new(&[
        ("NAME", false),
        ("TITLE", false),
        ("EXTENSIONS", false),
        ("WRITE", false),
        ("UPDATE", false),
        ("META", false),
        ("LAYOUTS", false),
        ("CHECKSUMS", false),
        ("COMPRESSION", false),
        ("BYTE ORDERS", false),
        ("METADATA", false),
        ("DTYPES", true),
    ]);
    for row in &rows {
        let caps = &row["caps"];
        let text = |v: &Json| v.as_str().unwrap_or_default().to_string();
        let list = |v: &Json| {
            let items: Vec<String> = v.as_array().into_iter().flatten().map(text).collect();
            if items.is_empty() { "-".to_string() } else { items.join(",") }
        };
        let yes = |v: &Json| if v.as_bool() == Some(true) { "yes" } else { "no" }.to_string();
        let extensions: Vec<String> =
            row["extensions"].as_array().into_iter().flatten().map(|e| format!(".{}", text(e))).collect();
        table.push(vec![
            text(&row["name"]),
            text(&row["title"]),
            extensions.join(" "),
            yes(&row["write"]),
            yes(&row["update"]),
            yes(&row["edit_metadata"]),
            list(&caps["layouts"]),
            list(&caps["checksums"]),
            yes(&caps["compression"]),
            list(&caps["byte_orders"]),
            yes(&caps["file_metadata"]),
            caps["dtypes"].as_array().map_or(0, Vec::len).to_string(),
        ]);
    }
    table.write(out)?;
    Ok(Outcome::Success)
}
