use super::*;
use crate::error::Rule;
use crate::source::{Bytes, SPECULATIVE_READ, Source};

/// An archive like PyTorch's: small records around one large stored entry, and `extra`
/// more small entries (to grow the central directory).
fn archive(big: usize, extra: usize) -> Vec<u8> {
    let mut w = ZipWriter::new(Vec::new(), "archive");
    w.add("data.pkl", b"a small record").unwrap();
    let data: Vec<u8> = (0..big).map(|i| (i % 251) as u8).collect();
    w.add("data/0", &data).unwrap();
    w.add("byteorder", b"little").unwrap();
    for i in 0..extra {
        w.add(&format!("data/a_fairly_long_record_name_to_grow_the_directory_{i}"), &[i as u8]).unwrap();
    }
    w.finish().unwrap()
}

/// The central directory's size, from the zip64 end record PyTorch's writer always
/// writes (56 + 20 + 22 bytes at the end).
fn directory_size(b: &[u8]) -> u64 {
    crate::cursor::u64_le_at(b, b.len() - 98 + 40, "directory size").unwrap()
}

fn headers(a: &Archive) -> u64 {
    a.entries().iter().map(|e| 30 + e.name.len() as u64).sum()
}

#[test]
fn opening_fetches_the_end_the_directory_and_local_headers_only() {
    let bytes = Bytes::from_vec(archive(4 << 20, 3));
    let src = Source::counted_exact(bytes.clone());
    let a = Archive::open(src.clone()).unwrap();
    let opened = src.bytes_fetched();
    // The directory is inside the tail read; only headers before it are fetched.
    assert!(opened <= SPECULATIVE_READ + headers(&a), "{opened}");
    assert!(opened < bytes.len() as u64 / 50);
    let local = Archive::open(bytes.clone()).unwrap();
    for (e, l) in a.entries().iter().zip(local.entries()) {
        assert_eq!((&e.name, e.data_offset, e.size), (&l.name, l.data_offset, l.size));
        let before = src.bytes_fetched();
        let got = a.read(e, true).unwrap();
        assert_eq!(src.bytes_fetched() - before, e.compressed_size, "{}", e.name);
        let want = local.read(l, true).unwrap();
        assert_eq!(got, want);
        // Local: a slice of the map, no copy.
        assert!(want.shares_owner(&bytes));
    }
    assert!(a.bytes().is_err());
    assert_eq!(&*local.bytes().unwrap(), &*bytes);
}

#[test]
fn names_come_from_the_tail_and_the_directory_alone() {
    for extra in [0, 2000] {
        let bytes = Bytes::from_vec(archive(1 << 20, extra));
        let dir = directory_size(&bytes);
        let src = Source::counted_exact(bytes.clone());
        let names = entry_names_in(&src).unwrap();
        assert_eq!(names, entry_names(&bytes).unwrap());
        assert_eq!(names.len(), 3 + extra);
        // With a directory larger than the tail read, the directory is fetched whole
        // besides it.
        let want = if dir + 98 <= SPECULATIVE_READ { SPECULATIVE_READ } else { SPECULATIVE_READ + dir };
        assert_eq!(src.bytes_fetched(), want, "{extra} more entries, directory of {dir} bytes");
        // Opening adds the local headers not in the tail read.
        let src = Source::counted_exact(bytes.clone());
        let a = Archive::open(src.clone()).unwrap();
        assert!(src.bytes_fetched() <= want + headers(&a));
    }
}

#[test]
fn an_end_record_behind_a_long_comment_is_found() {
    let mut b = archive(200_000, 0);
    let n = b.len();
    b[n - 2..].copy_from_slice(&60_000u16.to_le_bytes());
    b.extend(std::iter::repeat_n(b'#', 60_000));
    let src = Source::counted_exact(Bytes::from_vec(b.clone()));
    let a = Archive::open(src.clone()).unwrap();
    assert_eq!(a.entries().len(), 3);
    assert_eq!(&*a.read(a.record("byteorder").unwrap(), true).unwrap(), b"little");
    assert_eq!(entry_names(&b).unwrap().len(), 3);
}

#[test]
fn a_stored_entry_is_an_archive_read_in_place() {
    let inner = archive(100_000, 0);
    let mut w = ZipWriter::new(Vec::new(), "outer");
    w.add("before", &[1; 1000]).unwrap();
    w.add("inner.pt", &inner).unwrap();
    let bytes = Bytes::from_vec(w.finish().unwrap());
    let src = Source::counted_exact(bytes.clone());
    let outer = Archive::open(src.clone()).unwrap();
    let region = outer.entry_region(outer.record("inner.pt").unwrap()).unwrap();
    assert_eq!(region.len(), inner.len() as u64);
    let before = src.bytes_fetched();
    let a = Archive::open_region(region).unwrap();
    assert!(src.bytes_fetched() - before <= SPECULATIVE_READ.min(inner.len() as u64) + headers(&a));
    let e = a.record("data/0").unwrap();
    let before = src.bytes_fetched();
    let got = a.read(e, true).unwrap();
    assert_eq!(src.bytes_fetched() - before, 100_000);
    let local = Archive::open(Bytes::from_vec(inner)).unwrap();
    assert_eq!(got, local.read(local.record("data/0").unwrap(), true).unwrap());
}

#[test]
fn hostile_offsets_are_refused_not_fetched() {
    let good = archive(1000, 0);
    let n = good.len();
    // Every truncation is an error (no panic, no fetch past the end).
    for len in 0..n {
        assert!(Archive::open(Source::counted_exact(Bytes::from_vec(good[..len].to_vec()))).is_err());
    }
    // A zip64 directory claiming an enormous size is not fetched whole.
    let mut b = good.clone();
    let at = n - 98;
    b[at + 40..at + 48].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(
        Archive::open(Source::counted_exact(Bytes::from_vec(b))).err().and_then(|e| e.rule()),
        Some(Rule::OutOfBounds)
    );
}
