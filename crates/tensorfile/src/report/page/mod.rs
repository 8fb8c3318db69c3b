//! The report's page: [`render`] fills the template (`report.html`) with its style
//! (`report.css`), its script (`base.js`, `table.js`, `charts.js`, `sections.js` and
//! `report.js`, in that order, as one function) and the report's data, as one self-contained
//! HTML file that opens from disk, fetches nothing and draws everything in the browser.
//!
//! The data comes from hostile files: it is embedded as JSON in a
//! `<script type="application/json">` block with `<`, `>`, `&`, U+2028 and U+2029 escaped, so no
//! string can close the block, and the page's script sets every text with `textContent`. The
//! page's Content-Security-Policy runs only the page's own script (by its SHA-256) and lets
//! nothing be loaded.

use sha2::{Digest, Sha256};

const TEMPLATE: &str = include_str!("report.html");
const CSS: &str = include_str!("report.css");
/// The page's script: its parts in one function, so that nothing but the test hook
/// (`window.tensorfileReport`) is global.
const SCRIPT: &str = concat!(
    "// The tensorfile report page: draws the report data (the JSON in #report-data) with the DOM\n",
    "// and SVG. Every text from the data is set with textContent, createTextNode or setAttribute:\n",
    "// names come from hostile files. No network, no third-party code.\n",
    "\"use strict\";\n(function () {\n",
    include_str!("base.js"),
    include_str!("table.js"),
    include_str!("charts.js"),
    include_str!("sections.js"),
    include_str!("report.js"),
    "})();\n",
);

const CSS_SLOT: &str = "/*TENSORFILE_CSS*/";
const SCRIPT_SLOT: &str = "/*TENSORFILE_JS*/";
const DATA_SLOT: &str = "/*TENSORFILE_DATA*/";
const HASH_SLOT: &str = "/*TENSORFILE_SCRIPT_HASH*/";

/// The page for the report data `data` (the JSON of `tensorfile::report`, report_version 1):
/// a complete HTML document.
pub fn render(data: &serde_json::Value) -> String {
    let json = embeddable_json(data);
    let hash = format!("sha256-{}", base64(&Sha256::digest(SCRIPT.as_bytes())));
    fill(TEMPLATE, &[(CSS_SLOT, CSS), (SCRIPT_SLOT, SCRIPT), (DATA_SLOT, &json), (HASH_SLOT, &hash)])
}

/// `data` as JSON that can stand inside a `<script>` element (and in the HTML parser's every
/// state there): the characters that could end it or start markup, and the line separators
/// old JavaScript parsers refuse, written as `\uXXXX` escapes. They occur only inside JSON
/// strings, where the escape means the same character.
fn embeddable_json(data: &serde_json::Value) -> String {
    let text = data.to_string();
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `template` with each slot replaced by its text, in one pass over the template (text put in
/// is never searched for slots again).
fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let extra: usize = slots.iter().map(|(_, text)| text.len()).sum();
    let mut out = String::with_capacity(template.len() + extra);
    let mut rest = template;
    while let Some((at, slot, text)) =
        slots.iter().filter_map(|(slot, text)| rest.find(slot).map(|at| (at, *slot, *text))).min_by_key(|(at, ..)| *at)
    {
        out.push_str(&rest[..at]);
        out.push_str(text);
        rest = &rest[at + slot.len()..];
    }
    out.push_str(rest);
    out
}

/// Standard base64 with padding (RFC 4648), for the script's hash in the policy.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
