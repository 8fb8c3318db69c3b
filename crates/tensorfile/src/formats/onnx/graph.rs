//! Walking a model's graphs: the tensors they hold (initializers, sparse initializers,
//! `Constant` values, in every subgraph), named as the module doc says, and what `info` counts
//! (operators by type, across subgraphs).

use std::collections::{BTreeMap, HashSet};

use super::proto::{AttributeProto, GraphProto, NodeProto, SparseTensorProto, TensorProto};
use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_ENTRIES, MAX_NESTING};

/// A tensor found in a graph, taken out of the decoded model.
pub enum Held {
    /// A dense tensor (an initializer or a `Constant`'s value).
    Dense(TensorProto),
    /// A sparse initializer or `Constant` value.
    Sparse(Box<SparseTensorProto>),
    /// A `Constant` this library cannot list as a tensor (a string value), with why.
    Unsupported { dtype: String, error: Error },
}

/// A tensor found, under its entry name.
pub struct Found {
    pub name: String,
    pub held: Held,
}

/// Everything found in a model's graphs.
#[derive(Default)]
pub struct Walk {
    pub found: Vec<Found>,
    /// Operators by `domain::op_type` (the default domain unnamed), across every graph.
    pub ops: BTreeMap<String, u64>,
    /// Graphs walked, the main one included.
    pub graphs: u64,
    taken: HashSet<String>,
}

/// Take every tensor out of `graph` (the model's main graph) and its subgraphs.
pub fn walk(graph: &mut GraphProto) -> Result<Walk> {
    let mut w = Walk::default();
    w.graph(graph, "", 0)?;
    Ok(w)
}

impl Walk {
    fn graph(&mut self, g: &mut GraphProto, scope: &str, depth: usize) -> Result<()> {
        if depth > MAX_NESTING {
            return Err(Error::invalid(Rule::TooDeep, format!("subgraphs nested more than {MAX_NESTING} deep")));
        }
        self.graphs += 1;
        for t in std::mem::take(&mut g.initializer) {
            let name = t.name.clone();
            self.add(name, scope, Held::Dense(t))?;
        }
        for s in std::mem::take(&mut g.sparse_initializer) {
            let name = s.values.as_ref().map(|v| v.name.clone()).unwrap_or_default();
            self.add(name, scope, Held::Sparse(Box::new(s)))?;
        }
        for (i, node) in g.node.iter_mut().enumerate() {
            let op = if node.domain.is_empty() || node.domain == "ai.onnx" {
                node.op_type.clone()
            } else {
                format!("{}::{}", node.domain, node.op_type)
            };
            *self.ops.entry(op).or_default() += 1;
            let node_scope = match (&node.name, scope) {
                (n, "") if !n.is_empty() => n.clone(),
                (n, s) if !n.is_empty() => format!("{s}/{n}"),
                (_, "") => format!("node{i}"),
                (_, s) => format!("{s}/node{i}"),
            };
            if node.op_type == "Constant" && (node.domain.is_empty() || node.domain == "ai.onnx") {
                self.constant(node, scope)?;
            }
            for a in &mut node.attribute {
                let attr_scope = format!("{node_scope}/{}", a.name);
                if let Some(sub) = a.g.as_mut() {
                    self.graph(sub, &attr_scope, depth + 1)?;
                }
                for (k, sub) in a.graphs.iter_mut().enumerate() {
                    self.graph(sub, &format!("{attr_scope}.{k}"), depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// The value of a `Constant` node, named by its output.
    fn constant(&mut self, node: &mut NodeProto, scope: &str) -> Result<()> {
        let Some(output) = node.output.first().cloned() else { return Ok(()) };
        let Some(a) = node.attribute.first_mut() else { return Ok(()) };
        let held = match a.name.as_str() {
            "value" => match a.t.take() {
                Some(mut t) => {
                    t.name.clone_from(&output);
                    Held::Dense(t)
                }
                None => return Ok(()),
            },
            "sparse_value" => match a.sparse_tensor.take() {
                Some(s) => Held::Sparse(Box::new(s)),
                None => return Ok(()),
            },
            "value_float" | "value_floats" | "value_int" | "value_ints" => Held::Dense(numbers(a)),
            other => Held::Unsupported {
                dtype: "string".into(),
                error: Error::unsupported(format!("a Constant's {other}: strings are not tensors tensorfile holds")),
            },
        };
        self.add(output, scope, held)
    }

    /// Record `held` under `name`, or a scoped name when `name` is taken (see the module doc);
    /// two initializers of the main graph with one name refuse the model.
    fn add(&mut self, name: String, scope: &str, held: Held) -> Result<()> {
        if self.found.len() >= MAX_ENTRIES {
            return Err(Error::invalid(Rule::TooManyEntries, format!("more than {MAX_ENTRIES} tensors")));
        }
        let mut chosen = name.clone();
        if self.taken.contains(&chosen) {
            if scope.is_empty() {
                return Err(Error::invalid(Rule::DuplicateName, "two tensors of the main graph share this name")
                    .for_tensor(&name));
            }
            chosen = format!("{scope}/{name}");
            let mut k = 2u64;
            while self.taken.contains(&chosen) {
                chosen = format!("{scope}/{name}~{k}");
                k += 1;
            }
        }
        self.taken.insert(chosen.clone());
        self.found.push(Found { name: chosen, held });
        Ok(())
    }
}

/// The tensor of a `Constant` given as numbers: `value_float` (a float32 scalar),
/// `value_floats` (a vector), `value_int` (an int64 scalar), `value_ints` (a vector).
fn numbers(a: &mut AttributeProto) -> TensorProto {
    match a.name.as_str() {
        "value_float" => TensorProto { data_type: 1, float_data: vec![a.f], ..Default::default() },
        "value_floats" => {
            let v = std::mem::take(&mut a.floats);
            TensorProto { data_type: 1, dims: vec![v.len() as i64], float_data: v, ..Default::default() }
        }
        "value_int" => TensorProto { data_type: 7, int64_data: vec![a.i], ..Default::default() },
        _ => {
            let v = std::mem::take(&mut a.ints);
            TensorProto { data_type: 7, dims: vec![v.len() as i64], int64_data: v, ..Default::default() }
        }
    }
}
