//! `tensorfile meta FILE -o OUT --set KEY=VALUE --delete KEY`: a file's metadata edited
//! (GGUF: any key of any type; safetensors: `__metadata__` text; zTensor 2: the file attributes,
//! any value), its tensors copied as they are.

use std::io::Write;
use std::path::PathBuf;

use tensorfile::{MetaEdit, MetaType, MetaValue, TensorFile, edit_metadata};

use crate::outcome::Outcome;
use crate::render;

/// Set and delete metadata keys, writing the result to OUT (which may be FILE itself: it is
/// replaced once the new file is complete). Tensor data is copied byte for byte.
///
/// A value's type is the one given (KEY:TYPE=VALUE; TYPE is str, bool, u8..u64, i8..i64,
/// f32, f64, or [TYPE] for an array), else the existing key's, else the value's own (true or
/// false a bool, an integer an i32, a decimal number an f32, [1, 2] an array, anything else
/// text). Arrays are written [1, 2, 3] or ["a", "b"]; @PATH gives a file's text (a chat
/// template), @@ a value starting with @. safetensors keeps text only.
#[derive(clap::Args)]
pub struct Args {
    /// The file to edit (GGUF, safetensors or zTensor 2).
    file: PathBuf,
    /// Where to write the edited file (may be FILE).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Set a key: KEY=VALUE or KEY:TYPE=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Delete a key (repeatable).
    #[arg(long = "delete", value_name = "KEY")]
    delete: Vec<String>,
    /// Print what changed as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let mut edit = MetaEdit::default();
    for s in &args.set {
        edit = edit.set(s)?;
    }
    for key in &args.delete {
        edit = edit.delete(key);
    }
    let file = TensorFile::open(&args.file)?;
    let report = edit_metadata(&file, &args.output, &edit)?;
    if args.json {
        render::json(out, &report.to_json(&args.output))?;
        return Ok(Outcome::Success);
    }
    let shown = |v: &Option<MetaValue>| match v {
        Some(v) => {
            let ty = MetaType::of(v).map(|t| format!(" ({})", t.name())).unwrap_or_default();
            format!("{}{ty}", v.to_json())
        }
        None => "(none)".to_string(),
    };
    for c in &report.changes {
        match &c.new {
            Some(_) => writeln!(out, "set {}: {} -> {}", c.key, shown(&c.old), shown(&c.new))?,
            None => writeln!(out, "deleted {}: was {}", c.key, shown(&c.old))?,
        }
    }
    writeln!(out, "wrote {}: {}", args.output.display(), render::count(report.changes.len(), "key"))?;
    Ok(Outcome::Success)
}
