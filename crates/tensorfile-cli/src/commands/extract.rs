//! `tensorfile extract FILE [NAME...] -o DIR`: tensors as NumPy `.npy` files.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use tensorfile::executorch::DelegatePayload;
use tensorfile::inspect::{numpy_descr, write_npy};
use tensorfile::io::write_atomically;
use tensorfile::model::{PartSpec, Unreadable};
use tensorfile::{DType, Entry, Error, Kind, TensorData, TensorFile};

use crate::outcome::Outcome;
use crate::render;
use crate::safe_name::{fitted, safe_name};

/// Write tensors into a folder as NumPy .npy files.
///
/// An entry that cannot be read or written is reported and the others are still written;
/// the exit status is then 1.
///
/// Each tensor becomes `<name>.npy`, or `<name>.<dtype>.bin` (raw little-endian bytes) for
/// dtypes NumPy lacks; blobs become `<name>.bin`; tensors of other layouts one file per
/// part: sparse tensors `<name>.indices.npy`, `<name>.values.npy` and, for CSR,
/// `<name>.indptr.npy` (indices as uint64), unless --dense decodes them. In file names
/// `/`, `\`, NUL and `%` are percent-encoded and a leading `.` becomes `%2E`, so every
/// file stays inside the folder. A file name longer than 200 bytes is cut, with a hash of
/// the tensor's name to keep it distinct; shortened-names.json beside it maps it to the name.
#[derive(clap::Args)]
pub struct Args {
    /// The tensor file, or a sharded checkpoint: its index (model.safetensors.index.json) or
    /// its folder. A URL (http(s)://, s3://, gs://, az://) reads a remote file by range.
    file: PathBuf,
    /// The `.ptd` file holding an ExecuTorch program's external tensors.
    #[arg(long, value_name = "FILE.ptd")]
    data: Option<PathBuf>,
    /// Names of the entries to extract (all of them when none is given).
    names: Vec<String>,
    /// The folder to write into; created when missing.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    /// Write the delegate payloads of an ExecuTorch program instead, each as
    /// `<method>.delegate<N>.<backend id>.bin`.
    #[arg(long)]
    delegates: bool,
    /// Decode every tensor to dense before writing it (a sparse tensor becomes one
    /// `<name>.npy` holding zeros where nothing is stored), instead of one file per part.
    #[arg(long)]
    dense: bool,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    verify: super::input::VerifyArgs,
}

/// One file to write: one part of an entry's data (the dense data, a blob's bytes, a sparse
/// tensor's indices or values...).
struct OutputFile {
    path: PathBuf,
    /// The part's role (`data` for dense data), its dtype and shape; `None`: the entry
    /// decoded to dense (`--dense`).
    part: Option<PartSpec>,
    /// `.npy`, or raw bytes.
    npy: bool,
    /// The file name is shortened from the tensor's (listed in [`NAME_MAP`]).
    shortened: bool,
}

/// The file beside the extracted ones that maps each shortened file name to its tensor's name.
const NAME_MAP: &str = "shortened-names.json";

/// An entry that could not be extracted.
struct Failure {
    name: String,
    message: String,
    rule: Option<&'static str>,
}

impl Failure {
    fn of(name: &str, err: &Error) -> Failure {
        Failure { name: name.to_string(), message: err.to_string(), rule: err.rule().map(|r| r.id()) }
    }

    fn unreadable(file: &Path, u: &Unreadable) -> Failure {
        let message = format!("{}: cannot read {:?}: {}", file.display(), u.name(), u.error().message());
        Failure { name: u.name().to_string(), message, rule: u.error().rule().map(|r| r.id()) }
    }
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = if args.verify.asked() {
        args.verify.open(&args.file, args.data.as_deref())?
    } else {
        super::input::open_with_data(&args.file, args.data.as_deref())?
    };
    if args.delegates {
        return delegates(&file, &args, out);
    }
    let (selected, mut failures) = select(&file, &args.file, &args.names)?;
    let mut plans: Vec<(usize, Vec<OutputFile>)> = Vec::new();
    for index in selected {
        let entry = &file.entries()[index];
        match output_files(entry, &args.output, args.dense) {
            Ok(files) => plans.push((index, files)),
            Err(err) => failures.push(Failure::of(entry.info().name(), &err.in_file(&args.file))),
        }
    }
    check_distinct(&file, &args.file, &plans)?;
    crate::output_folder::create(&args.output)?;
    let mut written = Vec::new();
    for (index, files) in &plans {
        let entry = &file.entries()[*index];
        match extract_entry(&file, *index, files) {
            Ok(()) => written.push((entry, files.as_slice())),
            Err(err) => failures.push(Failure::of(entry.info().name(), &err)),
        }
    }
    let name_map = write_name_map(&args.output, &written)?;
    for f in &failures {
        eprintln!("tensorfile: {}", f.message);
    }
    print_result(args.json, &written, &failures, name_map.as_deref(), out)?;
    Ok(Outcome::failure_if(!failures.is_empty()))
}

/// Reads entry `index` and writes its files: all of them, or none (the ones written before a
/// failure are removed), so that one entry that cannot be read or written leaves the others
/// to be extracted.
fn extract_entry(file: &TensorFile, index: usize, files: &[OutputFile]) -> tensorfile::Result<()> {
    let entry = &file.entries()[index];
    let data = file.read_verified(index)?;
    for (k, f) in files.iter().enumerate() {
        let wrote = write_atomically(&f.path, |w| write_part(w, entry, &data, f));
        if let Err(err) = wrote {
            for done in &files[..k] {
                let _ = std::fs::remove_file(&done.path);
            }
            return Err(err.for_tensor(entry.info().name()).in_file(&f.path));
        }
    }
    Ok(())
}

/// `--delegates`: each delegate payload of a program as a file.
fn delegates(file: &TensorFile, args: &Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let payloads = tensorfile::executorch::delegate_payloads(file)?
        .ok_or_else(|| Error::usage(format!("{}: --delegates is for ExecuTorch programs", args.file.display())))?;
    crate::output_folder::create(&args.output)?;
    let mut written = Vec::new();
    for DelegatePayload { method, index, id, bytes } in &payloads {
        // Shortened as tensors' names are when too long for a file name (the path says which).
        let stem = format!("{}.delegate{index}.{}", safe_name(method), safe_name(id));
        let path = args.output.join(fitted(&stem, ".bin", &stem).0);
        write_atomically(&path, |w| Ok(w.write_all(bytes)?)).map_err(|e| e.in_file(&path))?;
        written.push(json!({ "method": method, "index": index, "id": id, "bytes": bytes.len(), "file": path.display().to_string() }));
        if !args.json {
            writeln!(
                out,
                "{method} delegate {index} ({id}, {} bytes) -> {}",
                bytes.len(),
                render::printable(&path.display().to_string())
            )?;
        }
    }
    if args.json {
        render::json(out, &json!({ "delegates": written }))?;
    } else if payloads.is_empty() {
        writeln!(out, "no delegates in {}", args.file.display())?;
    }
    Ok(Outcome::Success)
}

/// What was written (`name -> path` lines, or JSON with the failures too), and where the
/// shortened names are listed.
fn print_result(
    json: bool,
    written: &[(&Entry, &[OutputFile])],
    failures: &[Failure],
    name_map: Option<&Path>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if json {
        let extracted: Vec<_> = written
            .iter()
            .map(|(e, files)| {
                let paths: Vec<_> = files.iter().map(|f| f.path.display().to_string()).collect();
                json!({ "name": e.info().name(), "files": paths })
            })
            .collect();
        let failed: Vec<_> =
            failures.iter().map(|f| json!({ "name": f.name, "error": f.message, "rule": f.rule })).collect();
        let names = name_map.map(|p| p.display().to_string());
        return render::json(out, &json!({ "extracted": extracted, "failed": failed, "shortened_names": names }));
    }
    for (e, files) in written {
        for f in files.iter() {
            let path = f.path.display().to_string();
            writeln!(out, "{} -> {}", render::printable(e.info().name()), render::printable(&path))?;
        }
    }
    if let Some(path) = name_map {
        let path = path.display().to_string();
        writeln!(out, "names too long for a file name were shortened: listed in {}", render::printable(&path))?;
    }
    Ok(())
}

/// Indices of the entries to extract, in file order when all are, and the unreadable ones
/// asked for. An unknown name is an error.
fn select(file: &TensorFile, path: &Path, names: &[String]) -> tensorfile::Result<(Vec<usize>, Vec<Failure>)> {
    if names.is_empty() {
        let failures = file.unreadable().iter().map(|u| Failure::unreadable(path, u)).collect();
        return Ok(((0..file.entries().len()).collect(), failures));
    }
    let mut selected = Vec::new();
    let mut failures = Vec::new();
    for (k, name) in names.iter().enumerate() {
        if names[..k].contains(name) {
            continue;
        }
        match (file.index_of(name), file.unreadable().iter().find(|u| u.name() == name)) {
            (Some(i), _) => selected.push(i),
            (None, Some(u)) => failures.push(Failure::unreadable(path, u)),
            (None, None) => return Err(Error::not_found(name.as_str()).in_file(path)),
        }
    }
    Ok((selected, failures))
}

/// The files an entry becomes: one per part of its layout (`<name>.npy` for dense data,
/// `<name>.<part>.npy` for each part of any other layout), or one of the entry decoded to
/// dense. A name too long for a file system is shortened ([`fitted`]).
fn output_files(entry: &Entry, dir: &Path, dense: bool) -> tensorfile::Result<Vec<OutputFile>> {
    let name = entry.info().name();
    let base = safe_name(name);
    let at = |tail: String, part: Option<PartSpec>, npy: bool| {
        let (file_name, shortened) = fitted(&base, &tail, name);
        OutputFile { path: dir.join(file_name), part, npy, shortened }
    };
    // Data of a dtype NumPy has goes into .npy; any other into raw .<dtype>.bin.
    let file = |suffix: String, dtype: DType, part: Option<PartSpec>| match numpy_descr(dtype) {
        Some(_) => at(format!("{suffix}.npy"), part, true),
        None => at(format!("{suffix}.{dtype}.bin"), part, false),
    };
    let parts = entry.info().parts().map_err(|e| e.for_tensor(name))?;
    Ok(match (entry.info().kind(), parts.as_slice()) {
        (Kind::Blob, _) => vec![at(".bin".into(), parts.first().cloned(), false)],
        (_, [_]) => vec![file(String::new(), entry.info().dtype(), parts.first().cloned())],
        _ if dense => vec![file(String::new(), entry.info().dtype(), None)],
        _ => parts.into_iter().map(|p| file(format!(".{}", p.name()), p.dtype(), Some(p))).collect(),
    })
}

/// Adds the shortened file names among `written` to [`NAME_MAP`] in `dir` (file name ->
/// tensor name, JSON, merged with the one an earlier extract left there); its path, when any
/// name was shortened.
fn write_name_map(dir: &Path, written: &[(&Entry, &[OutputFile])]) -> tensorfile::Result<Option<PathBuf>> {
    let shortened: Vec<(String, &str)> = written
        .iter()
        .flat_map(|(e, files)| files.iter().filter(|f| f.shortened).map(move |f| (f, e.info().name())))
        .filter_map(|(f, name)| Some((f.path.file_name()?.to_string_lossy().into_owned(), name)))
        .collect();
    if shortened.is_empty() {
        return Ok(None);
    }
    let path = dir.join(NAME_MAP);
    let mut map = match std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok()) {
        Some(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    for (file_name, name) in shortened {
        map.insert(file_name, name.into());
    }
    let text = serde_json::to_string_pretty(&map).map_err(|e| Error::unsupported(e.to_string()))?;
    write_atomically(&path, |w| Ok(writeln!(w, "{text}")?)).map_err(|e| e.in_file(&path))?;
    Ok(Some(path))
}

/// Refuse to write two entries' data into the same file (`a.indices` dense and `a` sparse...).
fn check_distinct(file: &TensorFile, path: &Path, plans: &[(usize, Vec<OutputFile>)]) -> anyhow::Result<()> {
    let mut owners: HashMap<&Path, &str> = HashMap::new();
    for (index, files) in plans {
        let name = file.entries()[*index].info().name();
        for f in files {
            if let Some(other) = owners.insert(&f.path, name) {
                anyhow::bail!(
                    "{}: tensors {other:?} and {name:?} would both be written to {}; extract them one at a time into different folders",
                    path.display(),
                    f.path.display()
                );
            }
        }
    }
    Ok(())
}

/// Write one part of `data` (decoded from `entry`), or all of it decoded to dense, to `out`.
fn write_part(out: &mut dyn Write, entry: &Entry, data: &TensorData, file: &OutputFile) -> tensorfile::Result<()> {
    let info = &entry.info();
    let (dtype, shape, bytes) = match &file.part {
        Some(part) => {
            let bytes = data.part(part.name()).ok_or_else(|| {
                Error::unsupported(format!("no {} part in the data read", part.name())).for_tensor(info.name())
            })?;
            (part.dtype(), part.shape().to_vec(), bytes.clone())
        }
        None => (info.dtype(), info.shape().to_vec(), data.to_dense(info.dtype(), info.shape())?),
    };
    if file.npy {
        write_npy(out, dtype, &shape, &bytes).map_err(|e| e.for_tensor(info.name()))
    } else {
        out.write_all(&bytes).map_err(Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorfile::model::{SparseFormat, Storage};
    use tensorfile::{Layout, TensorInfo};

    fn entry(info: TensorInfo) -> Entry {
        Entry::new(info, Storage::new(0, 0)).unwrap()
    }

    fn names(info: TensorInfo) -> Vec<String> {
        output_files(&entry(info), Path::new("d"), false)
            .unwrap()
            .iter()
            .map(|f| f.path.display().to_string())
            .collect()
    }

    #[test]
    fn file_names_follow_kind_dtype_and_layout() {
        assert_eq!(names(TensorInfo::dense("a/w", DType::Float32, vec![2])), ["d/a%2Fw.npy"]);
        assert_eq!(names(TensorInfo::dense("n", DType::BFloat16, vec![2])), ["d/n.bfloat16.bin"]);
        assert_eq!(names(TensorInfo::blob("cfg", 3)), ["d/cfg.bin"]);
        let csr = Layout::Sparse { format: SparseFormat::Csr, nnz: 1 };
        let info = TensorInfo::dense("s", DType::Float8E5M2, vec![2, 2]).with_layout(csr).unwrap();
        assert_eq!(names(info), ["d/s.indptr.npy", "d/s.indices.npy", "d/s.values.float8_e5m2.bin"]);
    }
}
