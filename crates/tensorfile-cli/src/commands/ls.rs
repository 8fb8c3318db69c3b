//! `tensorfile ls FILE`: one row per entry.

use std::io::Write;
use std::path::Path;

use serde_json::Value as Json;
use tensorfile::inspect::{self as listing, EntryRow};
use tensorfile::{Entry, TensorFile};

use crate::outcome::Outcome;
use crate::render::{self, Table};

/// List the entries of a file, one per row.
///
/// Columns: name, dtype, shape, decoded bytes, kind, layout, encoding, stored bytes,
/// checksum, for a sharded checkpoint the shard file holding the entry, and when any entry
/// has them, its other fields (custom keys of a `.zt` entry...) as `key=value`. Entries the
/// file declares but that cannot be read are listed too, with the reason.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::input::Input,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = args.input.open()?;
    if args.json {
        render::json(out, &Json::Array(listing::entry_rows(&file)))?;
    } else {
        table(&file).write(out)?;
    }
    Ok(Outcome::Success)
}

const COLUMNS: [(&str, bool); 9] = [
    ("NAME", false),
    ("DTYPE", false),
    ("SHAPE", false),
    ("BYTES", true),
    ("KIND", false),
    ("LAYOUT", false),
    ("ENCODING", false),
    ("STORED", true),
    ("CHECKSUM", false),
];

/// Other fields of an entry, compactly: `key=value key2={"a":1}`.
fn fields(e: &Entry) -> String {
    let pairs = e.info().extra().iter().map(|(k, v)| format!("{}={}", render::printable(k), v.to_json()));
    pairs.collect::<Vec<_>>().join(" ")
}

fn table(file: &TensorFile) -> Table {
    let rows = listing::rows(file);
    let any_fields = file.entries().iter().any(|e| !e.info().extra().is_empty());
    let is_set = file.is_set();
    let mut columns = COLUMNS.to_vec();
    if is_set {
        columns.push(("SHARD", false));
    }
    if any_fields {
        columns.push(("FIELDS", false));
    }
    let mut table = Table::new(&columns);
    for row in rows {
        table.push(match row {
            EntryRow::Readable { entry: e, shard } => {
                let mut cells = vec![
                    render::printable(e.info().name()).into_owned(),
                    e.info().dtype().name().to_string(),
                    render::shape(e.info().shape()),
                    e.nbytes().to_string(),
                    e.info().kind().name().to_string(),
                    e.info().layout().describe(),
                    e.storage().encoding().name().to_string(),
                    e.storage().len().to_string(),
                    e.storage().checksum().map(|c| c.to_string()).unwrap_or_default(),
                ];
                if let Some(shard) = shard {
                    // The file name: the shards of a set share a folder, most of the time.
                    let name = shard.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
                    cells.push(render::printable(&name.unwrap_or_default()).into_owned());
                }
                if any_fields {
                    cells.push(fields(e));
                }
                cells
            }
            EntryRow::Unreadable(u) => vec![
                render::printable(u.name()).into_owned(),
                render::printable(u.dtype()).into_owned(),
                render::shape(u.shape()),
                "-".into(),
                format!("unreadable: {}", render::printable(&render::hinted(u.error().message(), u.error().hint()))),
            ],
        });
    }
    table
}
