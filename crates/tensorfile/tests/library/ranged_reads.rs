//! Readers take from a file only what they need: its index when it is opened, a tensor's
//! stored bytes when that tensor is read. Checked with `Source::counted`, which serves bytes
//! in memory as a remote object would (no map to deref, every range counted, small ranges
//! kept), so that the bound holds for remote files without a server (tests/remote.rs checks
//! it against real ones). Every fixture also reads the same through a counted source as
//! through its map.

use crate::common;

use std::path::{Path, PathBuf};

use common::{dense, options, write};
use tensorfile::formats::{Compression, Format, FormatReader};
use tensorfile::model::{ByteOrder, ChecksumKind, MetaValue, TensorData, TensorInfo};
use tensorfile::source::{Bytes, SPECULATIVE_READ, Source};
use tensorfile::{DType, Layout};

/// Several small tensors around one of 6 MiB (larger than a speculative read and than what a
/// remote source keeps).
fn tensors() -> Vec<(TensorInfo, TensorData)> {
    let mut t = vec![dense(TensorInfo::dense("a.small", DType::Float32, vec![3, 5]), 1)];
    t.push(dense(TensorInfo::dense("b.large", DType::Float32, vec![1536, 1024]), 2));
    t.extend((0..20).map(|i| dense(TensorInfo::dense(format!("c.{i}"), DType::BFloat16, vec![64]), 3 + i)));
    t
}

/// The index size a format's summary states, or 0.
fn index_len(reader: &dyn FormatReader) -> u64 {
    let details = reader.summary().details;
    let stated = details.iter().find(|(k, _)| k == "index_bytes" || k == "header_bytes");
    match stated {
        Some((_, MetaValue::Int(n))) => u64::try_from(*n).unwrap(),
        _ => 0,
    }
}

fn dense_bytes(data: TensorData) -> Vec<u8> {
    match data.as_dense() {
        Ok(b) => b.to_vec(),
        Err(_) => panic!("not dense: {data:?}"),
    }
}

#[test]
fn zt_and_safetensors_open_with_their_index_and_read_a_tensor_with_its_bytes() {
    let cases = [
        (Format::Safetensors, options(Compression::None, ChecksumKind::None, ByteOrder::Little)),
        (Format::Zt, options(Compression::None, ChecksumKind::None, ByteOrder::Little)),
        (Format::Zt, options(Compression::None, ChecksumKind::Crc32c, ByteOrder::Big)),
        (Format::Zt, options(Compression::Zstd(3), ChecksumKind::Sha256, ByteOrder::Little)),
    ];
    let tensors = tensors();
    for (format, opts) in cases {
        let case = format!("{format:?} {:?} {:?} {:?}", opts.compression, opts.checksum, opts.byte_order);
        let bytes = write(format, &tensors, &opts);
        let src = Source::counted(Bytes::from_vec(bytes.clone()));
        let reader = format.open(src.clone()).unwrap();
        let local = format.open(Bytes::from_vec(bytes.clone())).unwrap();
        let opened = src.bytes_fetched();
        // The magic (zt), one speculative read, and the rest of the index if it is longer.
        let bound = 8 + SPECULATIVE_READ + index_len(&*reader).saturating_sub(SPECULATIVE_READ - 8);
        assert!(opened <= bound, "{case}: open fetched {opened} bytes, bound {bound}");
        assert!(opened < bytes.len() as u64 / 10, "{case}: open fetched {opened} of {}", bytes.len());
        assert_eq!(reader.entries(), local.entries(), "{case}");

        let large = reader.entries().iter().position(|e| e.info().name() == "b.large").unwrap();
        let stored = reader.entries()[large].storage().len();
        for verify in [false, true] {
            let before = src.bytes_fetched();
            let data = dense_bytes(reader.read(large, verify).unwrap());
            assert_eq!(src.bytes_fetched() - before, stored, "{case}: one tensor, its stored bytes");
            assert_eq!(data, dense_bytes(local.read(large, verify).unwrap()), "{case}");
        }
        let before = src.bytes_fetched();
        let pieces: Vec<u8> = reader.read_chunks(large, true).unwrap().flat_map(|p| p.unwrap().to_vec()).collect();
        assert_eq!(src.bytes_fetched() - before, stored, "{case}: in pieces, its stored bytes once");
        assert_eq!(pieces, dense_bytes(local.read(large, false).unwrap()), "{case}");

        // Checksums are checked over exactly the bytes of the tensors that have one.
        let before = src.bytes_fetched();
        let (problems, checked) = reader.verify_checksums();
        assert!(problems.is_empty(), "{case}: {problems:?}");
        let summed: u64 =
            reader.entries().iter().filter(|e| e.storage().checksum().is_some()).map(|e| e.storage().len()).sum();
        assert_eq!(checked, reader.entries().iter().filter(|e| e.storage().checksum().is_some()).count(), "{case}");
        assert!(src.bytes_fetched() - before <= summed, "{case}: checksums fetched too much");
    }
}

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        // Raw arrays, not files of a format: quantization, dequantization and cast references.
        // Files that are not what their names say (tests/library/diagnose.rs).
        let raw = ["gguf/quants", "ggml-quant", "ggml-quant-iq", "ggufpy-quant", "cast", "diagnose"];
        if raw.iter().any(|r| path.ends_with(r)) {
            continue;
        }
        if path.is_dir() {
            fixture_files(&path, out);
        } else {
            let of_a_format = |ext: &str| tensorfile::Format::ALL.iter().any(|f| f.unit().extensions().contains(&ext));
            match path.extension().and_then(|e| e.to_str()) {
                // An ONNX model's external data, read through the model.
                Some("bin") if path.parent().is_some_and(|p| p.ends_with("onnx/external")) => {}
                // SentencePiece models and chat templates of Hugging Face checkpoints (read by
                // tests/library/hf_gguf.rs).
                Some("model" | "jinja")
                    if path
                        .parent()
                        .and_then(Path::parent)
                        .and_then(Path::file_name)
                        .is_some_and(|n| n.to_str().is_some_and(|n| n == "hf-gguf" || n.starts_with("hf-gguf-"))) => {}
                // llama.cpp's legacy importance matrices (read by tests/library/quantize_plan.rs).
                Some("dat") if path.parent().is_some_and(|p| p.ends_with("gguf-quantize")) => {}
                // A file with the extension of a format the registry knows; netCDF-4 files are
                // HDF5 files (`.nc` is no extension of the unit's: netCDF-3 is another format).
                Some(ext) if of_a_format(ext) || ext == "nc" => out.push(path),
                // Records, shard indexes (read through their shards' test), notes.
                Some("json" | "md") => {}
                _ if path.file_name().is_some_and(|n| n == ".gitattributes") => {}
                _ => panic!("{}: a fixture of no known format: add it here", path.display()),
            }
        }
    }
}

/// Every fixture of every format: the same entries and the same bytes for every tensor
/// through a counted source as through the map.
#[test]
fn every_fixture_reads_the_same_by_range_as_from_its_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    let (mut compared, mut opened, mut refused) = (0, 0, 0);
    for path in files {
        let bytes = Bytes::map_file(&path).unwrap();
        // An HDF5 file with a user block is recognised only when its format is named.
        let named = path.file_name().is_some_and(|n| n == "userblock.h5").then_some(Format::Hdf5);
        let format =
            named.map_or_else(|| Format::detect(&bytes), Ok).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let src = Source::counted(Bytes::from_vec(bytes.to_vec()));
        // The pickles torch refuses too (pytorch/hostile/) are refused alike both ways.
        if path.parent().is_some_and(|p| p.ends_with("hostile")) {
            let local = format.open(bytes.clone()).err().unwrap_or_else(|| panic!("{}: opened", path.display()));
            let ranged = format.open(src).err().unwrap_or_else(|| panic!("{}: opened by range", path.display()));
            assert_eq!(local.rule(), Some(tensorfile::Rule::ForbiddenGlobal), "{}: {local}", path.display());
            assert_eq!(ranged.rule(), local.rule(), "{}: {ranged}", path.display());
            refused += 1;
            continue;
        }
        let local = format.open(bytes.clone()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        opened += 1;
        let ranged = format.open(src.clone()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(ranged.entries(), local.entries(), "{}", path.display());
        assert_eq!(ranged.unreadable().len(), local.unreadable().len(), "{}", path.display());
        for (i, entry) in local.entries().iter().enumerate() {
            let what = format!("{}: {}", path.display(), entry.info().name());
            let want = local.read(i, true);
            let got = ranged.read(i, true);
            match (want, got) {
                (Ok(w), Ok(g)) => assert!(w == g, "{what}: differs"),
                (Err(w), Err(g)) => assert_eq!(w.rule(), g.rule(), "{what}"),
                (w, g) => panic!("{what}: map {w:?}, by range {g:?}"),
            }
            if !matches!(entry.info().layout(), Layout::Sparse { .. }) {
                compared += 1;
            }
        }
    }
    assert!(compared > 100, "only {compared} tensors compared: fixtures missing?");
    // 18 zTensor, 11 safetensors (4 of them shards), 13 ExecuTorch and 24 PyTorch files.
    assert!(opened >= 66, "only {opened} fixtures opened: fixtures missing?");
    assert_eq!(refused, 2, "the hostile pickles");
}
