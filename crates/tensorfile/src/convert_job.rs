//! One conversion as the shells ask for it ([`ConvertJob`]): the inputs (one file with the
//! second file its format keeps data in, or several merged), what is written (selection and
//! renames, casting, write options), and where (one file, or shards); run, it gives one
//! report ([`Conversion`]) that the shells render.

use std::path::PathBuf;

use serde_json::{Value as Json, json};

use crate::convert::{ConvertOptions, ConvertReport, Progress, Selection, convert_file, convert_to_shards};
use crate::error::{Error, JobOption, Result};
use crate::file::{OpenOptions, TensorFile};
use crate::formats::{Format, Ignored, WriteRequest};
use crate::llama::{
    self, MODEL_FORMAT, QuantizeOptions, QuantizePath, QuantizeRequest, QuantizeSizes, SplitRequest, one_type,
    quantize_gguf, refuse_on_llama_quantize, refuse_on_one_type,
};
use crate::model::DType;

/// A conversion to run: build it with [`ConvertJob::new`], set what differs from the
/// defaults, then [`ConvertJob::run`] it.
///
/// ```no_run
/// use tensorfile::ConvertJob;
/// let mut job = ConvertJob::new(["model.safetensors"], "model.zt");
/// job.variant = Some("2".into()); // zTensor 2
/// job.max_shard_size = Some(5_000_000_000);
/// let done = job.run(&mut |_| {})?;
/// println!("{} tensors into {:?}", done.report.tensors, done.files());
/// # Ok::<(), tensorfile::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConvertJob {
    /// The files to read, merged in this order (each a file, a sharded checkpoint's index or
    /// folder, or a URL).
    pub inputs: Vec<PathBuf>,
    /// The file to write; its extension picks the format.
    pub output: PathBuf,
    /// The second file the (single) input keeps data in: an ExecuTorch program's `.ptd`.
    pub data: Option<PathBuf>,
    /// Which of the formats sharing the output's extension is written (zTensor `0.1` or `2`
    /// for `.zt`); `None`: the first registered.
    pub variant: Option<String>,
    /// The write options as given (`None`: the library's default).
    pub request: WriteRequest,
    /// Leave out tensors the output cannot hold (and unreadable ones) instead of failing.
    pub skip_unsupported: bool,
    /// Check stored checksums while reading.
    pub verify: bool,
    /// Check each input file's sha256 before writing anything, where one is known (a
    /// `.sha256` file beside it, the Hugging Face cache blob it is; [`crate::Verify::Full`]).
    pub verify_digests: bool,
    /// The sha256 the (single) input must have; implies `verify_digests`.
    pub expect_sha256: Option<String>,
    /// Cast floating tensors to this dtype ([`ConvertOptions::dtype`]).
    pub dtype: Option<DType>,
    /// Which entries are written, and under which names.
    pub select: Selection,
    /// Write shards of at most this many tensor bytes, named after the output, and their index.
    /// For a `.gguf` output: the parts of a split model (`model-00001-of-00003.gguf`..., no
    /// index), as `llama-gguf-split --split-max-size` cuts and writes them.
    pub max_shard_size: Option<u64>,
    /// For a `.gguf` output: write the parts of a split model of at most this many tensors
    /// each, as `llama-gguf-split --split-max-tensors` does (not with `max_shard_size`).
    pub split_max_tensors: Option<u64>,
    /// For a split `.gguf` output: the first part holds the metadata alone, no tensor
    /// (`llama-gguf-split --no-tensor-first-split`).
    pub no_tensor_first_split: bool,
    /// Quantize as ggml does: a GGUF model into a `.gguf` exactly as llama-quantize would (a
    /// preset or one type, and its options; always, whatever else is asked: options that would
    /// change llama-quantize's file are refused); any other input, or another output, to one
    /// type (floating tensors of two or more dimensions; rows that are not whole blocks fall
    /// back as llama.cpp falls back; the request's include and exclude pick the tensors, its
    /// tensor types and importance matrix apply by name; the options that need llama.cpp's
    /// names or file are refused). See [`ConvertJob::quantize_path`].
    pub quantize: Option<QuantizeRequest>,
    /// Hugging Face's tokenizers library, which converting a checkpoint whose vocabulary is a
    /// `tokenizer.json` alone (BPE) needs; the shells give it (crate `tensorfile-tokenizers`).
    pub tokenizers: Option<&'static dyn llama::Tokenizers>,
    /// A Hugging Face checkpoint: how its tensors are stored, as the converter's `--outtype`
    /// (`None`: as [`ConvertJob::dtype`] says, else the converter's `auto`).
    pub outtype: Option<llama::OutType>,
    /// A Hugging Face checkpoint: write its vocabulary and key/values alone.
    pub vocab_only: bool,
    /// A Hugging Face checkpoint of FP8 weights: store those as Q8_0 (the converter's
    /// `--fp8-as-q8`).
    pub fp8_as_q8: bool,
    /// A Hugging Face checkpoint: its name (`general.name`), over what its folder says.
    pub model_name: Option<String>,
    /// A Hugging Face checkpoint: a JSON object of `general.*` keys set over what its folder
    /// says.
    pub metadata_file: Option<PathBuf>,
}

impl ConvertJob {
    /// Convert `inputs` into `output`, with every option at its default.
    pub fn new<P: Into<PathBuf>>(inputs: impl IntoIterator<Item = P>, output: impl Into<PathBuf>) -> Self {
        ConvertJob {
            inputs: inputs.into_iter().map(Into::into).collect(),
            output: output.into(),
            data: None,
            variant: None,
            request: WriteRequest::default(),
            skip_unsupported: false,
            verify: true,
            verify_digests: false,
            expect_sha256: None,
            dtype: None,
            select: Selection::default(),
            max_shard_size: None,
            split_max_tensors: None,
            no_tensor_first_split: false,
            quantize: None,
            tokenizers: None,
            outtype: None,
            vocab_only: false,
            fp8_as_q8: false,
            model_name: None,
            metadata_file: None,
        }
    }

    /// The format the output is written as.
    pub fn format(&self) -> Result<Format> {
        Format::for_output(&self.output, self.variant.as_deref())
    }

    /// The write options given that the output format ignores, and why (for the shells to
    /// warn about, each in its own terms).
    pub fn ignored(&self) -> Result<Vec<Ignored>> {
        Ok(self.request.ignored_by(self.format()?))
    }

    /// Open the inputs and write the output, reporting progress after each tensor.
    pub fn run(&self, progress: &mut dyn FnMut(Progress<'_>)) -> Result<Conversion> {
        let started = std::time::Instant::now();
        let mut done = self.run_timed(progress)?;
        done.seconds = started.elapsed().as_secs_f64();
        Ok(done)
    }

    /// [`ConvertJob::run`], its time aside.
    fn run_timed(&self, progress: &mut dyn FnMut(Progress<'_>)) -> Result<Conversion> {
        let format = self.format()?;
        let mut options = ConvertOptions {
            write: self.request.options(),
            skip_unsupported: self.skip_unsupported,
            verify: self.verify,
            dtype: self.dtype,
            format: Some(format),
            select: self.select.clone(),
            quantize: None,
        };
        // The converter cuts its output its own way (by size and count at once, too).
        if let Some(dir) = self.checkpoint_input(format) {
            return self.run_checkpoint(dir, format, progress);
        }
        llama::split_asked(self.split_request(), format)?;
        let checkpoint_only = self.vocab_only || self.fp8_as_q8 || self.outtype.is_some();
        if checkpoint_only || self.model_name.is_some() || self.metadata_file.is_some() {
            return Err(Error::usage(
                "a vocabulary alone, a model name, a metadata file and an outtype are for a Hugging Face model folder \
                 converted into .gguf",
            ));
        }
        let src = self.open()?;
        if let Some(request) = &self.quantize {
            match self.quantize_path(&src, request)? {
                QuantizePath::LlamaQuantize => return self.as_llama_quantize(&src, format, request, progress),
                QuantizePath::OneType => options.quantize = Some(one_type(&src, request)?),
            }
        }
        let (report, sharded) = match self.max_shard_size {
            _ if format == MODEL_FORMAT => {
                let (report, parts) = llama::write_gguf(&src, &self.output, self.split_request(), &options, progress)?;
                (report, parts.map(|p| Shards { files: p.files, index: None, removed: p.removed }))
            }
            None => (convert_file(&src, &self.output, &options, progress)?, None),
            Some(size) => {
                let s = convert_to_shards(&src, &self.output, size, &options, progress)?;
                (s.conversion, Some(Shards { files: s.files, index: s.index, removed: s.removed }))
            }
        };
        Ok(Conversion {
            inputs: self.inputs.clone(),
            output: self.output.clone(),
            dtype: self.dtype,
            report,
            sharded,
            checkpoint: None,
            seconds: 0.0,
        })
    }

    /// The split options, as llama-gguf-split takes them.
    fn split_request(&self) -> SplitRequest {
        SplitRequest {
            max_size: self.max_shard_size,
            max_tensors: self.split_max_tensors,
            no_tensor_first_split: self.no_tensor_first_split,
        }
    }

    /// The Hugging Face model folder the job converts as llama.cpp's converter does: a single
    /// input that is one, written into llama.cpp's format.
    fn checkpoint_input(&self, format: Format) -> Option<&PathBuf> {
        match self.inputs.as_slice() {
            [dir] if format == MODEL_FORMAT && llama::is_checkpoint(dir) => Some(dir),
            _ => None,
        }
    }

    /// A Hugging Face model folder into a `.gguf` file, as `convert_hf_to_gguf.py` writes it;
    /// the options it has no equivalent for yet are refused, naming them.
    fn run_checkpoint(
        &self,
        dir: &std::path::Path,
        format: Format,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Conversion> {
        let refuse = |option: JobOption, what: &str| {
            Error::usage(format!("{what} is not done yet when converting a Hugging Face checkpoint"))
                .with_hint(crate::error::Hint::Drop(option))
        };
        if self.quantize.is_some() && self.no_tensor_first_split {
            return Err(refuse(JobOption::NoTensorFirstSplit, "a first part of metadata alone in a quantized output"));
        }
        if !self.select.is_everything() {
            return Err(refuse(JobOption::Rename, "renaming or leaving out tensors"));
        }
        let options = llama::CheckpointOptions {
            outtype: self.checkpoint_outtype()?,
            vocab_only: self.vocab_only,
            tokenizers: self.tokenizers,
            metadata: self.metadata_file.clone(),
            model_name: self.model_name.clone(),
            fp8_as_q8: self.fp8_as_q8,
            split: llama::OutputSplit {
                max_tensors: self.split_max_tensors,
                max_size: self.max_shard_size,
                no_tensor_first_split: self.no_tensor_first_split,
            },
        };
        let (tensors, bytes, quantized, sharded, converted) = match &self.quantize {
            None => {
                let done = llama::convert_checkpoint(dir, &self.output, &options, progress)?;
                let sharded = (done.files.len() > 1).then(|| Shards {
                    files: done.files.clone(),
                    index: None,
                    removed: done.removed.clone(),
                });
                (done.tensors.len(), done.bytes, Vec::new(), sharded, done)
            }
            Some(request) => {
                let (converted, done) = llama::convert_and_quantize(dir, &self.output, &options, request, progress)?;
                let changed = done.changed().into_iter().map(|(name, _, to)| (name.to_string(), to)).collect();
                let sharded = (done.files.len() > 1).then(|| Shards {
                    files: done.files.clone(),
                    index: None,
                    removed: Vec::new(),
                });
                (done.plan.files.iter().map(|f| f.tensors.len()).sum(), done.bytes_out, changed, sharded, converted)
            }
        };
        let report = ConvertReport {
            format,
            tensors,
            bytes,
            skipped: Vec::new(),
            decoded: Vec::new(),
            cast: Vec::new(),
            quantized,
            dropped_metadata: Vec::new(),
            renamed: Vec::new(),
            filtered_out: 0,
        };
        Ok(Conversion {
            inputs: self.inputs.clone(),
            output: self.output.clone(),
            dtype: self.dtype,
            report,
            sharded,
            checkpoint: Some(converted),
            seconds: 0.0,
        })
    }

    /// The converter's `--outtype` the job asks for: [`ConvertJob::outtype`], else the float
    /// type [`ConvertJob::dtype`] names, else the converter's default; the two disagreeing is
    /// an error.
    fn checkpoint_outtype(&self) -> Result<llama::OutType> {
        let from_dtype = match self.dtype {
            None => None,
            Some(DType::Float32) => Some(llama::OutType::F32),
            Some(DType::Float16) => Some(llama::OutType::F16),
            Some(DType::BFloat16) => Some(llama::OutType::BF16),
            Some(other) => {
                return Err(Error::usage(format!(
                    "a checkpoint is written as float32, float16 or bfloat16 (the converter's --outtype; \
                     q8_0, tq1_0, tq2_0 as outtypes), not {other}"
                )));
            }
        };
        match (self.outtype, from_dtype) {
            (Some(a), Some(b)) if a != b => {
                Err(Error::usage(format!("the outtype {} and the dtype {} disagree: give one", a.name(), b.name())))
            }
            (Some(t), _) | (None, Some(t)) => Ok(t),
            (None, None) => Ok(llama::OutType::Auto),
        }
    }

    /// The inputs, opened (merged when several).
    fn open(&self) -> Result<TensorFile> {
        if self.inputs.is_empty() {
            return Err(Error::usage("a conversion needs at least one file to read"));
        }
        if self.data.is_some() && self.inputs.len() > 1 {
            return Err(Error::usage("the second file of a program goes with a single input"));
        }
        let mut open = OpenOptions::new();
        if let Some(data) = &self.data {
            open.data(data);
        }
        if self.verify_digests {
            open.verify(crate::Verify::Full);
        }
        if let Some(hex) = &self.expect_sha256 {
            open.expect_sha256(hex)?;
        }
        let file = open.open_merged(&self.inputs)?;
        // Nothing is written from a file that is not the one expected.
        file.check_digests()?;
        Ok(file)
    }

    /// Set what is written and quantized from the shells' values: the globs of the tensors
    /// kept (`include`, `exclude`), the renames, and the quantization. With a quantization,
    /// `include` and `exclude` pick the tensors quantized (the others are written as they
    /// are), not the tensors written.
    pub fn set_selection(
        &mut self,
        include: &[String],
        exclude: &[String],
        renames: &[(String, String)],
        quantize: Option<&QuantizeOptions>,
    ) -> Result<()> {
        self.quantize = quantize.map(|q| q.request(include, exclude)).transpose()?;
        let (include, exclude) = if self.quantize.is_some() { (&[][..], &[][..]) } else { (include, exclude) };
        self.select = Selection::new(include, exclude, renames)?;
        Ok(())
    }

    /// The way the job quantizes `src` as `request` asks: llama-quantize's for a GGUF model
    /// into a `.gguf` file, else one type; an option that does not apply on that way is
    /// refused (a usage error with [`crate::Hint::Drop`] naming it).
    pub fn quantize_path(&self, src: &TensorFile, request: &QuantizeRequest) -> Result<QuantizePath> {
        let format = self.format()?;
        if format == MODEL_FORMAT && src.format() == MODEL_FORMAT {
            refuse_on_llama_quantize(&[
                (JobOption::DType, self.dtype.is_some(), "casting to a dtype"),
                (JobOption::MaxShardSize, self.max_shard_size.is_some(), "splitting the output by size"),
                (JobOption::SplitMaxTensors, self.split_max_tensors.is_some(), "splitting the output by tensors"),
                (JobOption::NoTensorFirstSplit, self.no_tensor_first_split, "a first part of metadata alone"),
                (JobOption::Rename, !self.select.is_everything(), "renaming or leaving out tensors"),
            ])?;
            return Ok(QuantizePath::LlamaQuantize);
        }
        let what = format!("a {} input into a {} file", src.format(), format);
        refuse_on_one_type(request, &what)?;
        Ok(QuantizePath::OneType)
    }

    /// What quantizing would write, tensor by tensor, without writing anything (llama-quantize's
    /// dry run): each tensor's type and size before and after.
    pub fn dry_run(&self) -> Result<QuantizeSizes> {
        let Some(request) = &self.quantize else {
            return Err(Error::usage("a dry run gives the sizes of a quantization: none is asked"));
        };
        if self.checkpoint_input(self.format()?).is_some() {
            return Err(Error::unsupported("a dry run of a Hugging Face checkpoint's quantization is not done yet"));
        }
        let src = self.open()?;
        let path = self.quantize_path(&src, request)?;
        QuantizeSizes::of(&src, request, path)
    }

    /// A GGUF model into a `.gguf` file, quantized as llama-quantize quantizes it.
    fn as_llama_quantize(
        &self,
        src: &TensorFile,
        format: Format,
        request: &QuantizeRequest,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Conversion> {
        let done = quantize_gguf(src, &self.output, request, progress)?;
        let tensors = done.plan.files.iter().map(|f| f.tensors.len()).sum();
        let report = ConvertReport {
            format,
            tensors,
            bytes: done.bytes_out,
            skipped: Vec::new(),
            decoded: Vec::new(),
            cast: Vec::new(),
            quantized: done.changed().into_iter().map(|(name, _, to)| (name.to_string(), to)).collect(),
            dropped_metadata: Vec::new(),
            renamed: Vec::new(),
            filtered_out: 0,
        };
        let sharded =
            (done.files.len() > 1).then(|| Shards { files: done.files.clone(), index: None, removed: Vec::new() });
        Ok(Conversion {
            inputs: self.inputs.clone(),
            output: self.output.clone(),
            dtype: None,
            report,
            sharded,
            checkpoint: None,
            seconds: 0.0,
        })
    }
}

/// What a [`ConvertJob`] did.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// The files read.
    pub inputs: Vec<PathBuf>,
    /// The output asked for.
    pub output: PathBuf,
    /// The dtype floating tensors were cast to, when one was asked for.
    pub dtype: Option<DType>,
    /// What was written: tensors, bytes, what was left out, cast, renamed.
    pub report: ConvertReport,
    /// The files of a sharded write; `None` when one file was asked for.
    pub sharded: Option<Shards>,
    /// A Hugging Face checkpoint converted: its architecture, outtype and each tensor's type.
    pub checkpoint: Option<llama::CheckpointConverted>,
    /// How long the job ran, in seconds.
    pub seconds: f64,
}

/// The files of a sharded write.
#[derive(Debug, Clone)]
pub struct Shards {
    /// The files holding the tensors: the shards in order, or the output alone when every
    /// tensor fits in one file (then there is no index).
    pub files: Vec<PathBuf>,
    /// The index, when there are several shards.
    pub index: Option<PathBuf>,
    /// Files an earlier write to the same output left, removed by this one.
    pub removed: Vec<PathBuf>,
}

impl Conversion {
    /// The files written that hold the tensors: the shards, or the output.
    pub fn files(&self) -> Vec<PathBuf> {
        match &self.sharded {
            Some(s) => s.files.clone(),
            None => vec![self.output.clone()],
        }
    }

    /// The report as JSON (`convert --json`; Python's `convert` returns a view of it).
    pub fn to_json(&self) -> Json {
        let report = &self.report;
        let text = |p: &PathBuf| p.display().to_string();
        let skipped: Vec<_> = report.skipped.iter().map(|s| json!({ "name": s.name, "reason": s.reason })).collect();
        let renamed: Vec<_> = report.renamed.iter().map(|(from, to)| json!({ "from": from, "to": to })).collect();
        let mut value = json!({
            "inputs": self.inputs.iter().map(text).collect::<Vec<_>>(),
            "output": text(&self.output),
            "format": report.format.name(),
            "tensors": report.tensors,
            "bytes": report.bytes,
            "skipped": skipped,
            "decoded": report.decoded,
            "dtype": self.dtype.map(DType::name),
            "cast": report.cast,
            "dropped_metadata": report.dropped_metadata,
            "renamed": renamed,
            "filtered_out": report.filtered_out,
            "quantized": report.quantized.iter().map(|(name, t)| json!({ "name": name, "type": t.name() })).collect::<Vec<_>>(),
        });
        if let [input] = self.inputs.as_slice() {
            value["input"] = json!(text(input));
        }
        value["seconds"] = json!(self.seconds);
        if let Some(c) = &self.checkpoint {
            value["architecture"] = json!(c.architecture);
            value["outtype"] = json!(c.outtype.name());
            value["types"] =
                c.tensors.iter().map(|(name, t)| json!({ "name": name, "type": t.name() })).collect::<Vec<_>>().into();
        }
        if let Some(sharded) = &self.sharded {
            value["files"] = json!(sharded.files.iter().map(text).collect::<Vec<_>>());
            value["index"] = json!(sharded.index.as_ref().map(text));
            value["removed"] = json!(sharded.removed.iter().map(text).collect::<Vec<_>>());
        }
        value
    }
}
