//! The report of a comparison: JSON and one-line text for each change.

use std::fmt;

use serde_json::{Value as Json, json};

use super::metrics::number;
use super::{Change, Diff, Metrics, ValueDiff};

impl Diff {
    /// The comparison as JSON (`diff --json`, Python): `same`, the names only in either file,
    /// the tolerance and whether every change is `close` under it ([`Diff::is_close`]), each
    /// changed tensor with its changes and `metrics` (`null` when its values are not compared),
    /// and the entries that could not be compared.
    pub fn to_json(&self) -> Json {
        json!({
            "same": self.is_same(),
            "identical": self.identical,
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "tolerance": self.tolerance.to_json(),
            "close": self.is_close(),
            "changed": self.changed.iter().map(|t| json!({
                "name": t.name,
                "changes": t.changes.iter().map(Change::to_json).collect::<Vec<_>>(),
                "metrics": t.metrics.as_ref().map(Metrics::to_json),
            })).collect::<Vec<_>>(),
            "unreadable": self.unreadable.iter().map(|u| json!({
                "file": u.side.name(),
                "name": u.name,
                "error": u.message,
                "rule": u.rule,
            })).collect::<Vec<_>>(),
        })
    }
}

impl Change {
    /// The change as a JSON object whose `what` names it (`kind`, `dtype`, `shape`, `layout`,
    /// `values`, `sparse`), with the two sides or the counts.
    pub fn to_json(&self) -> Json {
        match self {
            Change::Kind { a, b } => json!({ "what": "kind", "a": a.name(), "b": b.name() }),
            Change::DType { a, b } => json!({ "what": "dtype", "a": a.name(), "b": b.name() }),
            Change::Shape { a, b } => json!({ "what": "shape", "a": a, "b": b }),
            Change::Layout { a, b } => json!({ "what": "layout", "a": a, "b": b }),
            Change::Parts(parts) => json!({ "what": "parts", "parts": parts }),
            Change::Values(v) => {
                let mut j = json!({ "what": "values" });
                if let (Some(all), Json::Object(fields)) = (j.as_object_mut(), v.to_json()) {
                    all.extend(fields);
                }
                j
            }
            Change::Sparse(s) => json!({
                "what": "sparse",
                "nnz": s.nnz.map(|(a, b)| json!({ "a": a, "b": b })),
                "indptr_differ": s.indptr_differ,
                "indices_differ": s.indices_differ,
                "values": s.values.as_ref().map(ValueDiff::to_json),
            }),
        }
    }
}

impl ValueDiff {
    /// The counts as JSON; an infinite `max_abs_diff` is the string `"inf"`.
    pub fn to_json(&self) -> Json {
        json!({
            "unit": self.unit.name(),
            "compared": self.compared,
            "differing": self.differing,
            "first_index": self.first_index,
            // JSON has no infinity: an infinite difference is the string "inf".
            "max_abs_diff": self.max_abs_diff.map(number),
            "nan_mismatches": self.nan_mismatches,
        })
    }
}

impl fmt::Display for ValueDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = self.unit.name();
        write!(f, "{} of {} {unit}s differ (first at {unit} {})", self.differing, self.compared, self.first_index)?;
        if let Some(d) = self.max_abs_diff {
            write!(f, ", max abs difference {d}")?;
        }
        if self.nan_mismatches > 0 {
            write!(f, ", {} with NaN", self.nan_mismatches)?;
        }
        Ok(())
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Kind { a, b } => write!(f, "kind {} -> {}", a.name(), b.name()),
            Change::DType { a, b } => write!(f, "dtype {a} -> {b}"),
            Change::Shape { a, b } => write!(f, "shape {a:?} -> {b:?}"),
            Change::Layout { a, b } => write!(f, "layout {a} -> {b}"),
            Change::Parts(parts) => write!(f, "stored parts differ: {}", parts.join(", ")),
            Change::Values(v) => v.fmt(f),
            Change::Sparse(s) => {
                let mut parts = Vec::new();
                if let Some((a, b)) = s.nnz {
                    parts.push(format!("nnz {a} -> {b}"));
                }
                if s.indptr_differ {
                    parts.push("row pointers differ".into());
                }
                if s.indices_differ {
                    parts.push("indices differ".into());
                }
                if let Some(v) = &s.values {
                    parts.push(format!("values: {v}"));
                }
                write!(f, "sparse {}", parts.join(", "))
            }
        }
    }
}
