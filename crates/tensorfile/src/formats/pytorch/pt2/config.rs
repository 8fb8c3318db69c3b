//! The weights and constants configs of a torch ≥ 2.9 archive: for each fully qualified
//! name, the record holding its storage and the tensor's view of it.

use serde_json::Value as Json;

use crate::error::{Error, Result, Rule};
use crate::formats::pytorch::{View, export_dtype};

/// One config entry.
#[derive(Debug, Clone)]
pub struct Payload {
    pub fqn: String,
    /// The record under the config's folder.
    pub path_name: String,
    pub is_param: bool,
    /// The record is a `torch.save` file (tensor subclasses).
    pub use_pickle: bool,
    /// The tensor as a view of the record's storage; `None` for pickled payloads without
    /// metadata (custom objects).
    pub view: Option<View>,
}

/// An `{"as_int": n}` value.
fn as_int(v: &Json, what: &str) -> Result<u64> {
    v.get("as_int")
        .and_then(Json::as_u64)
        .ok_or_else(|| Error::invalid(Rule::BadField, format!("{what} is not a non-negative {{\"as_int\": n}}")))
}

fn ints(v: &Json, what: &str) -> Result<Vec<u64>> {
    v.as_array()
        .ok_or_else(|| Error::invalid(Rule::BadField, format!("{what} is not a list")))?
        .iter()
        .map(|x| as_int(x, what))
        .collect()
}

/// The view a `tensor_meta` describes.
pub fn view(meta: &Json) -> Result<View> {
    let n = meta
        .get("dtype")
        .and_then(Json::as_i64)
        .ok_or_else(|| Error::invalid(Rule::MissingField, "tensor_meta without dtype"))?;
    let dtype =
        export_dtype(n).ok_or_else(|| Error::invalid(Rule::UnknownDType, format!("unknown export dtype {n}")))?;
    let shape = ints(&meta["sizes"], "sizes")?;
    let strides = ints(&meta["strides"], "strides")?;
    if shape.len() != strides.len() {
        return Err(Error::invalid(Rule::BadField, format!("{} sizes but {} strides", shape.len(), strides.len())));
    }
    let storage_offset = match meta.get("storage_offset") {
        Some(v) => as_int(v, "storage_offset")?,
        None => 0,
    };
    Ok(View { dtype, shape, strides, storage_offset })
}

/// Parse a config file: `{"config": {fqn: payload}}`, in file order.
pub fn parse(text: &str) -> Result<Vec<Result<Payload, (String, Error)>>> {
    let j: Json = serde_json::from_str(text).map_err(|e| {
        let rule = if e.to_string().contains("recursion limit") { Rule::TooDeep } else { Rule::BadJson };
        Error::invalid(rule, format!("payload config: {e}"))
    })?;
    let map = j
        .get("config")
        .and_then(Json::as_object)
        .ok_or_else(|| Error::invalid(Rule::BadField, "payload config without a \"config\" object"))?;
    Ok(map
        .iter()
        .map(|(fqn, p)| {
            let payload = || -> Result<Payload> {
                let path_name = p
                    .get("path_name")
                    .and_then(Json::as_str)
                    .ok_or_else(|| Error::invalid(Rule::MissingField, "payload without path_name"))?
                    .to_string();
                let use_pickle = p.get("use_pickle").and_then(Json::as_bool).unwrap_or(false);
                let view = match p.get("tensor_meta") {
                    Some(m) if !m.is_null() => Some(view(m)?),
                    _ if use_pickle => None,
                    _ => return Err(Error::invalid(Rule::MissingField, "payload without tensor_meta")),
                };
                Ok(Payload {
                    fqn: fqn.clone(),
                    path_name,
                    is_param: p.get("is_param").and_then(Json::as_bool).unwrap_or(false),
                    use_pickle,
                    view,
                })
            };
            payload().map_err(|e| (fqn.clone(), e))
        })
        .collect())
}
