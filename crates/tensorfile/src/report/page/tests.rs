use serde_json::json;

use super::*;

fn data_with_name(name: &str) -> serde_json::Value {
    json!({
        "report_version": 1,
        "generator": "tensorfile test",
        "title": name,
        "file": {"name": name, "format": "safetensors", "format_title": "safetensors", "bytes": 8},
        "summary": [["format", "safetensors"]],
        "sections": [{"kind": "pairs", "title": name, "rows": [[name, name]]}],
        "tensors": {"columns": ["name", "dtype", "shape", "bytes"], "rows": [[name, "float32", [2], 8]]},
        "unreadable": [],
        "compare": null
    })
}

/// The text of the element `<script type="application/json" id="report-data">` as the HTML
/// parser sees it: up to the first `</script` (in any case).
fn embedded_data(page: &str) -> &str {
    let open = r#"<script type="application/json" id="report-data">"#;
    let start = page.find(open).expect("the data block") + open.len();
    let end = page[start..].to_ascii_lowercase().find("</script").expect("the data block's end");
    &page[start..start + end]
}

#[test]
fn a_hostile_name_cannot_leave_the_data_block() {
    let name = "</script><script>window.__pwned=1</script><!-- <script> & \u{2028}\u{2029} </SCRIPT >";
    let page = render(&data_with_name(name));
    let data = embedded_data(&page);
    // The block holds the whole JSON, with none of the characters that could end it.
    for c in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
        assert!(!data.contains(c), "{c:?} in the embedded data");
    }
    let parsed: serde_json::Value = serde_json::from_str(data).expect("the block is the JSON");
    assert_eq!(parsed, data_with_name(name));
    assert_eq!(parsed["tensors"]["rows"][0][0], name);
    // The only scripts are the data block and the page's own.
    assert_eq!(page.to_ascii_lowercase().matches("<script").count(), 2);
}

#[test]
fn every_slot_is_filled_once() {
    let page = render(&data_with_name("w"));
    for slot in [CSS_SLOT, SCRIPT_SLOT, DATA_SLOT, HASH_SLOT] {
        assert_eq!(TEMPLATE.matches(slot).count(), 1, "{slot} in the template");
        assert!(!page.contains(slot), "{slot} left in the page");
    }
    assert!(page.contains(CSS) && page.contains(SCRIPT));
    assert!(page.starts_with("<!DOCTYPE html>"));
}

#[test]
fn text_that_looks_like_a_slot_is_data() {
    // A name holding a slot is written as it is, not replaced by the script.
    let page = render(&data_with_name("/*TENSORFILE_JS*/ /*TENSORFILE_CSS*/"));
    assert_eq!(page.matches(SCRIPT).count(), 1);
    assert!(embedded_data(&page).contains("/*TENSORFILE_JS*/ /*TENSORFILE_CSS*/"));
}

#[test]
fn the_style_and_script_cannot_end_their_elements() {
    assert!(!CSS.to_ascii_lowercase().contains("</style"));
    assert!(!SCRIPT.to_ascii_lowercase().contains("</script"));
    assert!(!SCRIPT.contains("innerHTML") && !SCRIPT.contains("outerHTML") && !SCRIPT.contains("insertAdjacentHTML"));
    assert!(!SCRIPT.contains("eval(") && !SCRIPT.contains("new Function"));
}

#[test]
fn the_page_loads_nothing() {
    let page = render(&data_with_name("w"));
    assert!(!page.contains("https://"));
    // The one http:// is SVG's namespace name, which names no resource.
    let svg_namespace = "http://www.w3.org/2000/svg";
    assert_eq!(page.matches("http://").count(), page.matches(svg_namespace).count());
    for reference in ["src=", "href=\"http", "url(", "@import", "fetch(", "XMLHttpRequest", "WebSocket", "//cdn"] {
        assert!(!page.contains(reference), "{reference} in the page");
    }
    assert!(page.contains("default-src 'none'"));
}

#[test]
fn the_policy_names_the_scripts_hash() {
    let page = render(&data_with_name("w"));
    let hash = format!("'sha256-{}'", base64(&Sha256::digest(SCRIPT.as_bytes())));
    assert!(page.contains(&format!("script-src {hash}")), "{hash}");
    // And the script between the tags is exactly the text hashed.
    assert!(page.contains(&format!("<script>{SCRIPT}</script>")));
}

#[test]
fn base64_matches_rfc_4648() {
    // The test vectors of RFC 4648, section 10.
    for (plain, coded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(plain.as_bytes()), coded);
    }
}

#[test]
fn the_fixture_pages_carry_their_data_unchanged() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/report");
    let mut seen = 0;
    for entry in std::fs::read_dir(folder).expect("tests/fixtures/report") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let data: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).expect("the data")).expect("JSON");
        let page = render(&data);
        let back: serde_json::Value = serde_json::from_str(embedded_data(&page)).expect("the embedded JSON");
        assert_eq!(back, data, "{}", path.display());
        seen += 1;
    }
    assert!(seen > 0);
}
