//! Programs read by range: what opening and reading fetch from a source served as if remote
//! ([`Source::counted_exact`]), and that it reads the same as the local map.

use std::path::{Path, PathBuf};

use super::PteReader;
use super::program::Origin as From;
use crate::formats::FormatReader;
use crate::formats::executorch::ptd::PtdReader;
use crate::source::{Bytes, SPECULATIVE_READ, Source};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/executorch")
}

/// Every `.pte` fixture, with the `.ptd` its record names (external tensors).
fn programs() -> Vec<(PathBuf, Option<PathBuf>)> {
    let mut out: Vec<(PathBuf, Option<PathBuf>)> = std::fs::read_dir(dir())
        .expect("fixtures missing: run scripts/fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pte"))
        .map(|p| {
            let record = std::fs::read(p.with_extension("pte.expected.json")).unwrap();
            let record: serde_json::Value = serde_json::from_slice(&record).unwrap();
            let data = record["data_file"].as_str().map(|d| p.with_file_name(d));
            (p, data)
        })
        .collect();
    out.sort();
    assert_eq!(out.len(), 15, "`.pte` fixtures committed in tests/fixtures/executorch (run scripts/fixtures)");
    out
}

/// What opening fetches: the speculative head read, then the rest of the flatbuffer, then the
/// heads and flatbuffers of the XNNPACK payloads stored in segments (`payloads` bytes).
fn expected_at_open(len: u64, flatbuffer: u64, payloads: u64) -> u64 {
    SPECULATIVE_READ.min(len).max(flatbuffer) + payloads
}

/// Bytes opening reads of the XNNPACK payloads a program stores in segments: each one's
/// header (30 bytes), then its flatbuffer (not its constant data).
fn xnnpack_segment_bytes(r: &PteReader) -> u64 {
    let mut total = 0;
    for plan in r.program().root.tables("execution_plan").unwrap() {
        for (i, d) in plan.tables("delegates").unwrap().iter().enumerate() {
            let p = d.table("processed").unwrap().unwrap();
            if d.str("id").unwrap() == Some("XnnpackBackend") && p.int("location").unwrap() == 1 {
                let method = plan.str("name").unwrap().unwrap();
                let g = r.xnnpack_graphs().iter().find(|g| g.method == method && g.index == i).unwrap();
                let header = g.graph.as_ref().unwrap().header.expect("executorch writes the header");
                total += 30 + u64::from(header.flatbuffer_size);
            }
        }
    }
    total
}

#[test]
fn programs_open_with_their_flatbuffer_only_and_read_each_tensor_by_its_bytes() {
    let mut read_from_segments = 0;
    for (path, data) in programs() {
        let what = path.file_name().unwrap().to_string_lossy().into_owned();
        let map = Bytes::map_file(&path).unwrap();
        let ptd_map = data.as_ref().map(|d| Bytes::map_file(d).unwrap());
        let local = PteReader::open(map.clone(), ptd_map.clone().map(|b| PtdReader::open(b).unwrap())).unwrap();

        let src = Source::counted_exact(map.clone());
        let ptd_src = ptd_map.clone().map(Source::counted_exact);
        let ptd = ptd_src.clone().map(|s| PtdReader::open(s).unwrap());
        let remote = PteReader::open(src.clone(), ptd).unwrap();
        let program_size = remote.program().layout.program_size;
        let at_open = src.bytes_fetched();
        let payloads = xnnpack_segment_bytes(&local);
        assert_eq!(at_open, expected_at_open(map.len() as u64, program_size, payloads), "{what}");
        assert!(at_open <= program_size + SPECULATIVE_READ + payloads, "{what}");
        eprintln!(
            "{what}: {} bytes, flatbuffer {program_size}, {at_open} fetched at open, {} entries",
            map.len(),
            remote.entries().len()
        );

        // Describing the program and checking its rules fetch nothing more.
        assert_eq!(remote.summary().details, local.summary().details, "{what}");
        assert_eq!(remote.summary().structure.map(|s| s.json), local.summary().structure.map(|s| s.json));
        assert_eq!(remote.check().len(), local.check().len(), "{what}");
        assert_eq!(src.bytes_fetched(), at_open, "{what}: summary or check fetched segment data");

        assert_eq!(remote.entries(), local.entries(), "{what}");
        assert_eq!(remote.unreadable().len(), local.unreadable().len(), "{what}");
        for (i, (e, t)) in local.entries().iter().zip(local.program_tensors()).enumerate() {
            let name = e.info().name();
            let ours = local.read(i, true).unwrap();
            let ours = ours.as_dense().unwrap();
            let contiguous = t.layout.as_ref().is_none_or(|l| l.is_contiguous());
            if contiguous {
                // Local: a slice of the program's (or the .ptd's) map.
                let owner = if is_external(t) { ptd_map.as_ref().unwrap() } else { &map };
                assert!(ours.is_mapped() && ours.shares_owner(owner), "{what}: {name} copied");
            }
            let (before, ptd_before) = (src.bytes_fetched(), ptd_src.as_ref().map_or(0, Source::bytes_fetched));
            let theirs = remote.read(i, true).unwrap();
            assert_eq!(theirs.as_dense().unwrap(), ours, "{what}: {name}");
            let fetched = src.bytes_fetched() - before;
            let ptd_fetched = ptd_src.as_ref().map_or(0, Source::bytes_fetched) - ptd_before;
            if is_external(t) {
                assert_eq!((fetched, ptd_fetched), (0, e.storage().len()), "{what}: {name}");
            } else if e.storage().offset() + e.storage().len() <= program_size {
                // Inline in the flatbuffer (the deprecated constant_buffer): already read.
                assert_eq!((fetched, ptd_fetched), (0, 0), "{what}: {name}");
            } else {
                assert_eq!((fetched, ptd_fetched), (e.storage().len(), 0), "{what}: {name}");
                read_from_segments += 1;
            }
        }

        // Delegate payloads are read by range too, and the same.
        let before = src.bytes_fetched();
        let payloads = remote.delegate_payloads().unwrap();
        assert_eq!(payloads, local.delegate_payloads().unwrap(), "{what}");
        let in_segment: u64 = payloads
            .iter()
            .map(|p| &p.3)
            .filter(|b| !b.shares_owner(&remote.program().flatbuffer))
            .map(|b| b.len() as u64)
            .sum();
        assert_eq!(src.bytes_fetched() - before, in_segment, "{what}: delegate payloads");

        // The whole file is only there locally; a rewrite copies ranges of either.
        assert!(local.bytes().is_ok() && remote.bytes().is_err(), "{what}");
    }
    assert!(read_from_segments > 10, "{read_from_segments} tensors read from segments");
}

fn is_external(t: &super::ProgramTensor) -> bool {
    matches!(t.source, From::External { .. })
}

#[test]
fn a_large_program_opens_fetching_a_small_part() {
    let map = Bytes::map_file(&dir().join("mobilenet_v2.pte")).unwrap();
    let src = Source::counted_exact(map.clone());
    let reader = PteReader::open(src.clone(), None).unwrap();
    let at_open = src.bytes_fetched();
    assert!(at_open * 10 < map.len() as u64, "{at_open} of {} bytes fetched at open", map.len());
    let biggest = (0..reader.entries().len()).max_by_key(|&i| reader.entries()[i].nbytes()).unwrap();
    reader.read(biggest, false).unwrap();
    assert_eq!(src.bytes_fetched() - at_open, reader.entries()[biggest].nbytes());
}

#[test]
fn cut_programs_fail_alike_local_and_by_range() {
    for (path, _) in programs() {
        let map = Bytes::map_file(&path).unwrap();
        let len = map.len() as u64;
        let program_size = PteReader::open(map.clone(), None).unwrap().program().layout.program_size;
        let mut cuts = vec![0, 4, 7, 8, 12, 16, 31, 39, 40, 100, len / 2, len - 1];
        cuts.extend([program_size.saturating_sub(1), program_size, program_size + 1]);
        for cut in cuts.into_iter().filter(|&c| c <= len) {
            let bytes = map.slice(0, cut).unwrap();
            let local = PteReader::open(bytes.clone(), None).map(|r| r.entries().len());
            let remote = PteReader::open(Source::counted_exact(bytes), None).map(|r| r.entries().len());
            match (local, remote) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(a), Err(b)) => assert_eq!((a.rule(), a.detail()), (b.rule(), b.detail()), "{path:?} cut at {cut}"),
                (a, b) => panic!("{path:?} cut at {cut}: local {:?}, by range {:?}", a.err(), b.err()),
            }
        }
    }
}

/// What opening gives, to compare: the error's rule and detail, or each entry, each
/// unreadable tensor's rule, each broken load rule, and every entry's bytes.
type Outcome = Result<(Vec<crate::model::Entry>, Vec<String>, Vec<Vec<u8>>), String>;

fn outcome(reader: crate::Result<Box<dyn FormatReader>>) -> Outcome {
    let show = |e: &crate::Error| format!("{:?}: {}", e.rule(), e.detail());
    let r = reader.map_err(|e| show(&e))?;
    let mut problems: Vec<String> =
        r.unreadable().iter().map(|u| format!("{}: {}", u.name(), show(u.error()))).collect();
    problems.extend(r.check().iter().map(show));
    let data = (0..r.entries().len())
        .map(|i| r.read(i, true).map_or_else(|e| show(&e).into_bytes(), |d| d.as_dense().unwrap().to_vec()))
        .collect();
    Ok((r.entries().to_vec(), problems, data))
}

#[test]
fn the_conformance_corpus_reads_alike_local_and_by_range() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance");
    let mut seen = 0;
    for kind in ["valid", "invalid"] {
        for folder in ["pte", "ptd"] {
            for file in std::fs::read_dir(corpus.join(kind).join(folder)).unwrap().flatten() {
                let bytes = Bytes::read_file(&file.path()).unwrap();
                let open = |src: Source| -> crate::Result<Box<dyn FormatReader>> {
                    Ok(if folder == "pte" {
                        Box::new(PteReader::open(src, None)?)
                    } else {
                        Box::new(PtdReader::open(src)?)
                    })
                };
                let local = outcome(open(Source::local(bytes.clone())));
                let remote = outcome(open(Source::counted_exact(bytes)));
                assert_eq!(local, remote, "{}", file.path().display());
                seen += 1;
            }
        }
    }
    assert!(seen > 50, "{seen} conformance files");
}
