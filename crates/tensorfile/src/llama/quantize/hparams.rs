//! What llama.cpp's rules read of the model: its architecture, layer and expert counts, the
//! heads of its first layer, and whether llama.cpp takes it for a 70B model; read from the
//! input's key/values with `--override-kv` applied, as llama.cpp's model loader reads them
//! (each key of exactly its type).

use super::overrides::{KvOverride, OverrideValue};
use crate::error::{Error, Result, Rule};
use crate::model::{MetaValue, Number, TypedArray};

/// llama.cpp's most layers (`LLAMA_MAX_LAYERS`).
const MAX_LAYERS: u32 = 512;
/// llama.cpp's most experts (`LLAMA_MAX_EXPERTS`).
const MAX_EXPERTS: u32 = 1024;

/// The architectures whose rules differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Arch {
    Llama,
    Falcon,
    BailingMoe3,
    Glm5Next,
    /// An architecture that is a "70B" model at 80 layers (`qwen2`, `deci`, `olmo`), or at 68
    /// (`jais2`): the number of layers.
    SeventyAt(u32),
    Other,
}

impl Arch {
    fn of(name: &str) -> Arch {
        match name {
            "llama" => Arch::Llama,
            "falcon" => Arch::Falcon,
            "bailingmoe3" => Arch::BailingMoe3,
            "glm5-next" => Arch::Glm5Next,
            "qwen2" | "deci" | "olmo" => Arch::SeventyAt(80),
            "jais2" => Arch::SeventyAt(68),
            _ => Arch::Other,
        }
    }
}

/// The model facts the rules use.
#[derive(Debug, Clone)]
pub(super) struct Model {
    /// `general.architecture`, which prefixes the model's keys.
    pub arch_name: String,
    pub arch: Arch,
    /// `<arch>.block_count`: every layer, the next-token-prediction ones included.
    pub n_layer_all: u32,
    /// `<arch>.expert_count` (0 without experts).
    pub n_expert: u32,
    /// Heads and key/value heads of the first layer.
    pub n_head: u32,
    pub n_head_kv: u32,
    /// Whether llama.cpp's model type is `LLM_TYPE_70B` (attention values get more bits).
    pub is_70b: bool,
}

impl Model {
    /// Heads per key/value head of the first layer (0 without key/value heads).
    pub fn n_gqa(&self) -> u32 {
        self.n_head.checked_div(self.n_head_kv).unwrap_or(0)
    }

    /// The facts of a model with these key/values and overrides.
    pub fn read(metadata: &[(String, MetaValue)], overrides: &[KvOverride]) -> Result<Model> {
        let keys = Keys { metadata, overrides };
        let arch_name = keys.text("general.architecture")?.ok_or_else(|| {
            Error::invalid(Rule::MissingField, "no general.architecture: llama.cpp cannot tell the model")
        })?;
        let arch = Arch::of(&arch_name);
        // The loader reads these of every model, refusing them of another type.
        keys.u32("general.file_type")?;
        keys.u16("split.count")?;
        let key = |k: &str| format!("{arch_name}.{k}");
        let n_layer_all = keys.u32(&key("block_count"))?.ok_or_else(|| {
            Error::invalid(Rule::MissingField, format!("key not found in model: {}", key("block_count")))
        })?;
        if n_layer_all == 0 || n_layer_all > MAX_LAYERS {
            return Err(Error::invalid(
                Rule::BadMetadata,
                format!("{} is {n_layer_all}: llama.cpp takes 1 to {MAX_LAYERS} layers", key("block_count")),
            ));
        }
        let n_nextn = keys.u32(&key("nextn_predict_layers"))?.unwrap_or(0);
        if n_nextn > n_layer_all {
            return Err(Error::invalid(Rule::BadMetadata, format!("{n_nextn} prediction layers of {n_layer_all}")));
        }
        let n_expert = keys.u32(&key("expert_count"))?.unwrap_or(0);
        if n_expert > MAX_EXPERTS {
            return Err(Error::invalid(
                Rule::BadMetadata,
                format!("{n_expert} experts: llama.cpp takes at most {MAX_EXPERTS}"),
            ));
        }
        let n_head = keys.per_layer(&key("attention.head_count"), n_layer_all)?;
        let n_head_kv = keys.per_layer(&key("attention.head_count_kv"), n_layer_all)?.or(n_head);
        let (n_head, n_head_kv) = (n_head.unwrap_or(0), n_head_kv.unwrap_or(0));
        let n_layer = n_layer_all - n_nextn;
        let is_70b = match arch {
            Arch::Llama => n_expert != 8 && n_layer == 80 && n_head != n_head_kv,
            Arch::SeventyAt(at) => n_layer == at,
            _ => false,
        };
        Ok(Model { arch_name, arch, n_layer_all, n_expert, n_head, n_head_kv, is_70b })
    }
}

/// Key/values as llama.cpp's loader reads them: an override of the right kind first, else the
/// file's value, which must be of exactly the type asked for.
struct Keys<'a> {
    metadata: &'a [(String, MetaValue)],
    overrides: &'a [KvOverride],
}

impl Keys<'_> {
    fn stored(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The override of `key`, the last given (llama.cpp keeps one per key).
    fn overridden(&self, key: &str) -> Option<&OverrideValue> {
        self.overrides.iter().rev().find(|o| o.key() == key).map(KvOverride::value)
    }

    fn wrong_type(key: &str, want: &str, v: &MetaValue) -> Error {
        Error::invalid(
            Rule::BadMetadata,
            format!("key {key} has wrong type {}, but llama.cpp reads it as {want}", describe(v)),
        )
    }

    fn text(&self, key: &str) -> Result<Option<String>> {
        if let Some(OverrideValue::Str(s)) = self.overridden(key) {
            return Ok(Some(s.clone()));
        }
        match self.stored(key) {
            None => Ok(None),
            Some(MetaValue::Text(s)) => Ok(Some(s.clone())),
            Some(v) => Err(Self::wrong_type(key, "a string", v)),
        }
    }

    fn u32(&self, key: &str) -> Result<Option<u32>> {
        if let Some(OverrideValue::Int(i)) = self.overridden(key) {
            // The loader stores the 64-bit override in the 32-bit field, as C++ truncates it.
            return Ok(Some(*i as u32));
        }
        match self.stored(key) {
            None => Ok(None),
            Some(MetaValue::Number(Number::U32(v))) => Ok(Some(*v)),
            Some(v) => Err(Self::wrong_type(key, "u32", v)),
        }
    }

    fn u16(&self, key: &str) -> Result<Option<u16>> {
        if let Some(OverrideValue::Int(i)) = self.overridden(key) {
            return Ok(Some(*i as u16));
        }
        match self.stored(key) {
            None => Ok(None),
            Some(MetaValue::Number(Number::U16(v))) => Ok(Some(*v)),
            Some(v) => Err(Self::wrong_type(key, "u16", v)),
        }
    }

    /// A per-layer count, given once or as an array of one per layer: the first layer's.
    fn per_layer(&self, key: &str, n_layer: u32) -> Result<Option<u32>> {
        match self.stored(key) {
            Some(MetaValue::TypedArray(a)) => {
                if a.len() != n_layer as usize {
                    return Err(Error::invalid(
                        Rule::BadMetadata,
                        format!("key {key} has {} values for {n_layer} layers", a.len()),
                    ));
                }
                match a {
                    TypedArray::U32(v) => Ok(v.first().copied()),
                    TypedArray::I32(v) => Ok(v.first().map(|&x| x as u32)),
                    _ => Err(Error::invalid(
                        Rule::BadMetadata,
                        format!("key {key} is an array of {}, not of u32 or i32", a.element_name()),
                    )),
                }
            }
            // Only a key the file has is read (or overridden): a missing one stays unset.
            Some(_) => self.u32(key),
            None => Ok(None),
        }
    }
}

/// What kind of value `v` is, in GGUF's words.
pub(super) fn describe(v: &MetaValue) -> String {
    match v {
        MetaValue::Number(n) => n.type_name().to_string(),
        MetaValue::TypedArray(a) => format!("array of {}", a.element_name()),
        MetaValue::Text(_) => "string".into(),
        MetaValue::Bool(_) => "bool".into(),
        other => other.to_json().to_string(),
    }
}

/// The `N` of a name starting `blk.N.`, as C's `sscanf(name, "blk.%d.", &n)` reads it: white
/// space and a sign allowed before the digits, anything after them ignored, a number past the
/// range of `long` saturated and then cut to `int` as glibc stores it.
pub(super) fn block_number(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("blk.")?;
    let rest = rest.trim_start_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']);
    let (negative, rest) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit);
    let mut any = false;
    let mut value: i64 = 0;
    for d in digits {
        any = true;
        let d = i64::from(d - b'0');
        value = if negative {
            value.saturating_mul(10).saturating_sub(d)
        } else {
            value.saturating_mul(10).saturating_add(d)
        };
    }
    // Truncation is what glibc does with the `long` it parsed.
    any.then_some(value as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_numbers_read_as_sscanf_reads_them() {
        assert_eq!(block_number("blk.12.attn_q.weight"), Some(12));
        assert_eq!(block_number("blk. -3.x"), Some(-3));
        assert_eq!(block_number("blk.7"), Some(7));
        assert_eq!(block_number("blk.x.7"), None);
        assert_eq!(block_number("output.weight"), None);
        assert_eq!(block_number("blk.99999999999999999999999.x"), Some(-1));
    }
}
