//! The parts of a report a page draws without knowing the format they come from: pairs of
//! facts, tables and bar charts (see `report/page/` for how each is drawn).

use serde_json::{Value as Json, json};

/// One part of a report.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// Facts as `(key, value)` lines.
    Pairs {
        /// The heading.
        title: String,
        /// The facts, in order.
        rows: Vec<(String, String)>,
    },
    /// A table of cells (strings or numbers; a column named `bytes` holds byte counts).
    Table {
        /// The heading.
        title: String,
        /// A sentence under the heading, when there is one.
        note: Option<String>,
        /// Column names.
        columns: Vec<String>,
        /// Rows of one cell per column.
        rows: Vec<Vec<Json>>,
    },
    /// A bar chart, largest bar first as given.
    Bars {
        /// The heading.
        title: String,
        /// What the values count: `bytes` or `count`.
        unit: &'static str,
        /// The bars.
        items: Vec<Bar>,
    },
}

/// One bar of a [`Section::Bars`] chart, with the bars it splits into (drawn when clicked).
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// What the bar stands for.
    pub label: String,
    /// Its length.
    pub value: u64,
    /// What it is made of (empty when not split).
    pub children: Vec<Bar>,
}

/// The most bars [`Bar::largest`] keeps; the rest are summed into one.
pub const MAX_BARS: usize = 30;

impl Bar {
    /// A bar that does not split.
    pub fn new(label: impl Into<String>, value: u64) -> Bar {
        Bar { label: label.into(), value, children: Vec::new() }
    }

    /// Put `bars` largest first (ties by label).
    pub fn sort(bars: &mut [Bar]) {
        bars.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.label.cmp(&b.label)));
    }

    /// `bars` largest first, at most [`MAX_BARS`]: the smallest beyond them summed into one
    /// bar (`12 others`).
    pub fn largest(mut bars: Vec<Bar>) -> Vec<Bar> {
        Bar::sort(&mut bars);
        if bars.len() > MAX_BARS {
            let rest = bars.split_off(MAX_BARS - 1);
            bars.push(Bar::new(format!("{} others", rest.len()), Bar::total(&rest)));
        }
        bars
    }

    /// The values of `bars` added up (saturating).
    pub fn total(bars: &[Bar]) -> u64 {
        bars.iter().fold(0u64, |t, b| t.saturating_add(b.value))
    }

    fn to_json(&self) -> Json {
        let mut bar = json!({ "label": self.label, "value": self.value });
        if !self.children.is_empty() {
            bar["children"] = self.children.iter().map(Bar::to_json).collect();
        }
        bar
    }
}

impl Section {
    /// A table without a note.
    pub fn table(title: impl Into<String>, columns: &[&str], rows: Vec<Vec<Json>>) -> Section {
        Section::Table {
            title: title.into(),
            note: None,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows,
        }
    }

    /// The heading.
    pub fn title(&self) -> &str {
        match self {
            Section::Pairs { title, .. } | Section::Table { title, .. } | Section::Bars { title, .. } => title,
        }
    }

    /// The section as the page reads it (`kind` `pairs`, `table` or `bars`).
    pub fn to_json(&self) -> Json {
        match self {
            Section::Pairs { title, rows } => json!({ "kind": "pairs", "title": title, "rows": rows }),
            Section::Table { title, note, columns, rows } => {
                let mut t = json!({ "kind": "table", "title": title, "columns": columns, "rows": rows });
                if let Some(note) = note {
                    t["note"] = json!(note);
                }
                t
            }
            Section::Bars { title, unit, items } => json!({
                "kind": "bars",
                "title": title,
                "unit": unit,
                "items": items.iter().map(Bar::to_json).collect::<Vec<_>>(),
            }),
        }
    }
}
