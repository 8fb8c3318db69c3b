//! `tensorfile convert IN... OUT`: any readable format into any writable one; several inputs
//! merged, entries selected and renamed.

use std::io::Write;
use std::path::{Path, PathBuf};

use tensorfile::convert::parse_size;
use tensorfile::convert::{Progress, Selection};
use tensorfile::formats::WriteRequest;
use tensorfile::llama::QuantizeSizes;
use tensorfile::model::{ByteOrder, DType, cast};
use tensorfile::{Conversion, ConvertJob, Shards};

use crate::outcome::Outcome;
use crate::warning::warn;
use crate::{progress, render};

// The help's first sentence, naming the extensions written, is added from the library's
// registry (`format_texts::convert_help`).
/// `.zt` is written as zTensor v0.1, the format of the seed reference, unless --zt-version 2.
///
/// Tensors are streamed one at a time; the output is written atomically (an interrupted
/// conversion leaves any existing output untouched). The input can be a sharded checkpoint
/// (its index file or its folder), and --max-shard-size writes one. Any part of a split GGUF
/// model (model-00001-of-00003.gguf) reads as the whole model; converted to one .gguf, it is
/// merged as llama-gguf-split --merge merges it. Several inputs, of any formats, merge into one
/// output; --include, --exclude and --rename pick and rename tensors.
#[derive(clap::Args)]
#[command(override_usage = "tensorfile convert [OPTIONS] <INPUT>... <OUTPUT>")]
pub struct Args {
    /// INPUT... OUTPUT. The INPUTs: the files to read, merged in this order: each a file, or a sharded
    /// checkpoint (its index, model.safetensors.index.json, or its folder). A URL (http(s)://,
    /// s3://, gs://, az://) reads a remote file by range. A tensor name in two inputs is an
    /// error; file metadata is merged, the first input's value winning. OUTPUT (the last): the
    /// file to write; its extension picks the format.
    #[arg(required = true, num_args = 1.., value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The `.ptd` file holding an ExecuTorch program's external tensors (one input only).
    #[arg(long, value_name = "FILE.ptd")]
    data: Option<PathBuf>,
    /// Which zTensor a .zt output is: 0.1 (zTensor v0.1, the format of the seed reference:
    /// the default) or 2 (zTensor 2, as pip ztensor 2.x writes it, in canonical form).
    #[arg(long, value_name = "0.1|2")]
    zt_version: Option<String>,
    /// Compression of the written data (zTensor): none, zstd or zstd:LEVEL.
    #[arg(long, value_name = "none|zstd[:LEVEL]")]
    compress: Option<String>,
    /// Checksum of each written tensor (zTensor) [default: the library's, crc32c].
    #[arg(long, value_name = "crc32c|sha256|none")]
    checksum: Option<String>,
    /// Store raw multi-byte data big-endian (zTensor without compression).
    #[arg(long)]
    big_endian: bool,
    /// Leave out tensors the output format cannot hold, or that cannot be read, with a warning.
    #[arg(long)]
    skip_unsupported: bool,
    /// Do not check stored checksums while reading.
    #[arg(long, conflicts_with_all = ["verify", "expect_sha256"])]
    no_verify: bool,
    /// Before writing anything, check each input's sha256 where one is known: a FILE.sha256
    /// beside it (as sha256sum writes it), or the one the Hugging Face hub lists for it (the
    /// cache blob's name, a --local-dir download's record, a clone's Git LFS pointer).
    #[arg(long)]
    verify: bool,
    /// The sha256 the (single) input must have (64 hexadecimal digits); implies --verify.
    #[arg(long, value_name = "HEX")]
    expect_sha256: Option<String>,
    /// Cast floating tensors to this dtype, exactly as torch's Tensor.to() does; quantized
    /// tensors are dequantized, then cast. Integer, bool and complex tensors stay as they are.
    /// (float32, float16, bfloat16, float8_e4m3fn, float8_e5m2; f32, f16 and bf16 too.)
    #[arg(long, value_name = "DTYPE", value_parser = cast_target)]
    dtype: Option<String>,
    /// Write shards of at most SIZE tensor bytes (5GB, 500MB: powers of 1000; 1.5GiB: of
    /// 1024; 123456: bytes) named after OUTPUT, as huggingface_hub names them:
    /// out/model.safetensors gives out/model-00001-of-00003.safetensors... and the index
    /// out/model.safetensors.index.json. When every tensor fits in one shard, OUTPUT alone is
    /// written, with no index. A .gguf OUTPUT is written as the parts of a split model, as
    /// llama-gguf-split --split-max-size writes them (5GB is its 5G): out/model.gguf gives
    /// out/model-00001-of-00003.gguf... with no index (one part too, when everything fits).
    /// Nothing is in place until every file is written; files of an earlier sharded write to
    /// OUTPUT (shards of another count, the index, OUTPUT) are removed. A Hugging Face model
    /// folder into .gguf is cut as convert_hf_to_gguf.py --split-max-size cuts it (unpadded
    /// sizes; with --split-max-tensors too, whichever fills a part first).
    #[arg(long, value_name = "SIZE")]
    max_shard_size: Option<String>,
    /// For a .gguf OUTPUT: write the parts of a split model of at most N tensors each, as
    /// llama-gguf-split --split-max-tensors writes them.
    #[arg(long, value_name = "N")]
    split_max_tensors: Option<u64>,
    /// For a split .gguf OUTPUT (--max-shard-size or --split-max-tensors): the first part holds
    /// the metadata alone, as llama-gguf-split --no-tensor-first-split writes it.
    #[arg(long)]
    no_tensor_first_split: bool,
    /// Keep only the tensors whose name matches GLOB (repeatable: any of them). `*` matches
    /// any run of characters, dots included (model.layers.*.mlp.*), `?` one character,
    /// [abc], [a-z] and [!abc] one of a set or not; the whole name must match.
    #[arg(long, value_name = "GLOB")]
    include: Vec<String>,
    /// Leave out the tensors whose name matches GLOB (repeatable), after --include.
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// Rename the tensors kept: the first match of REGEX in the name is replaced by
    /// REPLACEMENT, as Python's re.sub(REGEX, REPLACEMENT, name, count=1) does, with $1,
    /// ${1} or ${name} for the groups of the match (write ${1}x, not $1x). Repeatable: each
    /// applies in order to the result of the one before. REGEX ends at the first `=` (match
    /// one with \x3D); anchor it (^...$) to match the whole name. Two tensors renamed to one
    /// name is an error.
    #[arg(long, value_name = "REGEX=REPLACEMENT")]
    rename: Vec<String>,
    /// A Hugging Face model folder into .gguf: how the tensors are stored, as
    /// convert_hf_to_gguf.py --outtype: f32, f16, bf16, q8_0, tq1_0, tq2_0 or auto (the
    /// default: as the checkpoint's first matrix is stored). --dtype f32|f16|bf16 says the same.
    #[arg(long, value_name = "TYPE")]
    outtype: Option<String>,
    /// A Hugging Face model folder into .gguf: write the vocabulary and key/values alone, no
    /// tensor (convert_hf_to_gguf.py --vocab-only).
    #[arg(long)]
    vocab_only: bool,
    /// A Hugging Face model folder of FP8 weights (with block scales) into .gguf: store those
    /// weights as Q8_0 rather than dequantized to the outtype (convert_hf_to_gguf.py --fp8-as-q8).
    #[arg(long)]
    fp8_as_q8: bool,
    /// A Hugging Face model folder into .gguf: the model's name (general.name), over what its
    /// folder says (convert_hf_to_gguf.py --model-name).
    #[arg(long, value_name = "NAME")]
    model_name: Option<String>,
    /// A Hugging Face model folder into .gguf: a JSON object of general.* keys set over what
    /// its folder says (convert_hf_to_gguf.py --metadata).
    #[arg(long, value_name = "FILE.json")]
    metadata_file: Option<PathBuf>,
    #[command(flatten)]
    quantize: Box<super::quantize_args::QuantizeArgs>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

impl Args {
    /// The files to read (clap asks for at least one, and the output).
    fn inputs(&self) -> &[PathBuf] {
        self.paths.split_last().map_or(&[], |(_, inputs)| inputs)
    }

    /// The file to write: the last path.
    fn output(&self) -> &Path {
        self.paths.last().map_or(Path::new(""), PathBuf::as_path)
    }
}

/// A cast target as given (`bf16` or `bfloat16`...), by its one name.
fn cast_target(text: &str) -> Result<String, String> {
    cast::target(text).map(|d| d.name().to_string()).map_err(|e| e.to_string())
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    if args.paths.len() < 2 {
        return Err(tensorfile::Error::usage("convert takes the files to read and then the file to write").into());
    }
    let job = job(&args)?;
    for ignored in job.ignored()? {
        warn(format_args!("{} has no effect: {}", render::write_option(ignored.option), ignored.reason));
    }
    if args.data.is_some() && args.inputs().len() > 1 {
        return Err(tensorfile::Error::usage("--data goes with a single input (an ExecuTorch program)").into());
    }
    if args.quantize.dry_run {
        let sizes = job.dry_run()?;
        print_sizes(&args, &sizes, out)?;
        return Ok(Outcome::Success);
    }
    let mut bar: Option<progress::Progress> = None;
    let mut on_progress = |p: Progress<'_>| {
        let bar = bar.get_or_insert_with(|| progress::Progress::new(p.total_bytes, progress::Unit::Bytes));
        bar.set(p.done_bytes, &render::printable(p.tensor));
    };
    let result = job.run(&mut on_progress);
    if let Some(bar) = bar {
        bar.finish();
    }
    let done = result?;
    let report = &done.report;
    if let Some(sharded) = &done.sharded {
        for path in &sharded.removed {
            warn(format_args!("removed {} (left by an earlier write to {})", path.display(), args.output().display()));
        }
    }
    for s in &report.skipped {
        warn(format_args!("skipped {:?}: {}", s.name, s.reason));
    }
    if !report.decoded.is_empty() {
        let names: Vec<String> = report.decoded.iter().map(|n| format!("{n:?}")).collect();
        warn(format_args!(
            "written decoded to dense ({} has no place for their layout): {}",
            report.format,
            names.join(", ")
        ));
    }
    if !report.dropped_metadata.is_empty() {
        warn(format_args!(
            "file metadata left out ({} {}): {}",
            report.format,
            if report.format.caps().file_metadata() { "keeps text values only" } else { "has no place for it" },
            report.dropped_metadata.join(", ")
        ));
    }
    print_report(&args, &done, out)?;
    Ok(Outcome::Success)
}

/// The library's conversion job, as the command line asks for it.
fn job(args: &Args) -> tensorfile::Result<ConvertJob> {
    let mut request = WriteRequest::parse(args.compress.as_deref(), args.checksum.as_deref())?;
    request.byte_order = args.big_endian.then_some(ByteOrder::Big);
    let mut job = ConvertJob::new(args.inputs(), args.output());
    // A Hugging Face checkpoint's BPE vocabulary needs Hugging Face's tokenizers library.
    job.tokenizers = Some(&tensorfile_tokenizers::HF_TOKENIZERS);
    job.outtype = args.outtype.as_deref().map(tensorfile::llama::OutType::from_name).transpose()?;
    job.vocab_only = args.vocab_only;
    job.fp8_as_q8 = args.fp8_as_q8;
    job.model_name = args.model_name.clone();
    job.metadata_file = args.metadata_file.clone();
    job.data = args.data.clone();
    job.variant = args.zt_version.clone();
    // A bad variant, or one for an output that has none, is an error before anything else.
    job.format()?;
    job.max_shard_size = args.max_shard_size.as_deref().map(parse_size).transpose()?;
    job.split_max_tensors = args.split_max_tensors;
    job.no_tensor_first_split = args.no_tensor_first_split;
    job.request = request;
    job.skip_unsupported = args.skip_unsupported;
    job.verify = !args.no_verify;
    job.verify_digests = args.verify;
    job.expect_sha256 = args.expect_sha256.clone();
    job.dtype = args.dtype.as_deref().and_then(DType::from_name);
    let renames: Vec<(String, String)> =
        args.rename.iter().map(|r| Selection::parse_rename(r)).collect::<Result<_, _>>()?;
    job.set_selection(&args.include, &args.exclude, &renames, args.quantize.options().as_ref())?;
    Ok(job)
}

/// A dry run's sizes: a line per tensor, then the total.
fn print_sizes(args: &Args, sizes: &QuantizeSizes, out: &mut dyn Write) -> std::io::Result<()> {
    if args.json {
        return render::json(out, &sizes.to_json());
    }
    let width = sizes.tensors.iter().map(|t| render::printable(&t.name).chars().count()).max().unwrap_or(0);
    for t in &sizes.tensors {
        let name = render::printable(&t.name);
        let pad = width.saturating_sub(name.chars().count());
        writeln!(
            out,
            "{name}{:pad$}  {:>7} -> {:<7}  {} -> {}",
            "",
            t.from,
            t.to,
            render::size(t.bytes_in),
            render::size(t.bytes_out)
        )?;
    }
    writeln!(
        out,
        "{}: {} -> {} (dry run: nothing written)",
        render::count(sizes.tensors.len(), "tensor"),
        render::size(sizes.bytes_in),
        render::size(sizes.bytes_out)
    )
}

fn print_report(args: &Args, done: &Conversion, out: &mut dyn Write) -> std::io::Result<()> {
    let report = &done.report;
    if args.json {
        return render::json(out, &done.to_json());
    }
    let skipped = match report.skipped.len() {
        0 => String::new(),
        n => format!(", {n} skipped"),
    };
    let selected = match (report.renamed.len(), report.filtered_out) {
        (0, 0) => String::new(),
        (renamed, 0) => format!(", {renamed} renamed"),
        (renamed, out) => format!(", {renamed} renamed, {out} left out by the filters"),
    };
    let merged = match args.inputs().len() {
        1 => String::new(),
        n => format!(" from {n} files merged"),
    };
    let cast = match &args.dtype {
        Some(dtype) => format!(", {} cast to {dtype}", report.cast.len()),
        None => String::new(),
    };
    let cast = match &args.quantize.quantize {
        Some(target) => format!("{cast}, {} quantized ({target})", report.quantized.len()),
        None => cast,
    };
    let (path, shards) = match &done.sharded {
        Some(Shards { index: Some(index), files, .. }) => {
            (index.as_path(), format!("{}, ", render::count(files.len(), "shard")))
        }
        // The parts of a split model: named after OUTPUT, with no index.
        Some(Shards { files, .. }) if files.as_slice() != [args.output()] => {
            let first = files.first().map_or(args.output(), PathBuf::as_path);
            (first, format!("{} (no index), ", render::count(files.len(), "part")))
        }
        Some(_) => (args.output(), "one shard (no index), ".to_string()),
        None => (args.output(), String::new()),
    };
    writeln!(
        out,
        "wrote {} ({}){merged}: {shards}{}, {}{cast}{selected}{skipped}",
        path.display(),
        report.format,
        render::count(report.tensors, "tensor"),
        render::size(report.bytes)
    )
}
