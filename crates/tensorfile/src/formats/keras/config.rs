//! `config.json` and `metadata.json`: what `info` shows of the model. The config is the model
//! as Keras serializes it (`serialize_keras_object`): `{"module", "class_name", "config":
//! {"name", "layers": [...]}, "build_config", "compile_config"}`; only what `info` shows is
//! taken from it, and a config without layers (a subclassed model) is described without them.

use serde_json::{Map, Value as Json, json};

use crate::error::{Error, Result, Rule};
use crate::model::MetaValue;

/// The longest `config.json` or `metadata.json` read (Keras's are a few kilobytes; a model of
/// thousands of layers some megabytes).
pub(super) const MAX_JSON_MEMBER: u64 = 64 << 20;

/// What `info` shows of `config.json`.
#[derive(Debug, Clone)]
pub(super) struct ModelConfig {
    /// The model's class (`Sequential`, `Functional`, a subclass's name).
    pub class_name: String,
    /// The model's name, when the config gives one.
    pub name: Option<String>,
    /// The Python module of the class (`keras`, `keras.src.models.functional`...).
    pub module: Option<String>,
    /// The top-level layers, in the config's order: (name, class), when the config lists them.
    pub layers: Option<Vec<(String, String)>>,
    /// The optimizer's class, when the model was compiled.
    pub optimizer: Option<String>,
    /// The loss as the compile config gives it (a name, or a serialized object's class).
    pub loss: Option<Json>,
    /// `build_config.input_shape`, when given.
    pub input_shape: Option<Json>,
}

/// A JSON member's text parsed, or why not (naming the member).
pub(super) fn parse_json(member: &str, bytes: &[u8]) -> Result<Json> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::invalid(Rule::BadUtf8, format!("{member}: {e}")))?;
    serde_json::from_str(text).map_err(|e| Error::invalid(Rule::BadJson, format!("{member}: {e}")))
}

/// The text of `value`'s string field `key`, if it is one.
fn text(value: &Map<String, Json>, key: &str) -> Option<String> {
    value.get(key).and_then(Json::as_str).map(str::to_string)
}

/// The model `config.json` describes.
pub(super) fn model(member: &str, config: &Json) -> Result<ModelConfig> {
    let bad = |rule: Rule, why: String| Error::invalid(rule, format!("{member}: {why}"));
    let top = config.as_object().ok_or_else(|| bad(Rule::BadJson, "not a JSON object".into()))?;
    let class_name = text(top, "class_name").ok_or_else(|| bad(Rule::MissingField, "no class_name".into()))?;
    let inner = match top.get("config") {
        None | Some(Json::Null) => None,
        Some(Json::Object(inner)) => Some(inner),
        Some(_) => return Err(bad(Rule::BadField, "`config` is not an object".into())),
    };
    let name = inner.and_then(|c| text(c, "name")).or_else(|| text(top, "name"));
    let layers = match inner.and_then(|c| c.get("layers")) {
        None => None,
        Some(Json::Array(layers)) => Some(
            layers
                .iter()
                .enumerate()
                .map(|(i, layer)| {
                    let layer =
                        layer.as_object().ok_or_else(|| bad(Rule::BadField, format!("layer {i} is not an object")))?;
                    let class = text(layer, "class_name")
                        .ok_or_else(|| bad(Rule::MissingField, format!("layer {i} has no class_name")))?;
                    let config = layer.get("config").and_then(Json::as_object);
                    let name = config.and_then(|c| text(c, "name")).or_else(|| text(layer, "name"));
                    Ok((name.unwrap_or_default(), class))
                })
                .collect::<Result<Vec<_>>>()?,
        ),
        Some(_) => return Err(bad(Rule::BadField, "`config.layers` is not a list".into())),
    };
    let compile = top.get("compile_config").and_then(Json::as_object);
    let optimizer = compile.and_then(|c| match c.get("optimizer") {
        Some(Json::String(s)) => Some(s.clone()),
        Some(Json::Object(o)) => text(o, "class_name"),
        _ => None,
    });
    let loss = compile.and_then(|c| c.get("loss")).filter(|l| !l.is_null()).map(|l| match l {
        Json::Object(o) => o.get("class_name").cloned().unwrap_or_else(|| l.clone()),
        other => other.clone(),
    });
    let input_shape = top.get("build_config").and_then(|b| b.get("input_shape")).filter(|s| !s.is_null()).cloned();
    Ok(ModelConfig { class_name, name, module: text(top, "module"), layers, optimizer, loss, input_shape })
}

/// `metadata.json`'s keys and values, in the file's order.
pub(super) fn metadata(member: &str, value: &Json) -> Result<Vec<(String, MetaValue)>> {
    let object =
        value.as_object().ok_or_else(|| Error::invalid(Rule::BadJson, format!("{member}: not a JSON object")))?;
    Ok(object.iter().map(|(k, v)| (k.clone(), MetaValue::from_json(v))).collect())
}

/// The weights of one layer: the group Keras keeps its variables in, how many tensors and
/// elements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct LayerWeights {
    pub group: String,
    pub tensors: u64,
    pub parameters: u64,
}

impl ModelConfig {
    /// The description `info` shows: the model's class, name and layers (each with the
    /// weights `weights_of` finds for its name), how it was compiled, the Keras version.
    pub(super) fn describe(
        &self,
        keras_version: Option<&str>,
        weights_of: impl Fn(&str) -> Option<LayerWeights>,
        optimizer_tensors: u64,
    ) -> (Json, String) {
        let mut out = Map::new();
        let mut head = self.class_name.clone();
        if let Some(name) = &self.name {
            out.insert("name".into(), json!(name));
            head.push_str(&format!(" {name:?}"));
        }
        out.insert("class_name".into(), json!(self.class_name));
        if let Some(module) = &self.module {
            out.insert("module".into(), json!(module));
        }
        if let Some(version) = keras_version {
            out.insert("keras_version".into(), json!(version));
            head.push_str(&format!(", saved by Keras {version}"));
        }
        if let Some(shape) = &self.input_shape {
            out.insert("input_shape".into(), shape.clone());
            head.push_str(&format!(", input shape {shape}"));
        }
        let mut lines = vec![head];
        if let Some(layers) = &self.layers {
            out.insert("layer_count".into(), json!(layers.len()));
            lines.push(format!("{} layers:", layers.len()));
            let width = layers.iter().map(|(n, _)| n.chars().count()).max().unwrap_or(0);
            let class_width = layers.iter().map(|(_, c)| c.chars().count()).max().unwrap_or(0);
            let rows: Vec<Json> = layers
                .iter()
                .map(|(name, class)| {
                    let mut row = Map::new();
                    row.insert("name".into(), json!(name));
                    row.insert("class_name".into(), json!(class));
                    let mut line = format!("  {name:<width$}  {class:<class_width$}");
                    if let Some(w) = weights_of(name) {
                        line.push_str(&match w.tensors {
                            0 => format!("  no weights ({})", w.group),
                            1 => format!("  {} parameters in 1 tensor ({})", w.parameters, w.group),
                            n => format!("  {} parameters in {n} tensors ({})", w.parameters, w.group),
                        });
                        row.insert("weights".into(), json!(w.group));
                        row.insert("tensors".into(), json!(w.tensors));
                        row.insert("parameters".into(), json!(w.parameters));
                    }
                    lines.push(line);
                    Json::Object(row)
                })
                .collect();
            out.insert("layers".into(), Json::Array(rows));
        }
        if self.optimizer.is_some() || self.loss.is_some() {
            let mut compiled = Map::new();
            let mut parts = Vec::new();
            if let Some(o) = &self.optimizer {
                compiled.insert("optimizer".into(), json!(o));
                parts.push(format!("optimizer {o}"));
                if optimizer_tensors > 0 {
                    compiled.insert("optimizer_tensors".into(), json!(optimizer_tensors));
                    parts.push(format!("{optimizer_tensors} optimizer tensors saved"));
                }
            }
            if let Some(l) = &self.loss {
                compiled.insert("loss".into(), l.clone());
                parts.push(format!("loss {l}"));
            }
            out.insert("compile".into(), Json::Object(compiled));
            lines.push(format!("compiled: {}", parts.join(", ")));
        }
        let text = lines.iter().map(|l| format!("{}\n", l.trim_end())).collect();
        (Json::Object(out), text)
    }
}
