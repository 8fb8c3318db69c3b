//! The output's key/values, as llama-quantize makes them: the input's in order, then
//! `general.quantization_version` and `general.file_type` (each moved to the end when the
//! input had it), the split keys removed, then every override in order (each moved to the
//! end), then the block count of a pruned model. A key set again leaves its place and goes
//! last, as ggml's `gguf_set_val_*` do.

use super::overrides::KvOverride;
use crate::error::{Error, Result, Rule};
use crate::formats::gguf::split::{SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT as SPLIT_TENSORS};
use crate::model::{MetaValue, Number, TypedArray};

/// ggml's `GGML_QNT_VERSION`.
const QUANTIZATION_VERSION: u32 = 2;
const ALIGNMENT: &str = "general.alignment";

/// `key` set to `value`, last.
pub(super) fn set(kvs: &mut Vec<(String, MetaValue)>, key: &str, value: MetaValue) {
    kvs.retain(|(k, _)| k != key);
    kvs.push((key.to_string(), value));
}

/// The key/values of the (first) output file.
pub(super) fn output(
    input: &[(String, MetaValue)],
    file_type: u32,
    overrides: &[KvOverride],
    block_count: Option<(String, u32)>,
) -> Result<Vec<(String, MetaValue)>> {
    for (key, value) in input {
        if let MetaValue::TypedArray(TypedArray::Array(_)) = value {
            return Err(Error::invalid(
                Rule::BadMetadata,
                format!("key {key:?} holds arrays of arrays, which ggml does not read"),
            ));
        }
    }
    let mut kvs = input.to_vec();
    set(&mut kvs, "general.quantization_version", MetaValue::Number(Number::U32(QUANTIZATION_VERSION)));
    set(&mut kvs, "general.file_type", MetaValue::Number(Number::U32(file_type)));
    kvs.retain(|(k, _)| ![SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS].contains(&k.as_str()));
    for o in overrides {
        let value = o.written();
        if o.key() == ALIGNMENT {
            // ggml aborts on any other alignment; the output is laid out at what it says.
            match value {
                MetaValue::Number(Number::U32(a)) if a.is_power_of_two() => {}
                other => {
                    return Err(Error::usage(format!(
                        "override of {ALIGNMENT} by {}: ggml takes only a u32 power of two there",
                        other.to_json()
                    )));
                }
            }
        }
        set(&mut kvs, o.key(), value);
    }
    if let Some((key, n)) = block_count {
        set(&mut kvs, &key, MetaValue::Number(Number::U32(n)));
    }
    Ok(kvs)
}

/// The keys of split `no` of `count` (the first file's come after all its others).
pub(super) fn split_keys(kvs: &mut Vec<(String, MetaValue)>, no: u16, count: u16, tensors: usize) {
    set(kvs, SPLIT_NO, MetaValue::Number(Number::U16(no)));
    set(kvs, SPLIT_COUNT, MetaValue::Number(Number::U16(count)));
    // An `int32_t`, as llama.cpp writes it.
    set(kvs, SPLIT_TENSORS, MetaValue::Number(Number::I32(tensors as i32)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llama::OverrideValue;

    fn u32v(n: u32) -> MetaValue {
        MetaValue::Number(Number::U32(n))
    }

    #[test]
    fn keys_set_again_go_last_and_split_keys_go() {
        let input = vec![
            ("general.architecture".to_string(), MetaValue::Text("llama".into())),
            ("general.file_type".to_string(), u32v(1)),
            ("split.count".to_string(), MetaValue::Number(Number::U16(1))),
            ("general.name".to_string(), MetaValue::Text("x".into())),
        ];
        let o = [KvOverride::new("general.architecture", OverrideValue::Str("y".into())).unwrap()];
        let out = output(&input, 15, &o, None).unwrap();
        let keys: Vec<&str> = out.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["general.name", "general.quantization_version", "general.file_type", "general.architecture"]);
        assert_eq!(out[2].1, u32v(15));
    }

    #[test]
    fn an_alignment_override_must_be_a_power_of_two() {
        let bad = [KvOverride::new(ALIGNMENT, OverrideValue::Int(48)).unwrap()];
        assert!(output(&[], 2, &bad, None).is_err());
        let good = [KvOverride::new(ALIGNMENT, OverrideValue::Int(64)).unwrap()];
        assert_eq!(output(&[], 2, &good, None).unwrap()[2].1, u32v(64));
    }
}
