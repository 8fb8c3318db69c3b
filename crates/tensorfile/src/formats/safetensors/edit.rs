//! Other `__metadata__` for a safetensors file: the header's JSON with the metadata object
//! replaced (kept where it was, first when it is new; left out when empty, as safetensors
//! writes a file without metadata), padded with spaces to a multiple of 8 bytes as the
//! safetensors library pads it, then the data region copied byte for byte.

use serde_json::{Map, Value};

use super::SafetensorsReader;
use crate::error::{Error, Result, Rule};
use crate::formats::{MetaEdits, Output};
use crate::limits::MAX_SAFETENSORS_HEADER;
use crate::model::MetaValue;
use crate::output::copy_range;

/// The key of the header's metadata object.
const METADATA_KEY: &str = "__metadata__";

/// The unit's metadata editor.
pub(crate) fn edit(input: &MetaEdits<'_>, out: &mut dyn Output) -> Result<()> {
    let reader =
        input.file_as::<SafetensorsReader>().ok_or_else(|| Error::usage("this edit is for safetensors files"))?;
    let src = reader.source();
    let raw = src.range(8, reader.header_len())?;
    let old: Map<String, Value> =
        serde_json::from_slice(&raw).map_err(|e| Error::invalid(Rule::BadJson, format!("header: {e}")))?;
    let mut metadata = Map::new();
    for (key, value) in input.metadata {
        let MetaValue::Text(text) = value else {
            return Err(Error::usage(format!("{key}: safetensors metadata holds strings only")));
        };
        metadata.insert(key.clone(), Value::String(text.clone()));
    }
    let mut header = Map::new();
    if !metadata.is_empty() && !old.contains_key(METADATA_KEY) {
        header.insert(METADATA_KEY.into(), Value::Object(metadata.clone()));
    }
    for (key, value) in old {
        if key != METADATA_KEY {
            header.insert(key, value);
        } else if !metadata.is_empty() {
            header.insert(key, Value::Object(std::mem::take(&mut metadata)));
        }
    }
    let mut bytes = serde_json::to_vec(&Value::Object(header)).map_err(|e| Error::usage(e.to_string()))?;
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    if bytes.len() as u64 > MAX_SAFETENSORS_HEADER {
        return Err(Error::unsupported(format!(
            "header of {} bytes exceeds the safetensors limit of {MAX_SAFETENSORS_HEADER}",
            bytes.len()
        )));
    }
    out.write_all(&(bytes.len() as u64).to_le_bytes())?;
    out.write_all(&bytes)?;
    copy_range(src, 8 + reader.header_len(), src.len(), out)
}
