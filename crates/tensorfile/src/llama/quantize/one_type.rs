//! The quantization of any input that is not a GGUF model written as a `.gguf` file: one type
//! for every floating tensor of two or more dimensions (llama-quantize's `pure`), the request's
//! tensor types and importance matrix applied by tensor name; and the sizes a quantization
//! comes to without writing it ([`QuantizeSizes`], llama-quantize's dry run).

use serde_json::{Value as Json, json};

use super::options::QuantizePath;
use super::plan::patterns;
use super::{Imatrix, QuantizeInput, QuantizeRequest, QuantizeTarget, fallback, plan};
use crate::convert::{QuantizeTypes, Selection};
use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::model::quant::{GgmlType, Quant};
use crate::model::{DType, Kind};

/// The tensors of `src` that quantizing to the request's one type changes, each with the type
/// it gets: floating tensors (quantized ones too when requantizing is allowed) of two or more
/// dimensions that the request's include and exclude keep, their rows in the type's blocks
/// (or the request's tensor type for a name its regex finds) or in the type llama.cpp falls
/// back to; the importance matrix's weights by tensor name, its entries picked by the
/// request's included and excluded names.
pub(crate) fn one_type(src: &TensorFile, request: &QuantizeRequest) -> Result<QuantizeTypes> {
    let t = match (request.target.single_type(), request.target) {
        (Some(t), _) => t,
        // llama-quantize's pure: the type the preset's every tensor starts from.
        (None, QuantizeTarget::Preset(p)) if request.pure && !p.only_copies() => p.default_type().ok_or_else(|| {
            Error::unsupported(format!("{} starts from a ggml type this library does not know", p.name()))
        })?,
        _ => {
            return Err(Error::usage(
                "a preset that mixes types chooses each tensor's type by llama.cpp's tensor names: it quantizes a \
                 GGUF model into a .gguf file; quantize to one type (Q8_0, Q4_K...), or ask for it pure, instead",
            ));
        }
    };
    let select = Selection::new(&request.include, &request.exclude, &[])?;
    let patterns = patterns(&request.tensor_types)?;
    let mut types = QuantizeTypes { allow_requantize: request.allow_requantize, ..QuantizeTypes::default() };
    for e in src.entries() {
        let info = e.info();
        let float = matches!(info.dtype(), DType::Float32 | DType::Float16 | DType::BFloat16 | DType::Float64);
        let quantized = info.layout().quant().is_some();
        if info.kind() != Kind::Tensor
            || info.shape().len() < 2
            || !select.keeps(info.name())
            || !(float && !quantized || quantized && request.allow_requantize)
        {
            continue;
        }
        let chosen = patterns.iter().find(|(r, _)| r.is_match(info.name())).map_or(t, |(_, m)| *m);
        let ncols = *info.shape().last().unwrap_or(&0);
        if let Some(to) = fallback(chosen, ncols) {
            types.types.insert(info.name().to_string(), to);
        }
    }
    if let Some(path) = &request.imatrix {
        let weights = Imatrix::read(path)?.weights().map_err(|e| e.in_file(path))?;
        let contains = |name: &str, part: &str| name.contains(part);
        for (name, w) in weights {
            let Ok(name) = String::from_utf8(name) else { continue };
            let excluded = request.imatrix_exclude.iter().any(|p| contains(&name, p));
            let included =
                request.imatrix_include.is_empty() || request.imatrix_include.iter().any(|p| contains(&name, p));
            if types.types.contains_key(&name) && included && !excluded {
                types.importance.insert(name, w);
            }
        }
    }
    Ok(types)
}

/// One tensor of a dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSize {
    /// Its name in the output.
    pub name: String,
    /// Its type in the input: a ggml type's name, or a dtype's.
    pub from: String,
    /// Its type in the output.
    pub to: String,
    /// Its bytes in the input.
    pub bytes_in: u64,
    /// Its bytes in the output.
    pub bytes_out: u64,
}

/// What a quantization comes to, without writing it (llama-quantize's dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantizeSizes {
    /// The way it would be made.
    pub path: QuantizePath,
    /// Every tensor written, in the output's order.
    pub tensors: Vec<TensorSize>,
    /// The tensors' bytes in the input.
    pub bytes_in: u64,
    /// The tensors' bytes in the output (no header, no padding).
    pub bytes_out: u64,
}

impl QuantizeSizes {
    /// The sizes of quantizing `src` as `request` asks, the way `path` makes it.
    pub fn of(src: &TensorFile, request: &QuantizeRequest, path: QuantizePath) -> Result<QuantizeSizes> {
        let mut tensors = Vec::new();
        match path {
            QuantizePath::LlamaQuantize => {
                let input = QuantizeInput::from_file(src)?;
                let imatrix = request.imatrix.as_deref().map(Imatrix::read).transpose()?;
                let planned = plan(&input, request, imatrix.as_ref())?;
                for t in planned.files.iter().flat_map(|f| &f.tensors) {
                    let bytes_in = src.entries().get(t.source).map_or(0, |e| e.nbytes());
                    let (from, to) = (t.from.name().to_string(), t.to.name().to_string());
                    tensors.push(TensorSize { name: t.name.clone(), from, to, bytes_in, bytes_out: t.nbytes });
                }
            }
            QuantizePath::OneType => {
                let types = one_type(src, request)?;
                for e in src.entries() {
                    let info = e.info();
                    let from = match info.layout().quant() {
                        Some(Quant::Ggml(g)) => g.name().to_string(),
                        Some(q) => q.describe(),
                        None => info.dtype().name().to_string(),
                    };
                    let (to, bytes_out) = match types.types.get(info.name()) {
                        Some(t) => (t.name().to_string(), quantized_bytes(*t, info.numel()?)?),
                        None => (from.clone(), e.nbytes()),
                    };
                    tensors.push(TensorSize {
                        name: info.name().to_string(),
                        from,
                        to,
                        bytes_in: e.nbytes(),
                        bytes_out,
                    });
                }
            }
        }
        let bytes_in = tensors.iter().map(|t| t.bytes_in).sum();
        let bytes_out = tensors.iter().map(|t| t.bytes_out).sum();
        Ok(QuantizeSizes { path, tensors, bytes_in, bytes_out })
    }

    /// As JSON (`convert --dry-run --json`; Python's `convert` with a dry run returns it).
    pub fn to_json(&self) -> Json {
        let tensors: Vec<Json> = self
            .tensors
            .iter()
            .map(|t| json!({"name": t.name, "from": t.from, "to": t.to, "bytes_in": t.bytes_in, "bytes_out": t.bytes_out}))
            .collect();
        let path = match self.path {
            QuantizePath::LlamaQuantize => "llama-quantize",
            QuantizePath::OneType => "one-type",
        };
        json!({"dry_run": true, "path": path, "tensors": tensors, "bytes_in": self.bytes_in, "bytes_out": self.bytes_out})
    }
}

/// The bytes of `numel` values in `t`'s blocks.
fn quantized_bytes(t: GgmlType, numel: u64) -> Result<u64> {
    (numel / t.block_elements())
        .checked_mul(t.block_bytes())
        .ok_or_else(|| Error::unsupported("a tensor too large to quantize"))
}
