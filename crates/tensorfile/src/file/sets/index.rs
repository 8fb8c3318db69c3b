//! The index of a sharded checkpoint, as huggingface_hub writes it:
//!
//! ```json
//! {"metadata": {"total_size": 1692488}, "weight_map": {"fc.weight": "model-00001-of-00002.safetensors"}}
//! ```
//!
//! An index can come from anywhere: its size and nesting are bounded, every shard name must
//! stay inside the index's folder, and every problem is reported with its rule.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_ENTRIES, MAX_NESTING, MAX_SHARD_INDEX};
use crate::model::MetaValue;

/// A parsed index.
#[derive(Debug, Clone)]
pub struct ShardIndex {
    /// `metadata`, in file order (huggingface_hub writes `total_size`, the bytes of every tensor).
    pub metadata: Vec<(String, MetaValue)>,
    /// `weight_map`, in file order: tensor name, shard file name (relative to the index's
    /// folder, checked not to leave it).
    pub weight_map: Vec<(String, String)>,
}

/// Whether `bytes` could be an index: a JSON object (no tensor format starts with `{`).
pub fn looks_like_index(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

impl ShardIndex {
    /// Parse the text of an index file.
    pub fn parse(bytes: &[u8]) -> Result<ShardIndex> {
        if bytes.len() as u64 > MAX_SHARD_INDEX {
            return Err(Error::invalid(
                Rule::HeaderTooLarge,
                format!("index of {} bytes (limit {MAX_SHARD_INDEX})", bytes.len()),
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| Error::invalid(Rule::BadUtf8, format!("index: {e}")))?;
        let value: Json = serde_json::from_str(text).map_err(|e| {
            let rule = if e.to_string().contains("recursion limit") { Rule::TooDeep } else { Rule::BadJson };
            Error::invalid(rule, format!("index: {e}"))
        })?;
        if depth(&value) > MAX_NESTING {
            return Err(Error::invalid(Rule::TooDeep, format!("index nested deeper than {MAX_NESTING}")));
        }
        let Json::Object(mut top) = value else {
            return Err(Error::invalid(Rule::BadField, "the index is not a JSON object"));
        };
        let weight_map = match top.remove("weight_map") {
            Some(Json::Object(map)) => weight_map(map)?,
            Some(_) => return Err(Error::invalid(Rule::BadField, "weight_map is not an object")),
            None => {
                return Err(Error::invalid(
                    Rule::MissingField,
                    "no \"weight_map\": not the index of a sharded checkpoint",
                ));
            }
        };
        let metadata = match top.remove("metadata") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Object(m)) => m.iter().map(|(k, v)| (k.clone(), MetaValue::from_json(v))).collect(),
            Some(_) => return Err(Error::invalid(Rule::BadMetadata, "the index's metadata is not an object")),
        };
        Ok(ShardIndex { metadata, weight_map })
    }

    /// The index as huggingface_hub writes it: `metadata` holding `total_size`, `weight_map`
    /// sorted by tensor name, indented by two spaces.
    pub fn to_json(total_size: u64, weight_map: &[(String, String)]) -> Vec<u8> {
        let sorted: BTreeMap<&str, &str> = weight_map.iter().map(|(t, s)| (t.as_str(), s.as_str())).collect();
        let mut map = Map::new();
        for (tensor, shard) in sorted {
            map.insert(tensor.to_string(), Json::String(shard.to_string()));
        }
        let mut metadata = Map::new();
        metadata.insert("total_size".into(), Json::from(total_size));
        let mut top = Map::new();
        top.insert("metadata".into(), Json::Object(metadata));
        top.insert("weight_map".into(), Json::Object(map));
        let mut text = serde_json::to_vec_pretty(&Json::Object(top)).unwrap_or_default();
        text.push(b'\n');
        text
    }
}

fn weight_map(map: Map<String, Json>) -> Result<Vec<(String, String)>> {
    if map.len() > MAX_ENTRIES {
        return Err(Error::invalid(
            Rule::TooManyEntries,
            format!("weight_map of {} tensors (limit {MAX_ENTRIES})", map.len()),
        ));
    }
    map.into_iter()
        .map(|(tensor, shard)| {
            let Json::String(shard) = shard else {
                return Err(
                    Error::invalid(Rule::BadField, "its shard in weight_map is not a file name").for_tensor(tensor)
                );
            };
            check_shard_name(&shard).map_err(|e| e.for_tensor(&tensor))?;
            Ok((tensor, shard))
        })
        .collect()
}

/// A shard must be a file inside the index's folder: no absolute path, drive, `..`.
fn check_shard_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('\0') {
        return Err(Error::invalid(Rule::BadField, format!("shard file name {name:?}")));
    }
    if !crate::zip::is_safe_name(name) {
        return Err(Error::invalid(
            Rule::UnsafePath,
            format!("shard {name:?} leaves the index's folder (absolute path, drive or `..`)"),
        ));
    }
    Ok(())
}

/// How deeply `v` nests (a scalar is 1). serde_json refuses more than 128 levels, which bounds
/// this recursion.
fn depth(v: &Json) -> usize {
    match v {
        Json::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Json::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        ShardIndex::parse(text.as_bytes()).unwrap_err().rule().unwrap()
    }

    #[test]
    fn parses_what_huggingface_hub_writes() {
        let text = r#"{"metadata": {"total_size": 12, "note": "x"},
            "weight_map": {"b": "m-00002-of-00002.safetensors", "a": "m-00001-of-00002.safetensors"}}"#;
        let index = ShardIndex::parse(text.as_bytes()).unwrap();
        assert_eq!(index.weight_map[0], ("b".to_string(), "m-00002-of-00002.safetensors".to_string()));
        assert_eq!(index.metadata[0], ("total_size".to_string(), MetaValue::Int(12)));
        let written = ShardIndex::to_json(12, &index.weight_map);
        let reread = ShardIndex::parse(&written).unwrap();
        assert_eq!(reread.weight_map[0].0, "a", "sorted by tensor name");
        assert!(looks_like_index(b"  \n{}") && !looks_like_index(b"[1]"));
    }

    #[test]
    fn refuses_bad_indexes_with_their_rule() {
        assert_eq!(rule(r#"{"metadata": {}}"#), Rule::MissingField);
        assert_eq!(rule(r#"{"weight_map": []}"#), Rule::BadField);
        assert_eq!(rule(r#"{"weight_map": {"a": 3}}"#), Rule::BadField);
        assert_eq!(rule(r#"{"weight_map": {"a": ""}}"#), Rule::BadField);
        assert_eq!(rule(r#"{"weight_map": {"a": "../x.safetensors"}}"#), Rule::UnsafePath);
        assert_eq!(rule(r#"{"weight_map": {"a": "/etc/x.safetensors"}}"#), Rule::UnsafePath);
        assert_eq!(rule(r#"{"weight_map": {"a": "C:x.safetensors"}}"#), Rule::UnsafePath);
        assert_eq!(rule(r#"{"weight_map": {"a": "sub\\..\\..\\x"}}"#), Rule::UnsafePath);
        assert_eq!(rule(r#"{"weight_map": {}, "metadata": 3}"#), Rule::BadMetadata);
        assert_eq!(rule(r#"{"weight_map": {"#), Rule::BadJson);
        assert_eq!(rule("[1]"), Rule::BadField);
        let deep = format!(r#"{{"weight_map": {{}}, "metadata": {{"a": {}1{}}}}}"#, "[".repeat(70), "]".repeat(70));
        assert_eq!(rule(&deep), Rule::TooDeep);
        let deeper = format!(r#"{{"weight_map": {{}}, "x": {}1{}}}"#, "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(rule(&deeper), Rule::TooDeep);
        assert_eq!(ShardIndex::parse(&[b'{', 0xff, b'}']).unwrap_err().rule(), Some(Rule::BadUtf8));
    }
}
