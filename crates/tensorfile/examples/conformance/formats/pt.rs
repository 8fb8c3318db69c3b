//! `torch.save` files (`.pt`): a zip of `data.pkl` and storage records, built here entry by
//! entry (pickles in `pickle.rs`), plus fixtures made by torch. The zip attacks live here.

use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::build::pickle::{T, one_float_tensor, state_dict};
use crate::build::zip::{Entry, build, central, end};
use crate::build::{put_u32, u32_at};
use crate::case::{Family as F, Folder};

/// The records of a `torch.save` archive under root folder `archive/`.
pub fn torch_save(pkl: &[u8], storages: &[(&str, &[u8])]) -> Vec<Entry> {
    let mut v = vec![Entry::stored("archive/data.pkl", pkl), Entry::stored("archive/byteorder", b"little")];
    for (k, data) in storages {
        v.push(Entry::stored(&format!("archive/data/{k}"), data));
    }
    v.push(Entry::stored("archive/version", b"3\n"));
    v
}

pub fn floats(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect()
}

/// A valid archive: `w`, float32 [2, 3] over storage `0`.
pub fn simple() -> Vec<Entry> {
    torch_save(&one_float_tensor(&[2, 3]), &[("0", &floats(6))])
}

fn bytes(entries: &[Entry]) -> Vec<u8> {
    build(entries).bytes
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("pt", Format::Pt, "pt");
    valid(&mut f, fx)?;
    structure(&mut f, fx)?;
    names(&mut f);
    bombs(&mut f);
    storages(&mut f);
    Ok(f)
}

fn valid(f: &mut Folder, fx: &Fixtures) -> Result<(), String> {
    f.valid("state-dict", F::Valid, "a float32 [2, 3] tensor in a stored zip", bytes(&simple()));
    let deflated: Vec<Entry> =
        simple().into_iter().map(|e| Entry::deflated(&String::from_utf8_lossy(&e.name), &e.data)).collect();
    f.valid(
        "deflated",
        F::Valid,
        "the same archive with every record deflated (as Python's zipfile rewrites them)",
        bytes(&deflated),
    );
    let views = state_dict(&[
        T { name: "a", storage: "FloatStorage", key: "0", numel: 12, offset: 0, shape: &[2, 3], stride: &[3, 1] },
        T { name: "b", storage: "FloatStorage", key: "0", numel: 12, offset: 6, shape: &[3, 2], stride: &[1, 3] },
        T { name: "c", storage: "FloatStorage", key: "0", numel: 12, offset: 1, shape: &[4], stride: &[3] },
    ]);
    f.valid(
        "shared-storage-views",
        F::Valid,
        "three views of one storage: contiguous, transposed at an offset, strided",
        bytes(&torch_save(&views, &[("0", &floats(12))])),
    );
    let expand = state_dict(&[T {
        name: "e",
        storage: "FloatStorage",
        key: "0",
        numel: 1,
        offset: 0,
        shape: &[4, 3],
        stride: &[0, 0],
    }]);
    f.valid(
        "expanded-view",
        F::Valid,
        "a stride-0 view repeating one element 12 times (what torch saves for expand())",
        bytes(&torch_save(&expand, &[("0", &floats(1))])),
    );
    for (stem, path, what) in [
        (
            "torch-state-dict",
            "pytorch/state_dict.pt",
            "torch.save of a state dict with shared storages (fixture made by torch)",
        ),
        ("torch-bare-tensor", "pytorch/bare_tensor.pt", "torch.save of a bare non-contiguous tensor (fixture)"),
        ("torch-legacy-format", "pytorch/legacy_format.pt", "the format before PyTorch 1.6, not a zip (fixture)"),
        (
            "torch-before-1-0",
            "pytorch/pre_1_0_rebuild_tensor.pt",
            "tensors rebuilt by _rebuild_tensor, as PyTorch before 1.0 saved them (fixture)",
        ),
        (
            "zipfile-streamed",
            "pytorch/zip/streamed.pt",
            "a checkpoint re-zipped by Python's zipfile with data descriptors (fixture)",
        ),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }
    Ok(())
}

fn structure(f: &mut Folder, fx: &Fixtures) -> Result<(), String> {
    let z = build(&simple());
    let good = z.bytes.clone();
    f.open(
        "not-a-zip",
        F::MalformedZip,
        Rule::BadMagic,
        "a local header signature and no end record",
        b"PK\x03\x04 and then nothing a zip needs".to_vec(),
    );
    f.open(
        "truncated-end-record",
        F::Truncation,
        Rule::BadMagic,
        "the end of central directory record cut short",
        good[..good.len() - 5].to_vec(),
    );
    f.open(
        "truncated-in-directory",
        F::Truncation,
        Rule::BadMagic,
        "cut inside the central directory",
        good[..z.central[1] + 10].to_vec(),
    );
    let legacy = fx.read("pytorch/legacy_format.pt")?;
    f.open(
        "legacy-storage-cut",
        F::Truncation,
        Rule::Truncated,
        "the format before PyTorch 1.6 with its last storage cut by one byte",
        legacy[..legacy.len() - 1].to_vec(),
    );
    f.open(
        "too-short",
        F::Truncation,
        Rule::Truncated,
        "an end record signature and 6 more bytes",
        b"PK\x05\x06\0\0\0\0\0\0".to_vec(),
    );
    let mut b = good.clone();
    b[z.end + end::ENTRIES..z.end + end::ENTRIES + 2].copy_from_slice(&9u16.to_le_bytes());
    f.open(
        "directory-cut-short",
        F::Truncation,
        Rule::Truncated,
        "the end record counts 9 entries, the directory holds 4",
        b,
    );
    let mut b = good.clone();
    let size = u32_at(&b, z.end + end::SIZE);
    put_u32(&mut b, z.end + end::SIZE, size + 100);
    f.open(
        "directory-past-end-record",
        F::PastEnd,
        Rule::OutOfBounds,
        "a central directory running 100 bytes past its end record",
        b,
    );
    let mut b = good.clone();
    put_u32(&mut b, z.end + end::OFFSET, 0xffff_0000);
    f.open("directory-offset-past-end", F::PastEnd, Rule::OutOfBounds, "a central directory at offset 2^32-2^16", b);
    let mut b = good[..z.end].to_vec();
    b.extend_from_slice(b"PK\x06\x07\0\0\0\0");
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&good[z.end..]);
    f.open("zip64-locator-past-end", F::PastEnd, Rule::OutOfBounds, "a zip64 locator pointing at offset 2^64-1", b);
    let mut b = good.clone();
    put_u32(&mut b, z.central[0] + central::LOCAL_OFFSET, 0x7fff_ffff);
    f.open("local-header-past-end", F::PastEnd, Rule::OutOfBounds, "an entry whose local header lies at 2^31-1", b);
    let mut b = good.clone();
    put_u32(&mut b, z.central[1] + central::LOCAL_OFFSET, z.local[1] as u32 + 4);
    f.open(
        "local-header-missing",
        F::MalformedZip,
        Rule::BadField,
        "an entry whose local header offset points into another header",
        b,
    );
    let mut b = good.clone();
    b[z.local[0] + 30] = b'X';
    f.open(
        "local-name-mismatch",
        F::MalformedZip,
        Rule::BadField,
        "a local header naming another entry than its directory record",
        b,
    );
    let mut b = good.clone();
    put_u32(&mut b, z.central[0] + central::COMPRESSED, 0x00ff_ffff);
    f.open(
        "entry-into-directory",
        F::PastEnd,
        Rule::OutOfBounds,
        "an entry whose data runs into the central directory",
        b,
    );
    let mut entries = simple();
    entries[0].extra = [&[1u8, 0, 8, 0][..], &u64::MAX.to_le_bytes()].concat();
    let mut z2 = build(&entries);
    put_u32(&mut z2.bytes, z2.central[0] + central::COMPRESSED, 0xffff_ffff);
    f.open(
        "entry-size-overflows",
        F::Overflow,
        Rule::OutOfBounds,
        "a zip64 compressed size of 2^64-1: data offset + size overflows",
        z2.bytes,
    );
    let mut b = good.clone();
    // The first entry's data (after its 30-byte header and name) now ends 10 bytes into the
    // second entry's local header.
    let data0 = z.local[0] + 30 + "archive/data.pkl".len();
    let claim = (z.local[1] + 10 - data0) as u32;
    put_u32(&mut b, z.central[0] + central::COMPRESSED, claim);
    put_u32(&mut b, z.central[0] + central::SIZE, claim);
    f.open(
        "overlapping-entries",
        F::Overlap,
        Rule::Overlap,
        "the first entry's data claims the second entry's bytes",
        b,
    );
    let mut entries = simple();
    entries[0].size += 1;
    f.open(
        "stored-sizes-differ",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "data.pkl stored with two different sizes",
        bytes(&entries),
    );
    let mut entries = simple();
    entries[0].crc ^= 1;
    f.open(
        "pickle-crc-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "data.pkl whose CRC-32 does not match",
        bytes(&entries),
    );
    let mut entries = simple();
    entries[2].crc ^= 1;
    f.verify(
        "storage-crc-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "a storage record whose CRC-32 does not match",
        bytes(&entries),
    );
    Ok(())
}

fn names(f: &mut Folder) {
    let with = |extra: Entry| {
        let mut v = simple();
        v.push(extra);
        bytes(&v)
    };
    let up = Rule::UnsafePath;
    for (stem, name, what) in [
        ("entry-parent-dir", "../evil", "an entry named ../evil"),
        ("entry-parent-inside", "archive/../../evil", "an entry named archive/../../evil"),
        ("entry-absolute", "/etc/cron.d/evil", "an entry with an absolute path"),
        ("entry-backslash-absolute", "\\\\server\\share\\evil", "an entry with a Windows UNC path"),
        ("entry-drive", "C:/evil", "an entry on drive C:"),
        ("entry-backslash-parent", "archive\\..\\..\\evil", "an entry climbing out with backslashes"),
    ] {
        f.open(stem, F::PathEscape, up, what, with(Entry::stored(name, b"x")));
    }
    f.open(
        "duplicate-entries",
        F::DuplicateName,
        Rule::DuplicateName,
        "two entries named archive/data/0",
        with(Entry::stored("archive/data/0", b"abcd")),
    );
    let mut bad = Entry::stored("x", b"x");
    bad.name = b"archive/\xff".to_vec();
    f.open("entry-name-bad-utf8", F::BadUtf8, Rule::BadUtf8, "an entry name with the byte 0xff", with(bad));
    let mut v = simple();
    v.retain(|e| e.name != b"archive/data.pkl");
    f.open("no-data-pkl", F::BadField, Rule::MissingField, "no data.pkl record", bytes(&v));
    let mut v = simple();
    v[1] = Entry::stored("archive/byteorder", b"middle");
    f.open("unknown-byte-order", F::BadField, Rule::UnknownByteOrder, "byteorder middle", bytes(&v));
    let mut v = simple();
    v[1] = Entry::stored("archive/byteorder", b"\xfflittle");
    f.open("byte-order-bad-utf8", F::BadUtf8, Rule::BadUtf8, "a byteorder record that is not UTF-8", bytes(&v));
}

fn bombs(f: &mut Folder) {
    let zeros = vec![0u8; 1 << 20];
    let dsm = Rule::DecompressedSizeMismatch;
    let pickle_claiming = |data: &[u8], claim: u32| {
        let mut v = simple();
        let mut e = Entry::deflated("archive/data.pkl", data);
        e.size = claim;
        v[0] = e;
        bytes(&v)
    };
    f.open(
        "deflate-bomb-claim",
        F::ZipBomb,
        dsm,
        "data.pkl: 7 KiB of deflate claiming 4 GiB, more than deflate can produce",
        pickle_claiming(&zeros, 0xffff_fffe),
    );
    f.open(
        "deflate-bomb-actual",
        F::ZipBomb,
        dsm,
        "data.pkl claiming 1000 bytes, inflating to 1 MiB",
        pickle_claiming(&zeros, 1000),
    );
    f.open(
        "deflate-short",
        F::SizeMismatch,
        dsm,
        "data.pkl claiming 2000 bytes, inflating to 1000",
        pickle_claiming(&zeros[..1000], 2000),
    );
    let mut v = simple();
    v[0].method = 8;
    v[0].data = b"\xff\xff not deflate at all".to_vec();
    f.open(
        "deflate-garbage",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "data.pkl marked deflated, holding garbage",
        bytes(&v),
    );
    let mut v = simple();
    let mut e = Entry::deflated("archive/data/0", &vec![0u8; 1 << 20]);
    e.size = 0xffff_fffe;
    v[2] = e;
    f.verify("deflate-bomb-storage", F::ZipBomb, dsm, "a storage record of 7 KiB of deflate claiming 4 GiB", bytes(&v));
}

fn storages(f: &mut Folder) {
    let one = |shape: &[u64], stride: &[u64], offset: u64, numel: u64, storage: &[u8]| {
        let pkl = state_dict(&[T { name: "w", storage: "FloatStorage", key: "0", numel, offset, shape, stride }]);
        bytes(&torch_save(&pkl, &[("0", storage)]))
    };
    let s = floats(6);
    let oob = Rule::OutOfBounds;
    f.verify(
        "view-past-storage",
        F::PastEnd,
        oob,
        "a [2, 3] view at offset 4 of a 6-element storage",
        one(&[2, 3], &[3, 1], 4, 6, &s),
    );
    f.verify(
        "view-strides-past-storage",
        F::PastEnd,
        oob,
        "a [2^30, 2^30] view with strides [2^30, 1]",
        one(&[1 << 30, 1 << 30], &[1 << 30, 1], 0, 6, &s),
    );
    f.verify(
        "view-extent-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "a view whose last element lies past 2^64: strides [2^62, 2^62]",
        one(&[8, 8], &[1 << 62, 1 << 62], 0, 6, &s),
    );
    f.verify(
        "view-shape-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "shape [2^40, 2^40]",
        one(&[1 << 40, 1 << 40], &[0, 0], 0, 6, &s),
    );
    f.verify(
        "view-expands-past-limit",
        F::Overflow,
        Rule::ExpansionTooLarge,
        "a stride-0 view of one float repeated 2^40 times (4 TiB from 4 bytes)",
        one(&[1 << 40], &[0], 0, 1, &floats(1)),
    );
    f.verify(
        "storage-shorter-than-pickle",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "a storage record of 24 bytes for a 600-element storage",
        one(&[6], &[1], 0, 600, &s),
    );
    let pkl = one_float_tensor(&[2, 3]);
    f.verify(
        "storage-record-missing",
        F::BadField,
        Rule::MissingField,
        "a tensor whose storage record is absent",
        bytes(&torch_save(&pkl, &[])),
    );
}
