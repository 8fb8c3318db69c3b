//! `tensorfile ls FILE`: one row per entry.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value as Json, json};
use tensorfile::model::Unreadable;
use tensorfile::shards::ShardSet;
use tensorfile::{Entry, TensorFile};

use super::Outcome;
use crate::render::{self, Table};

/// List the entries of a file, one per row.
///
/// Columns: name, dtype, shape, decoded bytes, kind, layout, encoding, stored bytes,
/// checksum, for a sharded checkpoint the shard file holding the entry, and when any entry
/// has them, its other fields (custom keys of a `.zt` entry...) as `key=value`. Entries the
/// file declares but that cannot be read are listed too, with the reason.
#[derive(clap::Args)]
pub struct Args {
    /// The tensor file, or a sharded checkpoint: its index (model.safetensors.index.json) or
    /// its folder. A URL (http(s)://, s3://, gs://, az://) reads a remote file by range.
    file: PathBuf,
    /// The `.ptd` file holding an ExecuTorch program's external tensors.
    #[arg(long, value_name = "FILE.ptd")]
    data: Option<PathBuf>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = TensorFile::open_with_data(&args.file, args.data.as_deref())?;
    if args.json {
        let is_set = file.reader_as::<ShardSet>().is_some();
        let entries = file.entries().iter().enumerate().map(|(i, e)| {
            let mut row = entry_json(e);
            if is_set {
                row["shard"] = json!(file.shard_of(i).map(|p| p.display().to_string()));
            }
            row
        });
        let rows: Vec<Json> = entries.chain(file.unreadable().iter().map(unreadable_json)).collect();
        render::json(out, &Json::Array(rows))?;
    } else {
        table(&file).write(out)?;
    }
    Ok(Outcome::Success)
}

fn entry_json(e: &Entry) -> Json {
    let extra: Map<String, Json> = e.info.extra.iter().map(|(k, v)| (k.clone(), v.to_json())).collect();
    // Where an ExecuTorch program's tensor comes from (constant, external...), at top level.
    let source = extra.get("source").cloned();
    json!({
        "source": source,
        "name": e.info.name,
        "kind": e.info.kind.name(),
        "dtype": e.info.dtype.name(),
        "shape": e.info.shape,
        "nbytes": e.nbytes,
        "layout": e.info.layout.describe(),
        "encoding": e.storage.encoding.name(),
        "offset": e.storage.offset,
        "stored_bytes": e.storage.len,
        "byte_order": e.storage.byte_order.name(),
        "checksum": e.storage.checksum.map(|c| c.to_string()),
        "extra": extra,
    })
}

fn unreadable_json(u: &Unreadable) -> Json {
    json!({
        "name": u.name,
        "kind": "unreadable",
        "dtype": u.dtype,
        "shape": u.shape,
        "error": u.error.message(),
        "rule": u.error.rule().map(|r| r.id()),
    })
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
    let pairs = e.info.extra.iter().map(|(k, v)| format!("{}={}", render::printable(k), v.to_json()));
    pairs.collect::<Vec<_>>().join(" ")
}

fn table(file: &TensorFile) -> Table {
    let any_fields = file.entries().iter().any(|e| !e.info.extra.is_empty());
    let is_set = file.reader_as::<ShardSet>().is_some();
    let mut columns = COLUMNS.to_vec();
    if is_set {
        columns.push(("SHARD", false));
    }
    if any_fields {
        columns.push(("FIELDS", false));
    }
    let mut table = Table::new(&columns);
    for (i, e) in file.entries().iter().enumerate() {
        let mut row = vec![
            render::printable(&e.info.name).into_owned(),
            e.info.dtype.name().to_string(),
            render::shape(&e.info.shape),
            e.nbytes.to_string(),
            e.info.kind.name().to_string(),
            e.info.layout.describe(),
            e.storage.encoding.name().to_string(),
            e.storage.len.to_string(),
            e.storage.checksum.map(|c| c.to_string()).unwrap_or_default(),
        ];
        if is_set {
            // The file name: the shards of a set share a folder, most of the time.
            let shard = file.shard_of(i).and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
            row.push(render::printable(&shard.unwrap_or_default()).into_owned());
        }
        if any_fields {
            row.push(fields(e));
        }
        table.push(row);
    }
    for u in file.unreadable() {
        table.push(vec![
            render::printable(&u.name).into_owned(),
            render::printable(&u.dtype).into_owned(),
            render::shape(&u.shape),
            "-".into(),
            format!("unreadable: {}", render::printable(&with_hint(&u.error))),
        ]);
    }
    table
}

/// An entry's error with the library's hint in this tool's terms.
fn with_hint(e: &tensorfile::Error) -> String {
    match e.hint() {
        Some(h) => format!("{} ({})", e.message(), render::hint(h)),
        None => e.message(),
    }
}
