//! The report's document: every entry a row, statistics against numpy's records, where the
//! bytes go adding up to the file, a program's sections, a comparison against numpy's
//! metrics, and the page carrying the document unchanged.

use serde_json::Value as Json;
use tensorfile::TensorFile;
use tensorfile::report::{self, ReportOptions};

use crate::common;

fn gather(file: &TensorFile, options: &ReportOptions, other: Option<(&TensorFile, &str)>) -> Json {
    report::gather(file, "f", options, other, &|_| {}).unwrap()
}

fn open(rel: &str) -> TensorFile {
    TensorFile::open(common::fixtures_dir().join(rel)).unwrap()
}

fn column(doc: &Json, name: &str) -> usize {
    let columns = doc["tensors"]["columns"].as_array().unwrap();
    columns.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"))
}

fn section<'a>(doc: &'a Json, title: &str) -> &'a Json {
    let sections = doc["sections"].as_array().unwrap();
    sections.iter().find(|s| s["title"] == title).unwrap_or_else(|| panic!("no section {title:?}"))
}

fn bar_total(section: &Json) -> u64 {
    section["items"].as_array().unwrap().iter().map(|i| i["value"].as_u64().unwrap()).sum()
}

#[test]
fn statistics_of_every_row_match_numpy() {
    let text = std::fs::read(common::fixtures_dir().join("stats/records.json")).unwrap();
    let records: Json = serde_json::from_slice(&text).unwrap();
    let bins = records["hist_bins"].as_u64().unwrap() as usize;
    let mut checked = 0;
    for f in records["files"].as_array().unwrap() {
        let file = open(f["file"].as_str().unwrap());
        let doc = gather(&file, &ReportOptions { bins, ..ReportOptions::default() }, None);
        let rows = doc["tensors"]["rows"].as_array().unwrap();
        let stats = doc["tensors"]["stats"].as_array().unwrap();
        assert_eq!(rows.len(), file.entries().len());
        assert_eq!(stats.len(), rows.len());
        let name = column(&doc, "name");
        for want in f["tensors"].as_array().unwrap() {
            // Entries tensorfile does not hold (ONNX's padded sub-byte tensors) are no rows.
            if file.unreadable().iter().any(|u| want["name"] == u.name()) {
                continue;
            }
            // A .npy holds one unnamed array (its record names it "").
            let single = rows.len() == 1 && want["name"] == "";
            let i = rows
                .iter()
                .position(|r| single || r[name] == want["name"])
                .unwrap_or_else(|| panic!("no row {} in {}", want["name"], f["file"]));
            let got = &stats[i];
            if want["summarised"] == false {
                assert!(got["error"].is_string(), "{}: {got}", want["name"]);
                assert_eq!(got["numel"], want["numel"]);
                continue;
            }
            for k in ["numel", "zeros", "nan", "posinf", "neginf", "min", "max", "absmax", "hist"] {
                assert_eq!(got[k], want[k], "{} {k}", want["name"]);
            }
            for k in ["mean", "std"] {
                match (got[k].as_f64(), want[k].as_f64()) {
                    // Within 1e-9 relative, or float64 rounding of the values' magnitude (a mean
                    // near 0 of large values), as the stats tests allow.
                    (Some(g), Some(w)) => {
                        let scale = got["absmax"].as_f64().unwrap_or(0.0);
                        assert!((g - w).abs() <= 1e-9 * w.abs() + 1e-15 * scale, "{} {k}: {g} vs {w}", want["name"])
                    }
                    (g, w) => assert_eq!(g, w, "{} {k}", want["name"]),
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} tensors checked");
}

#[test]
fn rows_hold_the_listing_and_bytes_add_up() {
    let file = open("safetensors/dtypes.safetensors");
    let doc = gather(&file, &ReportOptions { stats: false, ..ReportOptions::default() }, None);
    assert!(doc["tensors"].get("stats").is_none(), "no statistics asked for");
    let rows = doc["tensors"]["rows"].as_array().unwrap();
    for (row, e) in rows.iter().zip(file.entries()) {
        assert_eq!(row[column(&doc, "name")], e.info().name());
        assert_eq!(row[column(&doc, "dtype")], e.info().dtype().name());
        assert_eq!(row[column(&doc, "bytes")], e.nbytes());
        assert_eq!(row[column(&doc, "offset")], e.storage().offset());
    }
    let stored: u64 = file.entries().iter().map(|e| e.storage().len()).sum();
    assert_eq!(bar_total(section(&doc, "Where the bytes go: by name")), stored);
    assert_eq!(bar_total(section(&doc, "Where the bytes go: by dtype")), stored);
    assert_eq!(doc["file"]["bytes"], file.size());
    assert_eq!(doc["report_version"], report::REPORT_VERSION);
}

#[test]
fn a_program_shows_its_bytes_methods_operators_and_delegates() {
    let file = open("executorch/mobilenet_v2_xnnpack.pte");
    let doc = gather(&file, &ReportOptions { stats: false, ..ReportOptions::default() }, None);
    // Program, segments and padding: the whole file.
    assert_eq!(bar_total(section(&doc, "Where the bytes go: program")), file.size());
    let delegates = section(&doc, "Delegates")["rows"].as_array().unwrap();
    assert_eq!(delegates.len(), 1);
    assert_eq!(delegates[0][2], "XnnpackBackend");
    let methods = section(&doc, "Methods")["rows"].as_array().unwrap();
    assert_eq!(methods[0][0], "forward");

    // Operators run in the delegates, as their decoded payloads say, and one fell back.
    let partial = open("executorch/xnnpack.pte");
    let doc = gather(&partial, &ReportOptions { stats: false, ..ReportOptions::default() }, None);
    let ops = section(&doc, "Operators")["rows"].as_array().unwrap();
    let row = |op: &str, place: &str| ops.iter().find(|r| r[1] == op && r[2] == place).map(|r| r[3].as_u64().unwrap());
    assert_eq!(row("aten::mean.out", "program kernels (not delegated)"), Some(1), "{ops:?}");
    assert_eq!(row("Conv2d", "XnnpackBackend #0"), Some(1), "{ops:?}");
    assert_eq!(row("FullyConnected", "XnnpackBackend #1"), Some(1), "{ops:?}");
    let delegates = section(&doc, "Delegates")["rows"].as_array().unwrap();
    for d in delegates {
        let place = format!("XnnpackBackend #{}", d[1]);
        let nodes: u64 = ops.iter().filter(|r| r[2] == place.as_str()).map(|r| r[3].as_u64().unwrap()).sum();
        assert_eq!(d[5], nodes, "{place}");
    }

    // A program without delegates: every operator runs in the program's kernels.
    let plain = open("executorch/mobilenet_v2.pte");
    let doc = gather(&plain, &ReportOptions { stats: false, ..ReportOptions::default() }, None);
    let ops = section(&doc, "Operators")["rows"].as_array().unwrap();
    assert!(!ops.is_empty());
    assert!(ops.iter().all(|r| r[2] == "program kernels (not delegated)"), "{ops:?}");
    let calls: u64 = ops.iter().map(|r| r[3].as_u64().unwrap()).sum();
    assert_eq!(Json::from(calls), section(&doc, "Methods")["rows"][0][4], "kernel calls add up");
    assert_eq!(bar_total(section(&doc, "Where the bytes go: program")), plain.size());
}

#[test]
fn comparison_rows_carry_numpys_metrics() {
    let text = std::fs::read(common::fixtures_dir().join("diff/records.json")).unwrap();
    let records: Json = serde_json::from_slice(&text).unwrap();
    let pair = &records["pairs"][0];
    let run = &pair["runs"][0];
    let a = open(&format!("diff/{}", pair["a"].as_str().unwrap()));
    let b = open(&format!("diff/{}", pair["b"].as_str().unwrap()));
    let tolerance =
        tensorfile::compare::Tolerance { atol: run["atol"].as_f64().unwrap(), rtol: run["rtol"].as_f64().unwrap() };
    let options = ReportOptions { stats: false, tolerance, ..ReportOptions::default() };
    let doc = gather(&a, &options, Some((&b, "b")));
    let compare = &doc["compare"];
    let columns: Vec<&str> = compare["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let at = |c: &str| columns.iter().position(|x| *x == c).unwrap();
    let rows = compare["rows"].as_array().unwrap();
    assert_eq!(rows.len(), a.entries().len());
    for (name, want) in run["tensors"].as_object().unwrap() {
        let row = rows.iter().find(|r| r[0] == name.as_str()).unwrap();
        assert_eq!(row[at("status")], "changed", "{name}");
        for (col, field) in
            [("max_abs", "max_abs_diff"), ("max_rel", "max_rel_diff"), ("cosine", "cosine"), ("nmse", "nmse")]
        {
            match (row[at(col)].as_f64(), want[field].as_f64()) {
                (Some(g), Some(w)) => assert!((g - w).abs() <= 1e-9 * w.abs().max(1e-12), "{name} {col}: {g} vs {w}"),
                (g, w) => assert_eq!(row[at(col)], want[field], "{name} {col} {g:?} {w:?}"),
            }
        }
        assert_eq!(row[at("over_tolerance")], want["over_tolerance"], "{name}");
    }
    for name in pair["identical"].as_array().unwrap() {
        let row = rows.iter().find(|r| &r[0] == name).unwrap();
        assert_eq!(row[at("status")], "identical");
    }
}

#[test]
fn the_page_carries_the_document_and_no_name_escapes_it() {
    let hostile = "</script><script>window.__pwned=1</script>";
    let bytes = common::write(
        tensorfile::Format::Safetensors,
        &[common::dense(tensorfile::TensorInfo::dense(hostile, tensorfile::DType::Float32, vec![2]), 1)],
        &tensorfile::WriteOptions::default(),
    );
    let file = common::open(bytes);
    let doc = gather(&file, &ReportOptions::default(), None);
    let page = report::page::render(&doc);
    assert_eq!(page.matches("</script>").count(), page.matches("<script").count(), "no script closed early");
    let start = page.find("id=\"report-data\">").unwrap() + "id=\"report-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    let embedded: Json = serde_json::from_str(&page[start..end]).unwrap();
    assert_eq!(embedded, doc);
    assert_eq!(embedded["tensors"]["rows"][0][0], hostile);
}

#[test]
fn the_page_grows_with_the_tensors_not_their_bytes() {
    let file_of = |elements: u64| {
        let tensors: Vec<_> = (0..50)
            .map(|i| {
                common::dense(
                    tensorfile::TensorInfo::dense(format!("layer.{i}.w"), tensorfile::DType::Float32, vec![elements]),
                    i,
                )
            })
            .collect();
        common::open(common::write(tensorfile::Format::Safetensors, &tensors, &tensorfile::WriteOptions::default()))
    };
    let (small, large) = (file_of(16), file_of(16 * 1024));
    let page = |f: &TensorFile| report::page::render(&gather(f, &ReportOptions::default(), None)).len();
    let (small_page, large_page) = (page(&small), page(&large));
    assert!(large.size() > 100 * small.size(), "the data is over 100x larger");
    // Only the numbers in the rows and statistics differ: a few digits per tensor.
    assert!(large_page < small_page + 50 * 200, "{small_page} vs {large_page} bytes");
}

#[test]
fn a_tensor_that_fails_to_read_has_its_error_and_the_others_their_statistics() {
    use tensorfile::model::{ByteOrder, ChecksumKind};
    let tensors: Vec<_> = ["bad", "good"]
        .iter()
        .enumerate()
        .map(|(i, n)| {
            common::dense(tensorfile::TensorInfo::dense(*n, tensorfile::DType::Float32, vec![4096]), i as u64)
        })
        .collect();
    let opts = common::options(tensorfile::Compression::Zstd(1), ChecksumKind::None, ByteOrder::Little);
    let mut bytes = common::write(tensorfile::Format::Zt, &tensors, &opts);
    let bad = common::open(bytes.clone());
    let storage = bad.entry("bad").unwrap().storage();
    // The zstd frame's body overwritten: the entry is listed, its data does not decode.
    let (start, len) = (storage.offset() as usize, storage.len() as usize);
    bytes[start + 8..start + len].fill(0xff);
    let file = common::open(bytes);
    let doc = gather(&file, &ReportOptions::default(), None);
    let stats = doc["tensors"]["stats"].as_array().unwrap();
    let names = doc["tensors"]["rows"].as_array().unwrap().iter().map(|r| r[0].clone()).collect::<Vec<_>>();
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(stats[at("bad")]["error"].is_string(), "{}", stats[at("bad")]);
    assert_eq!(stats[at("good")]["numel"], 4096, "{}", stats[at("good")]);
    assert!(stats[at("good")]["hist"].is_object());
}
