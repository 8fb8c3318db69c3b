//! Importance matrices, llama.cpp's two layouts: legacy `.dat` files (an `i32` entry count;
//! per entry an `i32` name length, the name, `i32` calls, `i32` value count, `f32` values;
//! an optional trailer of chunk count and dataset name) built field by field, and GGUF files
//! (`<name>.in_sum2` and `<name>.counts` tensors, `imatrix.*` keys) built with the GGUF
//! module's writer. The two llama-imatrix wrote for the tiny model are copied as valid cases.
//! `open` is reading the file; `verify` is making its weights as llama-quantize does.

use tensorfile::Rule;

use super::Fixtures;
use super::gguf::{ARRAY, GGML_F16, GGML_F32, Info, LE, STRING, U32, info};
use crate::case::{Family as F, Folder};

/// A legacy entry: name, calls, values.
fn entry(name: &[u8], calls: i32, values: &[f32]) -> Vec<u8> {
    let mut b = (name.len() as i32).to_le_bytes().to_vec();
    b.extend_from_slice(name);
    b.extend_from_slice(&calls.to_le_bytes());
    b.extend_from_slice(&(values.len() as i32).to_le_bytes());
    values.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
    b
}

/// A legacy file: the count, the entries, the trailer bytes.
fn dat(count: i32, entries: &[Vec<u8>], trailer: &[u8]) -> Vec<u8> {
    [count.to_le_bytes().to_vec(), entries.concat(), trailer.to_vec()].concat()
}

/// The trailer: chunk count, dataset name.
fn trailer(chunks: i32, dataset: &[u8]) -> Vec<u8> {
    [chunks.to_le_bytes().to_vec(), (dataset.len() as i32).to_le_bytes().to_vec(), dataset.to_vec()].concat()
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The three `imatrix.*` keys, with the chunk count given as its value type and bytes.
fn keys(chunk_type: u32, chunk_payload: &[u8]) -> Vec<u8> {
    [
        LE.kv(b"imatrix.datasets", ARRAY, &LE.array(STRING, 1, &LE.s(b"calibration.txt"))),
        LE.kv(b"imatrix.chunk_count", chunk_type, chunk_payload),
        LE.kv(b"imatrix.chunk_size", U32, &LE.u32(512)),
    ]
    .concat()
}

/// A GGUF importance matrix of one weight matrix `w` of 4 columns and 2 experts: its sums
/// (F32 [4, 2]) and counts (`counts_type` [1, 2]); `kvs` are `kv_count` key/values.
fn gguf(kv_count: u64, kvs: &[u8], counts_type: u32, counts: &[u8], with_counts: bool) -> Vec<u8> {
    let sums = floats(&[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]);
    let mut infos: Vec<Info<'_>> = vec![info("w.in_sum2", &[4, 2], GGML_F32, 0)];
    let mut data = sums;
    if with_counts {
        infos.push(info("w.counts", &[1, 2], counts_type, 32));
        data.extend_from_slice(counts);
    }
    LE.file(kv_count, kvs, &infos, &data)
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::imatrix("imatrix");
    legacy(&mut f);
    gguf_cases(&mut f);
    for name in ["imatrix-tiny.dat", "imatrix-tiny.gguf"] {
        let desc = format!("{name}: what llama-imatrix wrote for the tiny llama model of tests/fixtures/gguf-quantize");
        f.valid(name, F::Valid, &desc, fx.read(&format!("gguf-quantize/{name}"))?);
    }
    Ok(f)
}

fn legacy(f: &mut Folder) {
    let one = entry(b"blk.0.attn_q.weight", 4, &[8.0, 4.0]);
    f.valid("legacy-one-entry.dat", F::Valid, "one entry, no trailer", dat(1, std::slice::from_ref(&one), &[]));
    let two = [one.clone(), entry(b"blk.0.attn_k.weight", 0, &[1.5])];
    f.valid(
        "legacy-trailer.dat",
        F::Valid,
        "two entries, the chunk count and the dataset name",
        dat(2, &two, &trailer(3, b"data.txt")),
    );
    f.valid(
        "legacy-trailer-cut.dat",
        F::Valid,
        "a trailer of 2 bytes: llama.cpp keeps the chunk count they make",
        dat(1, std::slice::from_ref(&one), &[3, 0]),
    );
    f.valid(
        "legacy-dataset-past-end.dat",
        F::Valid,
        "a dataset name longer than what is left: no dataset, as llama.cpp reads it",
        dat(1, std::slice::from_ref(&one), &[3i32.to_le_bytes(), 99i32.to_le_bytes()].concat()),
    );
    f.valid(
        "legacy-name-twice.dat",
        F::DuplicateName,
        "two entries of one name: the later replaces the earlier, as llama.cpp keeps it",
        dat(2, &[one.clone(), entry(b"blk.0.attn_q.weight", 1, &[2.0])], &[]),
    );
    f.valid(
        "legacy-name-with-nul.dat",
        F::Valid,
        "a name with a NUL inside: cut there, as C++ makes a string of it",
        dat(1, &[entry(b"w\0ignored", 1, &[1.0])], &[]),
    );
    f.open("legacy-empty.dat", F::Truncation, Rule::Truncated, "no bytes: no entry count", Vec::new());
    f.open("legacy-count-cut.dat", F::Truncation, Rule::Truncated, "an entry count of 2 bytes", vec![1, 0]);
    f.open("legacy-no-entries.dat", F::BadField, Rule::BadField, "an entry count of 0", dat(0, &[], &[]));
    f.open("legacy-negative-count.dat", F::BadField, Rule::BadField, "an entry count of -1", dat(-1, &[], &[]));
    f.open(
        "legacy-entries-missing.dat",
        F::Truncation,
        Rule::Truncated,
        "3 entries declared, 1 there",
        dat(3, std::slice::from_ref(&one), &[]),
    );
    let mut negative_name = 1i32.to_le_bytes().to_vec();
    negative_name.extend_from_slice(&(-5i32).to_le_bytes());
    f.open("legacy-negative-name-length.dat", F::BadField, Rule::BadField, "a name length of -5", negative_name);
    let mut long_name = 1i32.to_le_bytes().to_vec();
    long_name.extend_from_slice(&1000i32.to_le_bytes());
    long_name.extend_from_slice(b"short");
    f.open("legacy-name-past-end.dat", F::PastEnd, Rule::Truncated, "a name of 1000 bytes in a file of 13", long_name);
    let mut huge = entry(b"w", 1, &[]);
    let at = huge.len() - 4;
    huge[at..].copy_from_slice(&i32::MAX.to_le_bytes());
    f.open(
        "legacy-values-overflow.dat",
        F::Overflow,
        Rule::Truncated,
        "2^31-1 values (8 GiB as C computes them in 32 bits) in a file of 25 bytes",
        dat(1, &[huge], &[]),
    );
    f.open(
        "legacy-no-values.dat",
        F::BadField,
        Rule::BadField,
        "an entry of 0 values",
        dat(1, &[entry(b"w", 1, &[])], &[]),
    );
    let mut cut = entry(b"w", 1, &[1.0, 2.0]);
    cut.truncate(cut.len() - 2);
    f.open(
        "legacy-values-cut.dat",
        F::Truncation,
        Rule::Truncated,
        "the last value cut after 2 bytes",
        dat(1, &[cut], &[]),
    );
}

fn gguf_cases(f: &mut Folder) {
    let counts = floats(&[3.0, 0.0]);
    f.valid(
        "two-experts.gguf",
        F::Valid,
        "sums and counts of 2 experts, the second never counted (its weights are 1)",
        gguf(3, &keys(U32, &LE.u32(3)), GGML_F32, &counts, true),
    );
    f.valid(
        "counts-not-finite.gguf",
        F::Valid,
        "counts of NaN and infinity: lround makes them the most negative count, weights 1",
        gguf(3, &keys(U32, &LE.u32(3)), GGML_F32, &floats(&[f32::NAN, f32::INFINITY]), true),
    );
    f.valid(
        "no-metadata.gguf",
        F::Valid,
        "no imatrix.* keys: it reads (llama-quantize then refuses to use it)",
        gguf(0, &[], GGML_F32, &counts, true),
    );
    f.open(
        "sums-without-counts.gguf",
        F::BadField,
        Rule::MissingField,
        "w.in_sum2 without w.counts",
        gguf(3, &keys(U32, &LE.u32(3)), GGML_F32, &counts, false),
    );
    f.open(
        "counts-f16.gguf",
        F::BadField,
        Rule::BadField,
        "counts stored as F16: both must be F32",
        gguf(3, &keys(U32, &LE.u32(3)), GGML_F16, &[0, 0x3c, 0, 0x40], true),
    );
    f.open(
        "chunk-count-string.gguf",
        F::BadField,
        Rule::BadMetadata,
        "imatrix.chunk_count a string (ggml aborts reading it as a u32)",
        gguf(3, &keys(STRING, &LE.s(b"3")), GGML_F32, &counts, true),
    );
    f.open(
        "no-tensors.gguf",
        F::BadField,
        Rule::BadField,
        "a GGUF file of the three keys and no entry",
        LE.file(3, &keys(U32, &LE.u32(3)), &[], &[]),
    );
    let infos = [info("w.in_sum2", &[4, 2], GGML_F32, 0), info("w.counts", &[1, 0], GGML_F32, 32)];
    f.verify(
        "counts-empty.gguf",
        F::SizeMismatch,
        Rule::BadField,
        "counts of no element: llama-quantize would divide the sums by their number, 0",
        LE.file(3, &keys(U32, &LE.u32(3)), &infos, &floats(&[1.0; 8])),
    );
}
