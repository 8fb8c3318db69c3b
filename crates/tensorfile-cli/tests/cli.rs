//! The `tensorfile` binary, run on small files made in a temporary folder.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value as Json;
use tensorfile::model::{ByteOrder, ChecksumKind, Kind, Layout, SparseData, SparseFormat};
use tensorfile::source::Bytes;
use tensorfile::{Compression, DType, Format, TensorData, TensorFile, TensorInfo, WriteOptions};

// --- helpers -------------------------------------------------------------------------------

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn dense(name: &str, dtype: DType, shape: &[u64], bytes: Vec<u8>) -> (TensorInfo, TensorData) {
    (TensorInfo::dense(name, dtype, shape.to_vec()), TensorData::Dense(Bytes::from_vec(bytes)))
}

fn write(path: &Path, tensors: &[(TensorInfo, TensorData)], options: &WriteOptions) {
    let format = Format::from_path(path).unwrap();
    std::fs::write(path, tensorfile::formats::write_to_vec(format, tensors, options).unwrap()).unwrap();
}

/// A safetensors file written by hand, so it can hold any header (unknown dtypes...).
fn raw_safetensors(path: &Path, header: &str, data: &[u8]) {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

/// bfloat16 bytes of `v` (truncated from float32).
fn bf16s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes()).collect()
}

/// A mix of dtypes and shapes, a scalar and an empty tensor among them.
fn sample_tensors() -> Vec<(TensorInfo, TensorData)> {
    vec![
        dense("layers.0/weight", DType::Float32, &[2, 3], f32s(&[1.0, -2.5, 3.25, f32::NAN, -0.0, 1e-30])),
        dense("norm", DType::BFloat16, &[3], bf16s(&[1.0, 0.5, -4.0])),
        dense("ids", DType::Int64, &[2], [7i64, -9].iter().flat_map(|v| v.to_le_bytes()).collect()),
        dense("mask", DType::Bool, &[4], vec![1, 0, 0, 1]),
        dense("half", DType::Float16, &[1], vec![0x00, 0x3c]),
        dense("scale", DType::Float64, &[], 0.125f64.to_le_bytes().to_vec()),
        dense("empty", DType::Int32, &[0, 3], vec![]),
    ]
}

/// Parse an `.npy` file: (header dict text, data bytes); checks magic and 64-byte alignment.
fn read_npy(path: &Path) -> (String, Vec<u8>) {
    let file = std::fs::read(path).unwrap();
    assert_eq!(&file[..8], b"\x93NUMPY\x01\x00", "{}", path.display());
    let len = u16::from_le_bytes([file[8], file[9]]) as usize;
    let start = 10 + len;
    assert_eq!(start % 64, 0, "data of {} is not 64-byte aligned", path.display());
    let header = std::str::from_utf8(&file[10..start]).unwrap();
    assert!(header.ends_with('\n'));
    (header.trim_end().to_string(), file[start..].to_vec())
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

// --- exit codes ----------------------------------------------------------------------------

#[test]
fn exit_codes_tell_success_failure_and_usage_apart() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.zt");
    write(&good, &sample_tensors(), &WriteOptions::default());
    let garbage = dir.path().join("garbage.zt");
    std::fs::write(&garbage, b"not a tensor file at all").unwrap();

    assert_eq!(code(&tensorfile(&[&"info", &good])), 0);

    let o = tensorfile(&[&"info", &garbage]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).starts_with("tensorfile: ") && stderr(&o).contains("garbage.zt"), "{}", stderr(&o));
    assert!(stderr(&o).contains("[unknown-format]"), "{}", stderr(&o));
    let o = tensorfile(&[&"ls", &dir.path().join("missing.zt")]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("missing.zt"), "{}", stderr(&o));

    assert_eq!(code(&tensorfile(&[&"no-such-command"])), 2);
    assert_eq!(code(&tensorfile(&[&"info"])), 2);
    assert_eq!(code(&tensorfile(&[&"extract", &good])), 2, "-o is required");

    let convert = |extra: &[&str], out: &str| {
        let out = dir.path().join(out);
        let mut args: Vec<Arg<'_>> = vec![&"convert", &good, &out];
        args.extend(extra.iter().map(|s| s as Arg<'_>));
        tensorfile(&args)
    };
    let o = convert(&[], "out.xyz");
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("out.xyz"), "{}", stderr(&o));
    assert_eq!(code(&convert(&["--compress", "lz4"], "out.zt")), 2);
    assert_eq!(code(&convert(&["--compress", "zstd:99"], "out.zt")), 2);
    assert_eq!(code(&convert(&["--checksum", "md5"], "out.zt")), 2);
    assert!(!dir.path().join("out.zt").exists());
}

// --- info and ls ---------------------------------------------------------------------------

#[test]
fn info_counts_dtypes_and_shows_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    let options = WriteOptions { metadata: vec![("format".into(), "pt".into())], ..WriteOptions::default() };
    write(&path, &sample_tensors(), &options);

    let j = json_of(&ok(&[&"info", &path, &"--json"]));
    assert_eq!(j["format"], "safetensors");
    assert_eq!(j["tensors"], 7);
    assert_eq!(j["blobs"], 0);
    assert_eq!(j["unreadable"], 0);
    assert_eq!(j["file_bytes"], std::fs::metadata(&path).unwrap().len());
    assert_eq!(j["data_bytes"], 24 + 6 + 16 + 4 + 2 + 8);
    assert_eq!(j["dtypes"]["float32"], 1);
    assert_eq!(j["dtypes"]["bfloat16"], 1);
    assert_eq!(j["metadata"]["format"], "pt");
    assert!(j["details"]["header_bytes"].is_u64());

    let text = ok(&[&"info", &path]);
    assert!(text.lines().any(|l| l.starts_with("format") && l.ends_with("safetensors")), "{text}");
    assert!(text.contains("metadata:") && text.contains("  format  pt"), "{text}");
}

#[test]
fn ls_json_has_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.zt");
    let tensors = sample_tensors();
    write(&path, &tensors, &WriteOptions::default());

    let rows = json_of(&ok(&[&"ls", &path, &"--json"]));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), tensors.len());
    let w = &rows[0];
    assert_eq!(w["name"], "layers.0/weight");
    assert_eq!(w["dtype"], "float32");
    assert_eq!(w["shape"], serde_json::json!([2, 3]));
    assert_eq!(w["nbytes"], 24);
    assert_eq!(w["kind"], "tensor");
    assert_eq!(w["layout"], "dense");
    assert_eq!(w["encoding"], "raw");
    assert_eq!(w["offset"], 64);
    assert_eq!(w["stored_bytes"], 24);
    assert_eq!(w["byte_order"], "little");
    assert!(w["checksum"].as_str().unwrap().starts_with("crc32c:0x"), "{w}");
    assert!(w["extra"].is_object());
    assert_eq!(rows[5]["shape"], serde_json::json!([]));

    let compressed = dir.path().join("z.zt");
    let options =
        WriteOptions { compression: Compression::Zstd(3), checksum: ChecksumKind::None, ..Default::default() };
    write(&compressed, &sample_tensors(), &options);
    let rows = json_of(&ok(&[&"ls", &compressed, &"--json"]));
    assert_eq!(rows[0]["encoding"], "zstd");
    assert_eq!(rows[0]["checksum"], Json::Null);
}

#[test]
fn ls_lists_unreadable_entries_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.safetensors");
    let header = r#"{"odd":{"dtype":"Q9","shape":[2],"data_offsets":[0,2]},"w":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#;
    raw_safetensors(&path, header, &[1, 2, 3, 4]);

    let rows = json_of(&ok(&[&"ls", &path, &"--json"]));
    let odd = rows.as_array().unwrap().iter().find(|r| r["name"] == "odd").unwrap();
    assert_eq!(odd["kind"], "unreadable");
    assert_eq!(odd["rule"], "unknown-dtype");
    assert_eq!(odd["dtype"], "Q9");
    assert!(odd["error"].as_str().unwrap().contains("Q9"), "{odd}");

    let table = ok(&[&"ls", &path]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("CHECKSUM"), "{table}");
    assert!(lines.iter().any(|l| l.starts_with("odd") && l.contains("unreadable:")), "{table}");

    let o = tensorfile(&[&"verify", &path]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("\"odd\"") && stdout(&o).contains("unknown-dtype"), "{}", stdout(&o));
}

#[test]
fn ls_of_many_entries_reads_only_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.safetensors");
    // 50,000 entries of 64 bytes each: 3.2 MB of data, far more than a speculative read.
    let tensors: Vec<_> =
        (0..50_000).map(|i| dense(&format!("t.{i}"), DType::UInt8, &[64], vec![i as u8; 64])).collect();
    write(&path, &tensors, &WriteOptions::default());
    let table = ok(&[&"ls", &path]);
    assert_eq!(table.lines().count(), 50_001);

    // The work `ls` does is opening the file and listing its entries: counted on the bytes,
    // every range asked for counted (nothing kept), it reads the header once and no data.
    use tensorfile::formats::FormatReader as _;
    use tensorfile::source::{SPECULATIVE_READ, Source};
    let bytes = std::fs::read(&path).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let src = Source::counted_exact(Bytes::from_vec(bytes));
    let reader = Format::Safetensors.open(src.clone()).unwrap();
    let opened = src.bytes_fetched();
    assert!(opened <= 8 + header + SPECULATIVE_READ, "open fetched {opened} bytes, header {header}");
    assert_eq!(reader.entries().len(), 50_000);
    let _ = reader.summary();
    assert_eq!(src.bytes_fetched(), opened, "listing the entries read more");
}

// --- convert and diff ----------------------------------------------------------------------

#[test]
fn convert_round_trips_between_formats() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.zt");
    write(&src, &sample_tensors(), &WriteOptions::default());
    let st = dir.path().join("mid.safetensors");
    let back = dir.path().join("back.zt");
    let big = dir.path().join("big.zt");

    let summary = ok(&[&"convert", &src, &st]);
    assert!(summary.contains("7 tensors"), "{summary}");
    ok(&[&"convert", &st, &back, &"--compress", &"zstd:5", &"--checksum", &"sha256"]);
    ok(&[&"convert", &back, &big, &"--big-endian"]);

    for path in [&st, &back, &big] {
        assert!(ok(&[&"verify", &path]).starts_with("OK "));
        let same = ok(&[&"diff", &src, &path]);
        assert!(same.contains("same: 7 tensors identical"), "{same}");
    }
    let rows = json_of(&ok(&[&"ls", &big, &"--json"]));
    assert_eq!(rows[0]["byte_order"], "big");
    let rows = json_of(&ok(&[&"ls", &back, &"--json"]));
    assert!(rows[0]["checksum"].as_str().unwrap().starts_with("sha256:"));

    let report = json_of(&ok(&[&"convert", &src, &st, &"--json"]));
    assert_eq!((report["format"].as_str(), report["tensors"].as_u64()), (Some("safetensors"), Some(7)));
    assert_eq!(report["skipped"], serde_json::json!([]));
}

#[test]
fn unsupported_dtypes_name_the_tensor_unless_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("c.safetensors");
    let c64 = dense("rotary", DType::Complex64, &[1], f32s(&[1.0, 2.0]));
    write(&src, &[c64, dense("w", DType::Float32, &[1], f32s(&[3.0]))], &WriteOptions::default());
    let out = dir.path().join("out.zt");

    let o = tensorfile(&[&"convert", &src, &out]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert!(err.contains("\"rotary\"") && err.contains("complex64") && err.contains("c.safetensors"), "{err}");
    assert!(!out.exists());

    let o = tensorfile(&[&"convert", &src, &out, &"--skip-unsupported"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("warning: skipped \"rotary\""), "{}", stderr(&o));
    let rows = json_of(&ok(&[&"ls", &out, &"--json"]));
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["name"], "w");
}

#[test]
fn diff_reports_changed_values_with_the_largest_difference() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.zt"), dir.path().join("b.safetensors"));
    let keep = dense("keep", DType::Int32, &[1], vec![1, 0, 0, 0]);
    write(
        &a,
        &[
            dense("w", DType::Float32, &[4], f32s(&[1.0, 2.0, 3.0, 4.0])),
            keep.clone(),
            dense("old", DType::UInt8, &[1], vec![0]),
        ],
        &WriteOptions::default(),
    );
    write(
        &b,
        &[
            dense("w", DType::Float32, &[4], f32s(&[1.0, 2.25, 3.0, 3.5])),
            keep,
            dense("new", DType::UInt8, &[1], vec![0]),
        ],
        &WriteOptions::default(),
    );

    let o = tensorfile(&[&"diff", &a, &b]);
    assert_eq!(code(&o), 1);
    let text = stdout(&o);
    assert!(text.contains("w: 2 of 4 elements differ (first at element 1), max abs difference 0.5"), "{text}");
    assert!(text.contains("only in") && text.contains(": old") && text.contains(": new"), "{text}");

    let j = json_of(&stdout(&tensorfile(&[&"diff", &a, &b, &"--json"])));
    assert_eq!(j["same"], false);
    assert_eq!(j["identical"], 1);
    assert_eq!(j["only_in_a"], serde_json::json!(["old"]));
    assert_eq!(j["only_in_b"], serde_json::json!(["new"]));
    let change = &j["changed"][0]["changes"][0];
    assert_eq!((change["what"].as_str(), change["differing"].as_u64()), (Some("values"), Some(2)));
    assert_eq!(change["max_abs_diff"], 0.5);
}

// --- verify --------------------------------------------------------------------------------

#[test]
fn verify_detects_a_flipped_byte_under_a_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crc.zt");
    let options = WriteOptions { checksum: ChecksumKind::Crc32c, ..WriteOptions::default() };
    write(&path, &sample_tensors(), &options);
    assert!(ok(&[&"verify", &path]).contains("7 checksums verified"));

    let file = TensorFile::open(&path).unwrap();
    let offset = file.entry("norm").unwrap().storage.offset as usize;
    drop(file);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offset] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();

    let o = tensorfile(&[&"verify", &path]);
    assert_eq!(code(&o), 1);
    let text = stdout(&o);
    assert!(
        text.contains("tensor \"norm\"") && text.contains("[checksum-mismatch]") && text.contains("crc.zt"),
        "{text}"
    );
    let j = json_of(&stdout(&tensorfile(&[&"verify", &path, &"--json"])));
    assert_eq!(j["ok"], false);
    assert_eq!(j["problems"][0]["tensor"], "norm");
    assert_eq!(j["problems"][0]["rule"], "checksum-mismatch");
}

#[test]
fn verify_deep_decodes_what_checksums_cannot_vouch_for() {
    let dir = tempfile::tempdir().unwrap();
    // A zstd tensor whose checksum is right but whose frame decodes to fewer bytes than
    // its shape needs: only decoding finds it.
    let path = dir.path().join("short.zt");
    let options = WriteOptions { compression: Compression::Zstd(3), ..WriteOptions::default() };
    let values: Vec<f32> = (0..64).map(|i| (i * i) as f32 * 0.37).collect();
    write(&path, &[dense("w", DType::Float32, &[64], f32s(&values))], &options);
    let file = TensorFile::open(&path).unwrap();
    let (offset, len) = (file.entries()[0].storage.offset as usize, file.entries()[0].storage.len as usize);
    drop(file);
    let mut bytes = std::fs::read(&path).unwrap();
    let short = zstd_frame(&f32s(&[0.0; 63]));
    assert!(short.len() <= len, "the replacement fits in place");
    // Same length: pad the frame with a zero-length skippable frame.
    let mut blob = short.clone();
    blob.extend_from_slice(&skippable(len - short.len()));
    bytes[offset..offset + len].copy_from_slice(&blob);
    std::fs::write(&path, &bytes).unwrap();
    // Rewrite the checksum over the new stored bytes: index it again through the library.
    let crc = format!("crc32c:0x{:08X}", crc32c(&blob));
    let old = TensorFile::open(&path).unwrap().entries()[0].storage.checksum.unwrap().to_string();
    let patched = replace_text(&bytes, &old, &crc);
    std::fs::write(&path, patched).unwrap();

    let shallow = json_of(&stdout(&tensorfile(&[&"verify", &path, &"--json"])));
    assert_eq!(
        (shallow["ok"].clone(), shallow["checksums"].clone(), shallow["deep"].clone()),
        (true.into(), 1.into(), false.into())
    );
    let o = tensorfile(&[&"verify", &path, &"--deep"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("[decompressed-size-mismatch]"), "{}", stdout(&o));
    let deep = json_of(&stdout(&tensorfile(&[&"verify", &path, &"--deep", &"--json"])));
    assert_eq!(deep["problems"][0]["rule"], "decompressed-size-mismatch");
}

fn zstd_frame(data: &[u8]) -> Vec<u8> {
    tensorfile::formats::write_to_vec(
        Format::Zt,
        &[dense("x", DType::UInt8, &[data.len() as u64], data.to_vec())],
        &WriteOptions { compression: Compression::Zstd(3), checksum: ChecksumKind::None, ..WriteOptions::default() },
    )
    .map(|zt| {
        let f = TensorFile::from_bytes(Bytes::from_vec(zt.clone())).unwrap();
        let s = &f.entries()[0].storage;
        zt[s.offset as usize..(s.offset + s.len) as usize].to_vec()
    })
    .unwrap()
}

/// A skippable zstd frame of exactly `total` bytes (at least 8).
fn skippable(total: usize) -> Vec<u8> {
    assert!(total >= 8, "room for a skippable frame");
    let mut f = 0x184D_2A50u32.to_le_bytes().to_vec();
    f.extend_from_slice(&((total - 8) as u32).to_le_bytes());
    f.resize(total, 0);
    f
}

fn crc32c(data: &[u8]) -> u32 {
    match tensorfile::model::Checksum::compute(ChecksumKind::Crc32c, data) {
        Some(tensorfile::model::Checksum::Crc32c(c)) => c,
        other => panic!("{other:?}"),
    }
}

/// `bytes` with the one occurrence of `old` replaced by `new` (same length).
fn replace_text(bytes: &[u8], old: &str, new: &str) -> Vec<u8> {
    assert_eq!(old.len(), new.len());
    let at = bytes.windows(old.len()).position(|w| w == old.as_bytes()).expect("found");
    let mut out = bytes.to_vec();
    out[at..at + old.len()].copy_from_slice(new.as_bytes());
    out
}

#[test]
fn verify_counts_the_crcs_of_a_torch_archive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.pt");
    write(&path, &sample_tensors()[..3], &WriteOptions::default());
    let j = json_of(&ok(&[&"verify", &path, &"--json"]));
    // data.pkl, byteorder, three storages, version, .format_version, .storage_alignment.
    assert_eq!(j["checksums"], 8);
    assert_eq!(j["ok"], true);
}

// --- extract -------------------------------------------------------------------------------

#[test]
fn extract_writes_npy_files_and_raw_bfloat16() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("x.zt");
    let tensors = sample_tensors();
    write(&src, &tensors, &WriteOptions { byte_order: ByteOrder::Big, ..WriteOptions::default() });
    let out = dir.path().join("new/sub");
    ok(&[&"extract", &src, &"-o", &out]);

    let expected =
        ["empty.npy", "half.npy", "ids.npy", "layers.0%2Fweight.npy", "mask.npy", "norm.bfloat16.bin", "scale.npy"];
    assert_eq!(names_in(&out), expected);
    let (header, data) = read_npy(&out.join("layers.0%2Fweight.npy"));
    assert_eq!(header, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    assert_eq!(data, tensors[0].1.dense().unwrap().to_vec(), "little-endian whatever the file's byte order");
    assert!(read_npy(&out.join("ids.npy")).0.contains("'descr': '<i8', 'fortran_order': False, 'shape': (2,)"));
    assert!(read_npy(&out.join("mask.npy")).0.contains("'|b1'"));
    assert!(read_npy(&out.join("scale.npy")).0.contains("'shape': ()"));
    assert!(read_npy(&out.join("empty.npy")).0.contains("'shape': (0, 3)"));
    assert_eq!(std::fs::read(out.join("norm.bfloat16.bin")).unwrap(), bf16s(&[1.0, 0.5, -4.0]));
}

#[test]
fn extract_selected_names_and_refuses_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("x.safetensors");
    write(&src, &sample_tensors(), &WriteOptions::default());
    let out = dir.path().join("out");

    let o = tensorfile(&[&"extract", &src, &"ids", &"nope", &"-o", &out]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("\"nope\""), "{}", stderr(&o));
    assert!(!out.exists(), "nothing is written when a name is unknown");

    let j = json_of(&ok(&[&"extract", &src, &"ids", &"-o", &out, &"--json"]));
    assert_eq!(j["extracted"][0]["name"], "ids");
    assert_eq!(names_in(&out), ["ids.npy"]);
}

#[test]
fn extracted_names_stay_inside_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("evil.zt");
    let names = ["../escape", "/abs", "a/../../b", ".hidden", "..", ".", "back\\slash", "per%cent", ""];
    let tensors: Vec<_> = names.iter().map(|n| dense(n, DType::UInt8, &[1], vec![1])).collect();
    write(&src, &tensors, &WriteOptions::default());
    let out = dir.path().join("out");
    ok(&[&"extract", &src, &"-o", &out]);

    assert_eq!(names_in(dir.path()), ["evil.zt", "out"], "nothing written beside the folder");
    let written = names_in(&out);
    assert_eq!(written.len(), names.len());
    assert!(written.iter().all(|n| !n.starts_with('.') && n.ends_with(".npy")), "{written:?}");
    for expected in [
        "%2E.%2Fescape.npy",
        "%2Fabs.npy",
        "a%2F..%2F..%2Fb.npy",
        "%2Ehidden.npy",
        "%2E..npy",
        "%2E.npy",
        "back%5Cslash.npy",
        "per%25cent.npy",
        "%.npy",
    ] {
        assert!(written.contains(&expected.to_string()), "{expected} not in {written:?}");
    }
}

#[test]
fn extract_writes_sparse_components() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.zt");
    let sparse = |name: &str, format, indptr: Vec<u64>, indices: Vec<u64>, values: &[f32]| {
        let nnz = values.len() as u64;
        let info = TensorInfo {
            kind: Kind::Tensor,
            layout: Layout::Sparse { format, nnz },
            ..TensorInfo::dense(name, DType::Float32, vec![3, 4])
        };
        (info, TensorData::Sparse(SparseData { format, nnz, indptr, indices, values: Bytes::from_vec(f32s(values)) }))
    };
    let tensors = [
        sparse("coo", SparseFormat::Coo, vec![], vec![0, 2, 1, 3], &[1.0, 2.0]),
        sparse("csr", SparseFormat::Csr, vec![0, 1, 1, 3], vec![1, 0, 3], &[1.5, -2.0, 4.0]),
    ];
    write(&src, &tensors, &WriteOptions::default());
    let out = dir.path().join("out");
    ok(&[&"extract", &src, &"-o", &out]);

    assert_eq!(
        names_in(&out),
        ["coo.indices.npy", "coo.values.npy", "csr.indices.npy", "csr.indptr.npy", "csr.values.npy"]
    );
    let (header, data) = read_npy(&out.join("coo.indices.npy"));
    assert!(header.contains("'<u8'") && header.contains("(2, 2)"), "{header}");
    assert_eq!(data, [0u64, 2, 1, 3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    assert!(read_npy(&out.join("csr.indptr.npy")).0.contains("(4,)"));
    let (header, data) = read_npy(&out.join("csr.values.npy"));
    assert!(header.contains("'<f4'") && header.contains("(3,)"), "{header}");
    assert_eq!(data, f32s(&[1.5, -2.0, 4.0]));
}

#[test]
fn output_paths_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let src: PathBuf = dir.path().join("one.zt");
    write(&src, &[dense("a/b", DType::UInt8, &[1], vec![1])], &WriteOptions::default());
    let out = dir.path().join("o");
    let text = ok(&[&"extract", &src, &"-o", &out]);
    assert_eq!(text.trim_end(), format!("a/b -> {}", out.join("a%2Fb.npy").display()));
}

#[test]
fn extract_refuses_two_entries_sharing_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("clash.zt");
    let nnz = 1;
    let format = SparseFormat::Coo;
    let info = TensorInfo { layout: Layout::Sparse { format, nnz }, ..TensorInfo::dense("w", DType::Float32, vec![2]) };
    let data = SparseData { format, nnz, indptr: vec![], indices: vec![1], values: Bytes::from_vec(f32s(&[1.0])) };
    let sparse = (info, TensorData::Sparse(data));
    write(&src, &[sparse, dense("w.values", DType::Float32, &[1], f32s(&[2.0]))], &WriteOptions::default());
    let out = dir.path().join("out");

    let o = tensorfile(&[&"extract", &src, &"-o", &out]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("\"w\" and \"w.values\"") && stderr(&o).contains("w.values.npy"), "{}", stderr(&o));
    assert!(!out.exists());
}

// --- fields kept from the file ---------------------------------------------------------------

#[test]
fn ls_shows_the_custom_fields_the_reference_wrote() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zt/rust/custom_fields.zt");
    let rows = json_of(&ok(&[&"ls", &fixture, &"--json"]));
    let weight = rows.as_array().unwrap().iter().find(|r| r["name"] == "weight").unwrap();
    assert_eq!(weight["extra"]["bits"], 4);
    assert_eq!(weight["extra"]["quantization"]["scheme"], "affine");
    assert_eq!(weight["extra"]["raw_bytes"]["bytes"], "deadbeef");
    let table = ok(&[&"ls", &fixture]);
    assert!(table.lines().next().unwrap().ends_with("FIELDS"), "{table}");
    assert!(table.contains("scale=0.5") && table.contains(r#"note="after the checksum key""#), "{table}");
}

// --- ExecuTorch ------------------------------------------------------------------------------

fn et_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/executorch").join(name)
}

#[test]
fn info_describes_a_program() {
    let text = ok(&[&"info", &et_fixture("two_methods.pte")]);
    assert!(text.contains("method forward") && text.contains("method encode"), "{text}");
    assert!(text.contains("operators"), "{text}");
    let j = json_of(&ok(&[&"info", &et_fixture("xnnpack.pte"), &"--json"]));
    let m = &j["structure"]["methods"][0];
    assert_eq!(m["delegates"][0]["id"], "XnnpackBackend");
    assert!(m["delegates"][0]["bytes"].as_u64().unwrap() > 0);
    assert_eq!(j["format"], "pte");
}

#[test]
fn dump_prints_the_program_with_enum_names() {
    let j = json_of(&ok(&[&"dump", &et_fixture("constants.pte")]));
    let v = &j["execution_plan"][0]["values"][0];
    assert_eq!(v["val_type"], "Tensor");
    assert_eq!(v["val"]["scalar_type"], "FLOAT");
    let ptd = json_of(&ok(&[&"dump", &et_fixture("external.ptd")]));
    assert!(ptd["named_data"].as_array().unwrap().len() == 4);
    let dir = tempfile::tempdir().unwrap();
    let zt = dir.path().join("x.zt");
    write(&zt, &[dense("a", DType::UInt8, &[1], vec![1])], &WriteOptions::default());
    assert_eq!(code(&tensorfile(&[&"dump", &zt])), 2, "dump is for flatbuffer formats");
}

#[test]
fn external_tensors_need_their_data_file() {
    let pte = et_fixture("external.pte");
    let rows = json_of(&ok(&[&"ls", &pte, &"--json"]));
    assert!(rows.as_array().unwrap().iter().all(|r| r["kind"] == "unreadable"), "{rows}");
    let rows = json_of(&ok(&[&"ls", &pte, &"--data", &et_fixture("external.ptd"), &"--json"]));
    assert!(rows.as_array().unwrap().iter().all(|r| r["source"] == "external" && r["kind"] == "tensor"), "{rows}");
    let o = tensorfile(&[&"verify", &pte]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("--data") || stderr(&o).contains("--data"), "says how to fix it");
}

#[test]
fn extract_delegates_writes_their_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d");
    ok(&[&"extract", &et_fixture("xnnpack.pte"), &"--delegates", &"-o", &out]);
    let mut files: Vec<_> =
        std::fs::read_dir(&out).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["forward.delegate0.XnnpackBackend.bin", "forward.delegate1.XnnpackBackend.bin"]);
    for f in &files {
        assert!(std::fs::metadata(out.join(f)).unwrap().len() > 0);
    }
}

#[test]
fn externalize_update_and_convert_to_ptd_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let src = et_fixture("constants.pte");
    ok(&[&"externalize", &src, &"-o", &p("ext.pte"), &"--data", &p("ext.ptd")]);
    // The external program with its data reads the same tensors as the original.
    ok(&[&"convert", &src, &p("a.safetensors")]);
    ok(&[&"convert", &p("ext.pte"), &"--data", &p("ext.ptd"), &p("b.safetensors")]);
    ok(&[&"diff", &p("a.safetensors"), &p("b.safetensors")]);
    // Update with the same weights gives back the very same file.
    ok(&[&"update", &src, &"--weights", &p("a.safetensors"), &"-o", &p("same.pte")]);
    assert_eq!(std::fs::read(p("same.pte")).unwrap(), std::fs::read(&src).unwrap());
    // A safetensors file converted to .ptd reads the same.
    ok(&[&"convert", &p("a.safetensors"), &p("c.ptd")]);
    ok(&[&"diff", &p("a.safetensors"), &p("c.ptd")]);
    // Wrong shapes and unknown names are refused, naming the tensor.
    let bad = p("bad.safetensors");
    write(&bad, &[dense("constant.1", DType::Float32, &[1], f32s(&[1.0]))], &WriteOptions::default());
    let o = tensorfile(&[&"update", &src, &"--weights", &bad, &"-o", &p("x.pte")]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("constant.1"), "{}", stderr(&o));
    assert!(!p("x.pte").exists());
}

#[test]
fn externalize_several_programs_into_one_shared_ptd() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let a = et_fixture("constants.pte");
    let b = dir.path().join("copy.pte");
    std::fs::copy(&a, &b).unwrap();
    let j = json_of(&ok(&[&"externalize", &a, &b, &"-o", &out, &"--data", &dir.path().join("shared.ptd"), &"--json"]));
    assert_eq!(j["programs"].as_array().unwrap().len(), 2);
    let shared = dir.path().join("shared.ptd");
    let rows = json_of(&ok(&[&"ls", &shared, &"--json"]));
    let n = rows.as_array().unwrap().len();
    assert!(rows.as_array().unwrap().iter().all(|r| r["name"].as_str().unwrap().contains("/constant.")));
    // Identical tensors are stored once: the two copies share every segment.
    let dump = json_of(&ok(&[&"dump", &shared]));
    assert_eq!(dump["segments"].as_array().unwrap().len() * 2, n);
    for prog in ["constants.pte", "copy.pte"] {
        ok(&[&"verify", &out.join(prog), &"--data", &shared]);
    }
}
