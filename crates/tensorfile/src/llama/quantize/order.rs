//! llama-quantize's order of the tensors: its model loader's (by the layer `blk.N.` names,
//! -1 for none, then by name), by file and offset with `keep_split`; `--prune-layers` leaving
//! layers out and renumbering the rest as it meets them; and the file type `COPY` writes.

use std::collections::BTreeMap;

use super::hparams::block_number;
use super::overrides::{KvOverride, OverrideValue};
use super::presets::guessed_file_type;
use super::{InputTensor, QuantizeInput, QuantizeRequest};
use crate::error::{Error, Result, Rule};
use crate::model::quant::GgmlType;
use crate::model::{MetaValue, Number};

/// The file type llama.cpp marks a guessed one with (`LLAMA_FTYPE_GUESSED`).
const GUESSED: u32 = 1024;

/// A tensor on its way through the walk.
pub(super) struct Walked<'a> {
    /// Its index in the input.
    pub source: usize,
    /// The input tensor.
    pub input: &'a InputTensor,
    /// Its name in the output.
    pub name: String,
    /// The name its importance matrix entry has (the input's layer number when pruned).
    pub imatrix_name: String,
}

/// The input's tensors in llama.cpp's order: by the layer `blk.N.` names (-1 for none), then
/// by name.
fn loader_order(input: &QuantizeInput) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..input.tensors.len()).collect();
    let key = |i: usize| (block_number(&input.tensors[i].name).unwrap_or(-1), input.tensors[i].name.as_bytes());
    idx.sort_by(|&a, &b| key(a).cmp(&key(b)));
    idx
}

/// The tensors in llama-quantize's order, renamed when layers are pruned (those of pruned
/// layers left out), and the block count a prune leaves.
pub(super) fn order<'a>(input: &'a QuantizeInput, request: &QuantizeRequest) -> Result<(Vec<Walked<'a>>, Option<u32>)> {
    let idx = loader_order(input);
    let mut prune = Pruning::new(&request.prune_layers);
    let mut walked = Vec::with_capacity(idx.len());
    for i in idx {
        let t = &input.tensors[i];
        let Some(name) = prune.remap(&t.name)? else { continue };
        walked.push(Walked { source: i, input: t, name, imatrix_name: String::new() });
    }
    // llama.cpp maps names back only when it has an importance matrix (and aborts on a name
    // it cannot map).
    if request.imatrix.is_some() {
        for w in &mut walked {
            w.imatrix_name = prune.original(&w.name)?;
        }
    }
    if request.keep_split {
        walked.sort_by_key(|w| (w.input.split, w.input.offset));
    }
    let block_count = (!request.prune_layers.is_empty()).then(|| prune.left());
    Ok((walked, block_count))
}

/// llama-quantize's `--prune-layers`: the layers of `blk.N.` names left out or renumbered, in
/// the order it meets them.
struct Pruning {
    prune: Vec<i64>,
    /// Old layer number to its new number (`None`: pruned).
    mapped: BTreeMap<i64, Option<i64>>,
    next: i64,
}

impl Pruning {
    fn new(layers: &[u32]) -> Pruning {
        let mut prune: Vec<i64> = layers.iter().map(|&l| i64::from(l)).collect();
        prune.sort_unstable();
        prune.dedup();
        Pruning { prune, mapped: BTreeMap::new(), next: 0 }
    }

    /// The `blk.N.` anywhere in `name` (its first), as `std::regex` finds `blk\.(\d+)\.`: the
    /// digits' range in the name and their value (`None` past an `int`, where llama.cpp
    /// fails).
    fn find(name: &str) -> Option<(std::ops::Range<usize>, Option<i64>)> {
        let b = name.as_bytes();
        let mut from = 0;
        while let Some(at) = name[from..].find("blk.") {
            let start = from + at + 4;
            let digits = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 && b.get(start + digits) == Some(&b'.') {
                let value = name[start..start + digits].parse::<i64>().ok().filter(|&v| v <= i64::from(i32::MAX));
                return Some((start..start + digits, value));
            }
            from += at + 1;
        }
        None
    }

    /// `name` renumbered; `None` when its layer is pruned.
    fn remap(&mut self, name: &str) -> Result<Option<String>> {
        if self.prune.is_empty() {
            return Ok(Some(name.to_string()));
        }
        let Some((range, value)) = Pruning::find(name) else { return Ok(Some(name.to_string())) };
        let layer = value.ok_or_else(|| Error::usage(format!("layer number of {name:?} past an int")))?;
        if !self.mapped.contains_key(&layer) {
            let new = if self.prune.contains(&layer) {
                None
            } else if layer < self.prune[0] {
                self.next = layer + 1;
                Some(layer)
            } else {
                self.next += 1;
                Some(self.next - 1)
            };
            self.mapped.insert(layer, new);
        }
        Ok(self.mapped[&layer].map(|n| format!("{}{n}{}", &name[..range.start], &name[range.end..])))
    }

    /// The name the importance matrix knows a renamed tensor by: its original layer number.
    fn original(&self, name: &str) -> Result<String> {
        if self.mapped.is_empty() {
            return Ok(name.to_string());
        }
        let Some((range, _)) = Pruning::find(name) else { return Ok(name.to_string()) };
        let text = &name[range.clone()];
        let old = self.mapped.iter().find(|(_, new)| new.map(|n| n.to_string()).as_deref() == Some(text));
        match old {
            Some((old, _)) => Ok(format!("{}{old}{}", &name[..range.start], &name[range.end..])),
            None => Err(Error::usage(format!("importance matrix mapping error for {name}"))),
        }
    }

    /// Layers left: the number llama-quantize writes as the block count.
    fn left(&self) -> u32 {
        self.next.clamp(0, i64::from(u32::MAX)) as u32
    }
}

/// The file type `COPY` writes: the input's `general.file_type` (a `u32`), else the file type
/// of its most common tensor type, marked as guessed.
pub(super) fn copied_file_type(input: &QuantizeInput, overrides: &[KvOverride]) -> Result<u32> {
    if let Some(OverrideValue::Int(i)) =
        overrides.iter().rev().find(|o| o.key() == "general.file_type").map(KvOverride::value)
    {
        return Ok(*i as u32);
    }
    match input.metadata.iter().find(|(k, _)| k == "general.file_type").map(|(_, v)| v) {
        Some(MetaValue::Number(Number::U32(t))) => return Ok(*t),
        Some(v) => {
            return Err(Error::invalid(Rule::BadMetadata, format!("general.file_type is {}, not a u32", v.to_json())));
        }
        None => {}
    }
    // Counted in llama.cpp's order (pruning does not change it); the first type to reach the
    // most wins.
    let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
    let (mut best, mut best_count) = (GgmlType::F32, 0);
    for i in loader_order(input) {
        let t = input.tensors[i].ggml_type;
        let n = seen.entry(t.id()).or_default();
        *n += 1;
        if best_count < *n {
            best_count = *n;
            best = t;
        }
    }
    Ok(guessed_file_type(best) | GUESSED)
}
