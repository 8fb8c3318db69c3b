//! Turning an unpickled object into named tensors: nested dicts and lists flatten to dotted
//! names (`model.layers.0.weight`, `optim.state.0.exp_avg`); other leaves become metadata.

use std::collections::HashSet;

use crate::error::{Error, Result, Rule};
use crate::limits::MAX_NESTING;
use crate::model::MetaValue;
use crate::pickle::{Container, Pickled, TensorRef, Value};

use crate::limits::MAX_PICKLE_METADATA as MAX_METADATA;

/// What an unpickled object holds.
#[derive(Debug, Default)]
pub struct Flattened {
    pub tensors: Vec<(String, TensorRef)>,
    /// Names that appear twice (`{"a.b": t, "a": {"b": u}}`): the later tensor, unreadable.
    pub duplicates: Vec<String>,
    /// Non-tensor leaves (`step: 3`...), by name.
    pub metadata: Vec<(String, MetaValue)>,
}

/// Flatten the pickled object, doing at most `budget` steps (bounded by the pickle's size,
/// so shared or self-containing containers cannot make a small file expand without end).
pub fn flatten(p: &Pickled, budget: usize) -> Result<Flattened> {
    let mut f = Flattener { arena: &p.arena, out: Flattened::default(), names: HashSet::new(), budget };
    f.walk(&p.root, String::new(), 0)?;
    Ok(f.out)
}

struct Flattener<'a> {
    arena: &'a [Container],
    out: Flattened,
    names: HashSet<String>,
    budget: usize,
}

fn key_text(arena: &[Container], k: &Value) -> String {
    match k {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Value::None => "None".to_string(),
        Value::Float(f) => f.to_string(),
        Value::Container(id) => match arena.get(*id) {
            Some(Container::Tuple(items)) => items.iter().map(|i| key_text(arena, i)).collect::<Vec<_>>().join(","),
            _ => format!("<{}>", k.kind(arena)),
        },
        other => format!("<{}>", other.kind(arena)),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

impl Flattener<'_> {
    fn walk(&mut self, v: &Value, path: String, depth: usize) -> Result<()> {
        self.budget = self.budget.checked_sub(1).ok_or_else(|| {
            Error::invalid(Rule::TooManyEntries, "the pickle's containers repeat far more than its size allows")
        })?;
        if depth > MAX_NESTING {
            return Err(Error::invalid(Rule::TooDeep, format!("containers nested deeper than {MAX_NESTING}")));
        }
        match v {
            Value::Container(id) => match self.arena.get(*id) {
                Some(Container::Dict(pairs)) => {
                    for (k, v) in pairs {
                        self.walk(v, join(&path, &key_text(self.arena, k)), depth + 1)?;
                    }
                }
                Some(Container::List(items) | Container::Tuple(items) | Container::Set(items)) => {
                    for (i, v) in items.iter().enumerate() {
                        self.walk(v, join(&path, &i.to_string()), depth + 1)?;
                    }
                }
                // Only TorchScript archives hold objects (read by `script.rs`): their state,
                // under the object's name.
                Some(Container::Instance { state: Some(state), .. }) => self.walk(state, path, depth + 1)?,
                Some(Container::Instance { state: None, .. }) | None => {}
            },
            Value::Tensor(t) => {
                let name = if path.is_empty() { "tensor".to_string() } else { path };
                if self.names.insert(name.clone()) {
                    self.out.tensors.push((name, (**t).clone()));
                } else {
                    self.out.duplicates.push(name);
                }
            }
            leaf => {
                if self.out.metadata.len() < MAX_METADATA {
                    if let Some(m) = meta(leaf) {
                        self.out.metadata.push((path, m));
                    }
                }
            }
        }
        Ok(())
    }
}

fn meta(v: &Value) -> Option<MetaValue> {
    Some(match v {
        Value::None => MetaValue::Null,
        Value::Bool(b) => MetaValue::Bool(*b),
        Value::Int(i) => MetaValue::Int(i128::from(*i)),
        Value::Float(f) => MetaValue::Float(*f),
        Value::Str(s) => MetaValue::Text(s.to_string()),
        Value::Bytes(b) if b.len() <= 256 => MetaValue::Bytes(b.to_vec()),
        Value::Dtype(d) => MetaValue::Text(d.name().to_string()),
        Value::Object(o) => MetaValue::Text(o.to_string()),
        _ => return None,
    })
}
