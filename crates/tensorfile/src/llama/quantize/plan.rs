//! The planner: llama-quantize's walk over the tensors, in its order (by layer, then by
//! name; by file and offset with `keep_split`), its counters, its refusals, and the layout of
//! what it writes.

use std::collections::BTreeMap;

use regex_lite::Regex;

use super::hparams::Model;
use super::imatrix::Imatrix;
use super::metadata;
use super::order::{Walked, copied_file_type, order};
use super::overrides::{KvOverride, MAX_TEXT_BYTES, OverrideValue};
use super::presets::Preset;
use super::rules::{self, Category, Context, Counters};
use super::{PlannedFile, PlannedTensor, QuantizeInput, QuantizePlan, QuantizeRequest, QuantizeTarget};
use crate::convert::Selection;
use crate::error::{Error, Result, Rule};
use crate::model::quant::GgmlType;
use crate::model::{MetaValue, Number};

/// ggml's default alignment, which llama-quantize lays its output out with.
const ALIGNMENT: u64 = 32;
/// ggml's longest tensor name (`GGML_MAX_NAME` less its NUL).
const MAX_NAME_BYTES: usize = 63;
/// ggml's most dimensions.
const MAX_DIMS: usize = 4;

/// The importance matrix as llama-quantize uses it: weights by entry name, after
/// `--include-weights`/`--exclude-weights`.
struct Importance {
    weights: BTreeMap<Vec<u8>, Vec<f32>>,
}

/// Plan the quantization of `input` that `request` asks for; `imatrix` is the file
/// `request.imatrix` names, read. Errors are llama-quantize's refusals (naming the tensor),
/// a request llama-quantize would not take, or input it cannot read.
pub fn plan(input: &QuantizeInput, request: &QuantizeRequest, imatrix: Option<&Imatrix>) -> Result<QuantizePlan> {
    let (preset, pure) = match request.target {
        QuantizeTarget::Preset(p) => (p, request.pure),
        QuantizeTarget::Type(t) => (
            Preset::for_type(t)
                .ok_or_else(|| Error::unsupported(format!("llama-quantize has no preset of type {}", t.name())))?,
            true,
        ),
    };
    let default_type = preset.default_type().ok_or_else(|| {
        Error::unsupported(format!(
            "preset {}: ggml type {} is not one this library knows",
            preset.name(),
            preset.default_type_id()
        ))
    })?;
    check_tensors(input)?;
    let importance = importance(request, imatrix)?;
    let mut overrides = request.override_kv.clone();
    if let (Some(path), Some(m), Some(imp)) = (&request.imatrix, imatrix, &importance) {
        overrides.extend(imatrix_keys(path, m, imp.weights.len())?);
    }
    // llama.cpp's list of overrides ends at the first with an empty key.
    let overrides: Vec<KvOverride> = overrides.into_iter().take_while(|o| !o.key().is_empty()).collect();
    let model = Model::read(&input.metadata, &overrides)?;
    let (walked, block_count) = order(input, request)?;
    let file_type = if preset.only_copies() { copied_file_type(input, &overrides)? } else { preset.file_type() };
    let selection = Selection::new(&request.include, &request.exclude, &[])?;
    let patterns = patterns(&request.tensor_types)?;
    let ctx = Context {
        model: &model,
        file_type,
        has_imatrix: importance.is_some(),
        tied_embeddings: !walked.iter().any(|w| w.name == "output.weight"),
        output_tensor_type: request.output_tensor_type,
        token_embedding_type: request.token_embedding_type,
    };
    let mut counts = Counters {
        n_attention_wv: walked.iter().filter(|w| rules::is_attn_v(rules::category(&w.name))).count() as u32,
        n_ffn: model.n_layer_all,
        ..Counters::default()
    };
    // What llama-quantize decides for every tensor before it writes any.
    let mut chosen = Vec::with_capacity(walked.len());
    for w in &walked {
        let n_dims = n_dims(&w.input.ne);
        let allowed = !preset.only_copies()
            && selection.keeps(&w.input.name)
            && rules::allows_quantization(&w.name, n_dims, &model.arch, !request.leave_output_tensor);
        let (to, fell_back_from) = if allowed {
            target(&ctx, &mut counts, request, &patterns, pure, default_type, w).map_err(|e| e.for_tensor(&w.name))?
        } else {
            (w.input.ggml_type, None)
        };
        if importance.is_none() && allowed && rules::requires_imatrix(&w.name, to, file_type) {
            return Err(Error::usage(format!(
                "this quantization requires an importance matrix (type {} for this tensor)",
                to.name()
            ))
            .for_tensor(&w.name));
        }
        chosen.push((to, fell_back_from));
    }
    let tensors = walked
        .iter()
        .zip(chosen)
        .map(|(w, (to, fell_back_from))| {
            check_writable(w, to, file_type, request, importance.as_ref(), fell_back_from)
                .map_err(|e| e.for_tensor(&w.name))
        })
        .collect::<Result<Vec<_>>>()?;
    let pruned = block_count.map(|n| (format!("{}.block_count", model.arch_name), n));
    let first = metadata::output(&input.metadata, file_type, &overrides, pruned)?;
    let inputs: Vec<u16> = walked.iter().map(|w| w.input.split).collect();
    let files = files(first, tensors, &inputs, request.keep_split)?;
    Ok(QuantizePlan { files, file_type })
}

/// ggml's count of dimensions (`ggml_n_dims`): up to the last beyond the first that is over 1,
/// at least one. Trailing ones do not count, and neither do trailing zeros: a `[256, 0]`
/// tensor counts as one dimension (so it is not quantized).
fn n_dims(ne: &[u64]) -> usize {
    ne.iter().skip(1).rposition(|&d| d > 1).map_or(1, |i| i + 2)
}

/// The dimensions written for `ne`: trailing ones dropped, as llama-quantize writes them, at
/// least one. Where llama-quantize drops a trailing 0 too (it writes `ggml_n_dims` of them),
/// its file is broken: the tensor claims the bytes of a whole row where it has none, over the
/// next tensor's. Ours keeps the 0.
fn written_dims(ne: &[u64]) -> usize {
    ne.iter().rposition(|&d| d != 1).map_or(1, |i| i + 1)
}

/// What ggml's GGUF reader requires of the tensors llama.cpp loads.
fn check_tensors(input: &QuantizeInput) -> Result<()> {
    let mut names: Vec<&str> = input.tensors.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    if let Some(p) = names.windows(2).find(|p| p[0] == p[1]) {
        return Err(Error::invalid(Rule::DuplicateName, format!("two tensors are named {:?}", p[0])));
    }
    for t in &input.tensors {
        let bad = |why: String| Error::invalid(Rule::BadField, why).for_tensor(&t.name);
        if t.name.len() > MAX_NAME_BYTES {
            return Err(bad(format!("a name of {} bytes: ggml reads at most {MAX_NAME_BYTES}", t.name.len())));
        }
        if t.ne.len() > MAX_DIMS {
            return Err(bad(format!("{} dimensions: ggml reads at most {MAX_DIMS}", t.ne.len())));
        }
        let ne0 = t.ne.first().copied().unwrap_or(1);
        if ne0 == 0 {
            return Err(bad("rows of no elements, which llama-quantize cannot copy".into()));
        }
        if ne0 % t.ggml_type.block_elements() != 0 {
            return Err(bad(format!("rows of {ne0} elements are not whole {} blocks", t.ggml_type.name())));
        }
    }
    Ok(())
}

/// The importance matrix llama-quantize uses, if the request names one and filtering leaves
/// some of it: refused when a value is not finite.
fn importance(request: &QuantizeRequest, imatrix: Option<&Imatrix>) -> Result<Option<Importance>> {
    let m = match (&request.imatrix, imatrix) {
        (None, None) => return Ok(None),
        (Some(_), Some(m)) => m,
        (None, Some(_)) => {
            return Err(Error::usage("an importance matrix given without the file name it was read from"));
        }
        (Some(p), None) => return Err(Error::usage(format!("the importance matrix {} was not read", p.display()))),
    };
    if !request.imatrix_include.is_empty() && !request.imatrix_exclude.is_empty() {
        return Err(Error::usage("importance matrix entries can be included or excluded, not both"));
    }
    if !m.is_legacy() && !m.has_metadata() {
        return Err(Error::invalid(
            Rule::MissingField,
            "a GGUF importance matrix without imatrix.datasets, imatrix.chunk_count or imatrix.chunk_size",
        ));
    }
    let mut weights = m.weights()?;
    let contains = |name: &[u8], part: &str| part.is_empty() || name.windows(part.len()).any(|w| w == part.as_bytes());
    for part in &request.imatrix_exclude {
        weights.retain(|name, _| !contains(name, part));
    }
    if !request.imatrix_include.is_empty() {
        weights.retain(|name, _| request.imatrix_include.iter().any(|part| contains(name, part)));
    }
    if weights.is_empty() {
        return Ok(None);
    }
    for (name, w) in &weights {
        if let Some(v) = w.iter().find(|v| !v.is_finite()) {
            return Err(Error::invalid(
                Rule::BadValue,
                format!("importance matrix entry {}: a value that is not finite ({v})", String::from_utf8_lossy(name)),
            ));
        }
    }
    Ok(Some(Importance { weights }))
}

/// Text as llama-quantize copies it into an override: up to its first NUL, at most 127 bytes.
fn c_text(bytes: &[u8], what: &str) -> Result<String> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len()).min(MAX_TEXT_BYTES);
    String::from_utf8(bytes[..end].to_vec())
        .map_err(|_| Error::unsupported(format!("{what}, cut to 127 bytes as llama-quantize cuts it, is not UTF-8")))
}

/// The `quantize.imatrix.*` keys llama-quantize adds after the user's overrides.
fn imatrix_keys(path: &std::path::Path, m: &Imatrix, entries: usize) -> Result<Vec<KvOverride>> {
    let path = path.to_str().ok_or_else(|| Error::unsupported("an importance matrix path that is not UTF-8"))?;
    let mut keys =
        vec![KvOverride::new("quantize.imatrix.file", OverrideValue::Str(c_text(path.as_bytes(), "the path")?))?];
    if let Some(d) = m.datasets().first() {
        keys.push(KvOverride::new("quantize.imatrix.dataset", OverrideValue::Str(c_text(d, "the dataset name")?))?);
    }
    keys.push(KvOverride::new("quantize.imatrix.entries_count", OverrideValue::Int(entries as i64))?);
    if m.chunk_count() > 0 {
        keys.push(KvOverride::new("quantize.imatrix.chunks_count", OverrideValue::Int(i64::from(m.chunk_count())))?);
    }
    Ok(keys)
}

/// The `--tensor-type` regexes, lowered to ASCII lower case as llama-quantize lowers them.
pub(crate) fn patterns(given: &[(String, GgmlType)]) -> Result<Vec<(Regex, GgmlType)>> {
    given
        .iter()
        .map(|(p, t)| {
            let lowered = p.to_ascii_lowercase();
            Regex::new(&lowered).map(|r| (r, *t)).map_err(|e| Error::usage(format!("bad tensor type regex {p:?}: {e}")))
        })
        .collect()
}

/// llama.cpp's `llama_tensor_get_type` for a tensor it may quantize: the type, and the one
/// the fallback replaced.
fn target(
    ctx: &Context<'_>,
    counts: &mut Counters,
    request: &QuantizeRequest,
    patterns: &[(Regex, GgmlType)],
    pure: bool,
    default: GgmlType,
    w: &Walked<'_>,
) -> Result<(GgmlType, Option<GgmlType>)> {
    let category = rules::category(&w.name);
    if let Some(t) = request.token_embedding_type.filter(|_| category == Category::TokenEmbd) {
        // A --tensor-type that names per_layer_token_embd wins over --token-embedding-type.
        let named = w.name == "per_layer_token_embd.weight" && patterns.iter().any(|(r, _)| r.is_match(&w.name));
        if !named {
            return Ok((t, None));
        }
    }
    if let Some(t) = request.output_tensor_type.filter(|_| category == Category::Output) {
        return Ok((t, None));
    }
    if !default.is_quantized() {
        return Ok((default, None));
    }
    let mut t = default;
    let manual = patterns.iter().find(|(r, _)| r.is_match(&w.name)).map(|(_, m)| *m);
    if let Some(m) = manual {
        t = m;
    } else if !pure {
        t = rules::mixture(ctx, counts, &w.name, &w.input.ne, category, t).map_err(Error::usage)?;
    }
    let ncols = w.input.ne.first().copied().unwrap_or(1);
    let chosen = rules::fallback(t, ncols)
        .ok_or_else(|| Error::unsupported(format!("no tensor type fallback is defined for type {}", t.name())))?;
    Ok((chosen, (chosen != t).then_some(t)))
}

/// The types ggml's `ggml_quantize_chunk` makes.
fn ggml_makes(t: GgmlType) -> bool {
    use GgmlType::*;
    matches!(
        t,
        Q1_0 | Q4_0
            | Q4_1
            | Q5_0
            | Q5_1
            | Q8_0
            | MXFP4
            | NVFP4
            | Q2_K
            | Q3_K
            | Q4_K
            | Q5_K
            | Q6_K
            | TQ1_0
            | TQ2_0
            | IQ2_XXS
            | IQ2_XS
            | IQ3_XXS
            | IQ3_S
            | IQ2_S
            | IQ1_S
            | IQ1_M
            | IQ4_NL
            | IQ4_XS
            | F16
            | BF16
            | F32
            | Q2_0
    )
}

/// What llama-quantize checks as it writes a tensor, and the tensor as it writes it.
fn check_writable(
    w: &Walked<'_>,
    to: GgmlType,
    file_type: u32,
    request: &QuantizeRequest,
    importance: Option<&Importance>,
    fell_back_from: Option<GgmlType>,
) -> Result<PlannedTensor> {
    let from = w.input.ggml_type;
    let ne0 = w.input.ne.first().copied().unwrap_or(1);
    let mut imatrix_entry = None;
    if from != to {
        if let Some(imp) = importance {
            if let Some(values) = imp.weights.get(w.imatrix_name.as_bytes()) {
                let ne2 = w.input.ne.get(2).copied().unwrap_or(1);
                if values.len() as u64 == ne0.saturating_mul(ne2) {
                    imatrix_entry = Some(w.imatrix_name.as_bytes().to_vec());
                } else if !rules::is_token_embd(&w.name) {
                    return Err(Error::invalid(
                        Rule::SizeMismatch,
                        format!(
                            "importance matrix size {} is different from tensor size {}",
                            values.len(),
                            ne0.saturating_mul(ne2)
                        ),
                    ));
                }
            }
        }
        if imatrix_entry.is_none() && rules::requires_imatrix(&w.name, to, file_type) {
            return Err(Error::usage(format!(
                "missing importance matrix for this tensor in a very low-bit quantization ({})",
                to.name()
            )));
        }
        if from.is_quantized() && !request.allow_requantize {
            return Err(Error::usage(format!("requantizing from type {} is disabled", from.name())));
        }
        if !from.is_quantized() && !matches!(from, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
            return Err(Error::unsupported(format!("cannot dequantize or convert tensor type {}", from.name())));
        }
        if !ggml_makes(to) {
            return Err(Error::unsupported(format!("ggml does not quantize to {}", to.name())));
        }
        if matches!(to, GgmlType::IQ2_XXS | GgmlType::IQ2_XS | GgmlType::IQ1_S) && imatrix_entry.is_none() {
            return Err(Error::usage(format!("ggml quantizes to {} only with an importance matrix", to.name())));
        }
        if ne0 % to.block_elements() != 0 {
            return Err(Error::usage(format!("rows of {ne0} elements are not whole {} blocks", to.name())));
        }
    }
    let rows: u64 = w.input.ne.iter().skip(1).try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(overflow)?;
    let row_bytes = (ne0 / to.block_elements()).checked_mul(to.block_bytes()).ok_or_else(overflow)?;
    let nbytes = rows.checked_mul(row_bytes).ok_or_else(overflow)?;
    let mut ne = w.input.ne.clone();
    if ne.is_empty() {
        ne.push(1);
    }
    ne.truncate(written_dims(&ne));
    Ok(PlannedTensor {
        name: w.name.clone(),
        source: w.source,
        from,
        to,
        ne,
        offset: 0,
        nbytes,
        fell_back_from,
        imatrix_entry,
    })
}

fn overflow() -> Error {
    Error::invalid(Rule::ShapeOverflow, "the tensor's size overflows 64 bits")
}

/// The tensors laid out in their files: one, or with `keep_split` one per input split (the
/// first with every key, the others with the split keys only), the split keys added when
/// there are several.
fn files(
    first: Vec<(String, MetaValue)>,
    tensors: Vec<PlannedTensor>,
    inputs: &[u16],
    keep_split: bool,
) -> Result<Vec<PlannedFile>> {
    if !keep_split {
        return Ok(vec![lay_out(first, tensors, None)?]);
    }
    let count = inputs.iter().copied().max().map_or(1, |m| u32::from(m) + 1);
    let count = u16::try_from(count).map_err(|_| Error::unsupported("more than 65535 splits"))?;
    let total = tensors.len();
    let mut groups: Vec<Vec<PlannedTensor>> = (0..count).map(|_| Vec::new()).collect();
    for (t, &split) in tensors.into_iter().zip(inputs) {
        groups[usize::from(split)].push(t);
    }
    if let Some(empty) = groups.iter().position(Vec::is_empty) {
        return Err(Error::unsupported(format!(
            "split {empty} of the input holds no tensor: llama-quantize numbers splits without gaps"
        )));
    }
    let mut files = Vec::with_capacity(groups.len());
    for (no, group) in groups.into_iter().enumerate() {
        let no = no as u16;
        let mut kvs = if no == 0 { first.clone() } else { Vec::new() };
        if count > 1 {
            metadata::split_keys(&mut kvs, no, count, total);
        }
        files.push(lay_out(kvs, group, Some((no, count)))?);
    }
    Ok(files)
}

/// The alignment a reader lays a file of `metadata` out with: its `general.alignment` (a u32
/// power of two: the reader and the overrides refuse any other), else 32.
///
/// llama-quantize copies the key but lays its output out at 32 whatever it says, a file that
/// llama.cpp itself refuses to load ("tensor ... has offset 544, expected 576") and that puts
/// every other reader at the wrong bytes. Ours is laid out at the alignment it states.
fn alignment_of(metadata: &[(String, MetaValue)]) -> u64 {
    match metadata.iter().find(|(k, _)| k == "general.alignment") {
        Some((_, MetaValue::Number(Number::U32(a)))) if a.is_power_of_two() => u64::from(*a),
        _ => ALIGNMENT,
    }
}

/// Offsets from the data start (each tensor padded to the alignment) and the data offset.
fn lay_out(
    metadata: Vec<(String, MetaValue)>,
    mut tensors: Vec<PlannedTensor>,
    split: Option<(u16, u16)>,
) -> Result<PlannedFile> {
    let alignment = alignment_of(&metadata);
    let mut at = 0u64;
    for t in &mut tensors {
        t.offset = at;
        at = at.checked_add(t.nbytes).and_then(|e| e.checked_next_multiple_of(alignment)).ok_or_else(overflow)?;
    }
    let mut file = PlannedFile { metadata, tensors, data_offset: 0, alignment, split };
    file.data_offset = file.header()?.len() as u64;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::{n_dims, written_dims};

    #[test]
    fn dimensions_count_as_ggml_counts_them_and_zeros_are_written() {
        // (ne, ggml_n_dims, dimensions written)
        for (ne, counted, written) in [
            (&[256u64, 2, 1, 1][..], 2, 2),
            (&[64, 1], 1, 1),
            (&[256, 1, 8], 3, 3),
            (&[256, 0], 1, 2),
            (&[256, 0, 8], 3, 3),
            (&[0, 4], 2, 2),
            (&[1], 1, 1),
            (&[], 1, 1),
        ] {
            assert_eq!((n_dims(ne), written_dims(ne)), (counted, written), "{ne:?}");
        }
    }
}
