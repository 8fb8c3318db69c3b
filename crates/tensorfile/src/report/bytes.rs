//! Where a file's bytes go, drawn as bars: by name prefix (a tree cut at the dots and
//! slashes of tensor names), by dtype, by shard.

use std::collections::BTreeMap;

use crate::TensorFile;
use crate::describe::{Bar, Section};

/// How many levels of the prefix tree are kept (deeper names end at their ancestor).
const MAX_DEPTH: usize = 4;

#[derive(Default)]
struct Node {
    bytes: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn insert(&mut self, parts: &[&str], bytes: u64) {
        self.bytes = self.bytes.saturating_add(bytes);
        if let Some((first, rest)) = parts.split_first() {
            self.children.entry((*first).to_string()).or_default().insert(rest, bytes);
        }
    }

    /// The children as bars labelled by their whole prefix, a chain of only children
    /// folded into one bar (`model` > `layers` shows as `model.layers`).
    fn bars(&self, prefix: &str, depth: usize) -> Vec<Bar> {
        let bars: Vec<Bar> = self
            .children
            .iter()
            .map(|(part, child)| {
                let mut label = join(prefix, part);
                let mut node = child;
                while node.children.len() == 1 {
                    let (p, only) = node.children.iter().next().expect("one child");
                    label = join(&label, p);
                    node = only;
                }
                let children = if depth + 1 < MAX_DEPTH { node.bars(&label, depth + 1) } else { Vec::new() };
                Bar { label, value: node.bytes, children }
            })
            .collect();
        Bar::largest(bars)
    }
}

fn join(prefix: &str, part: &str) -> String {
    if prefix.is_empty() { part.to_string() } else { format!("{prefix}.{part}") }
}

/// Stored bytes by name prefix, by dtype (or quantization) and, for a set of files, by
/// file.
pub fn sections(file: &TensorFile) -> Vec<Section> {
    let mut tree = Node::default();
    let mut by_dtype: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_shard: BTreeMap<String, u64> = BTreeMap::new();
    for (i, e) in file.entries().iter().enumerate() {
        let stored = e.storage().len();
        let name = e.info().name();
        let parts: Vec<&str> = name.split(['.', '/']).filter(|p| !p.is_empty()).collect();
        tree.insert(&parts, stored);
        let dtype = match e.info().layout().quant() {
            Some(_) => e.info().layout().describe(),
            None => e.info().dtype().name().to_string(),
        };
        add(&mut by_dtype, dtype, stored);
        if file.is_set() {
            let shard = file.shard_of(i).and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
            add(&mut by_shard, shard.unwrap_or_else(|| "(unknown)".into()), stored);
        }
    }
    let mut out = Vec::new();
    if !tree.children.is_empty() {
        out.push(Section::Bars { title: "Where the bytes go: by name".into(), unit: "bytes", items: tree.bars("", 0) });
    }
    if !by_dtype.is_empty() {
        out.push(Section::Bars {
            title: "Where the bytes go: by dtype".into(),
            unit: "bytes",
            items: sorted(by_dtype),
        });
    }
    if !by_shard.is_empty() {
        out.push(Section::Bars { title: "Where the bytes go: by file".into(), unit: "bytes", items: sorted(by_shard) });
    }
    out
}

fn add(map: &mut BTreeMap<String, u64>, key: String, bytes: u64) {
    let slot = map.entry(key).or_insert(0);
    *slot = slot.saturating_add(bytes);
}

/// Bars from a map, largest first (see [`Bar::largest`]).
pub(super) fn sorted(map: BTreeMap<String, u64>) -> Vec<Bar> {
    Bar::largest(map.into_iter().map(|(k, v)| Bar::new(k, v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::MAX_BARS;

    #[test]
    fn prefixes_fold_only_children_and_cap_the_bars() {
        let mut tree = Node::default();
        tree.insert(&["model", "layers", "0", "w"], 10);
        tree.insert(&["model", "layers", "1", "w"], 30);
        tree.insert(&["lm_head"], 5);
        let bars = tree.bars("", 0);
        assert_eq!(bars.len(), 2);
        assert_eq!((bars[0].label.as_str(), bars[0].value), ("model.layers", 40));
        let layers: Vec<(&str, u64)> = bars[0].children.iter().map(|b| (b.label.as_str(), b.value)).collect();
        assert_eq!(layers, [("model.layers.1.w", 30), ("model.layers.0.w", 10)]);
        assert_eq!((bars[1].label.as_str(), bars[1].value), ("lm_head", 5));

        let mut wide = Node::default();
        for i in 0..40u64 {
            wide.insert(&[&format!("t{i:02}")], i + 1);
        }
        let bars = wide.bars("", 0);
        assert_eq!(bars.len(), MAX_BARS);
        let last = bars.last().unwrap();
        assert_eq!(last.label, "11 others");
        assert_eq!(last.value, (1..=11).sum::<u64>());
        assert_eq!(bars.iter().map(|b| b.value).sum::<u64>(), (1..=40).sum::<u64>());
    }
}
