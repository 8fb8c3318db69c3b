//! Hostile zip archives and pickles: bombs, overlapping entries, bad offsets, forbidden
//! globals, exploding memos. Each is refused with its own rule, quickly and without
//! allocating what it claims.

use std::io::Write;

use tensorfile::internals::zip::{Archive, ZipWriter, is_safe_name};
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule};

/// A torch.save-shaped zip with this `data.pkl` and storage records.
fn torch_save(pkl: &[u8], storages: &[(&str, &[u8])]) -> Vec<u8> {
    let mut z = ZipWriter::new(Vec::new(), "archive");
    z.add("data.pkl", pkl).unwrap();
    z.add("byteorder", b"little").unwrap();
    for (k, v) in storages {
        z.add(&format!("data/{k}"), v).unwrap();
    }
    z.finish().unwrap()
}

fn open_rule(bytes: Vec<u8>, format: Format) -> Rule {
    match tensorfile::OpenOptions::new().format(format).open_bytes(Bytes::from_vec(bytes)) {
        Ok(_) => panic!("hostile file accepted"),
        Err(e) => e.rule().unwrap_or_else(|| panic!("no rule: {e}")),
    }
}

/// `{"w": <float32 tensor of `shape`/`stride` at `offset` in storage "0" of `numel`>}`.
fn tensor_pickle(numel: u32, offset: u32, shape: &[u32], stride: &[u32]) -> Vec<u8> {
    let mut p = b"\x80\x02}(X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu".to_vec();
    let int = |p: &mut Vec<u8>, v: u32| {
        p.push(b'J');
        p.extend_from_slice(&v.to_le_bytes());
    };
    int(&mut p, numel);
    p.extend_from_slice(b"tQ");
    int(&mut p, offset);
    p.push(b'(');
    shape.iter().for_each(|&d| int(&mut p, d));
    p.push(b't');
    p.push(b'(');
    stride.iter().for_each(|&d| int(&mut p, d));
    p.push(b't');
    p.extend_from_slice(b"\x89ccollections\nOrderedDict\n)RtRu.");
    p
}

#[test]
fn a_valid_hand_made_file_reads() {
    let storage: Vec<u8> = (0..6u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let f = tensorfile::OpenOptions::new()
        .open_bytes(Bytes::from_vec(torch_save(&tensor_pickle(6, 0, &[2, 3], &[3, 1]), &[("0", &storage)])))
        .unwrap();
    assert_eq!(f.format(), Format::Pt);
    assert_eq!(f.read("w").unwrap().as_dense().unwrap().to_vec(), storage);
}

#[test]
fn views_outside_their_storage() {
    let storage = vec![0u8; 24];
    let past = torch_save(&tensor_pickle(6, 4, &[2, 3], &[3, 1]), &[("0", &storage)]);
    let f = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(past)).unwrap();
    assert_eq!(f.unreadable()[0].error().rule(), Some(Rule::OutOfBounds));
    let huge = torch_save(&tensor_pickle(6, 0, &[1 << 30, 1 << 30], &[1 << 30, 1]), &[("0", &storage)]);
    let f = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(huge)).unwrap();
    assert_eq!(f.unreadable()[0].error().rule(), Some(Rule::OutOfBounds));
    let short = torch_save(&tensor_pickle(600, 0, &[6], &[1]), &[("0", &storage)]);
    let f = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(short)).unwrap();
    assert_eq!(
        f.unreadable()[0].error().rule(),
        Some(Rule::SizeMismatch),
        "storage record shorter than its pickle says"
    );
}

#[test]
fn a_pickle_calling_os_system_is_refused_by_name() {
    let pkl = b"\x80\x02cos\nsystem\nX\x0e\x00\x00\x00touch /tmp/pwn\x85R.";
    let err = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(torch_save(pkl, &[]))).err().unwrap();
    assert_eq!(err.rule(), Some(Rule::ForbiddenGlobal));
    assert!(err.to_string().contains("os.system"), "{err}");
    for (module, name) in
        [("builtins", "eval"), ("subprocess", "Popen"), ("torch", "load"), ("numpy.core.multiarray", "_reconstruct")]
    {
        let pkl = format!("\x00c{module}\n{name}\n.").into_bytes();
        assert_eq!(open_rule(torch_save(&pkl[1..], &[]), Format::Pt), Rule::ForbiddenGlobal, "{module}.{name}");
    }
}

#[test]
fn memo_and_stack_bombs_are_refused() {
    let mut pkl = b"\x80\x02N".to_vec();
    for i in 0..(1u32 << 21) {
        pkl.push(b'r');
        pkl.extend_from_slice(&i.to_le_bytes());
    }
    pkl.push(b'.');
    let err = tensorfile::OpenOptions::new()
        .format(Format::Pt)
        .open_bytes(Bytes::from_vec(torch_save(&pkl, &[])))
        .err()
        .unwrap();
    assert_eq!(err.rule(), Some(Rule::TooManyEntries), "{err}");
    // The work done: refused at the first put past the limit, after the protocol, the NONE
    // and MAX_PICKLE_MEMO + 1 puts of 5 bytes, not after all 2^21 of them.
    let read = 3 + 5 * (tensorfile::limits::MAX_PICKLE_MEMO + 1);
    assert!(err.to_string().contains(&format!("after {read} bytes")), "{err}");
    // A list that contains itself four times: flattening it must stop, not recurse forever
    // or expand 4^n items.
    let cyclic = b"\x80\x02]q\x00(h\x00h\x00h\x00h\x00e.".to_vec();
    let r = tensorfile::OpenOptions::new().format(Format::Pt).open_bytes(Bytes::from_vec(torch_save(&cyclic, &[])));
    assert!(
        matches!(r.as_ref().err().and_then(|e| e.rule()), Some(Rule::TooManyEntries | Rule::TooDeep)),
        "{:?}",
        r.err()
    );
}

/// A zip with one deflated entry claiming `claim` bytes.
fn deflated(content: &[u8], claim: u64) -> Vec<u8> {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(content).unwrap();
    let data = enc.finish().unwrap();
    let name = b"archive/data.pkl";
    let crc = crc32fast::hash(content);
    let mut z = Vec::new();
    let local = |z: &mut Vec<u8>| {
        z.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00\x00\x00");
        z.extend_from_slice(&crc.to_le_bytes());
        z.extend_from_slice(&(data.len() as u32).to_le_bytes());
        z.extend_from_slice(&(claim.min(0xFFFF_FFFE) as u32).to_le_bytes());
        z.extend_from_slice(&(name.len() as u16).to_le_bytes());
        z.extend_from_slice(&0u16.to_le_bytes());
        z.extend_from_slice(name);
    };
    local(&mut z);
    z.extend_from_slice(&data);
    let cd = z.len();
    z.extend_from_slice(b"PK\x01\x02\x14\x00\x14\x00\x00\x00\x08\x00\x00\x00\x00\x00");
    z.extend_from_slice(&crc.to_le_bytes());
    z.extend_from_slice(&(data.len() as u32).to_le_bytes());
    z.extend_from_slice(&(claim.min(0xFFFF_FFFE) as u32).to_le_bytes());
    z.extend_from_slice(&(name.len() as u16).to_le_bytes());
    z.extend_from_slice(&[0; 12]);
    z.extend_from_slice(&0u32.to_le_bytes());
    z.extend_from_slice(name);
    let cd_len = z.len() - cd;
    z.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00");
    z.extend_from_slice(&(cd_len as u32).to_le_bytes());
    z.extend_from_slice(&(cd as u32).to_le_bytes());
    z.extend_from_slice(&0u16.to_le_bytes());
    z
}

#[test]
fn deflate_bombs_are_refused_before_allocating() {
    let zeros = vec![0u8; 1 << 20];
    let a = Archive::open(Bytes::from_vec(deflated(&zeros, 0xFFFF_FFFE))).unwrap();
    let e = &a.entries()[0];
    assert_eq!(a.read(e, true).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
    // Claiming less than it inflates to.
    let a = Archive::open(Bytes::from_vec(deflated(&zeros, 1000))).unwrap();
    assert_eq!(a.read(&a.entries()[0], true).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
    // The honest claim reads, CRC checked.
    let a = Archive::open(Bytes::from_vec(deflated(&zeros, 1 << 20))).unwrap();
    assert_eq!(a.read(&a.entries()[0], true).unwrap().len(), 1 << 20);
}

#[test]
fn broken_directories_and_overlaps() {
    let good = torch_save(&tensor_pickle(1, 0, &[1], &[1]), &[("0", &[0; 4])]);
    for len in 0..good.len() {
        let _ = Archive::open(Bytes::from_vec(good[..len].to_vec()));
    }
    assert_eq!(
        Archive::open(Bytes::from_vec(b"not a zip at all, just text...".to_vec())).err().unwrap().rule(),
        Some(Rule::BadMagic)
    );
    // The central directory's entries point past the end / at each other.
    let eocd = good.len() - 22;
    // zip64 record offset past the end.
    let mut b = good.clone();
    let loc = eocd - 20;
    b[loc + 8..loc + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(Archive::open(Bytes::from_vec(b)).is_err());
    // Point the second entry's local header at the first's: overlapping entries.
    let mut b = good.clone();
    let zip64 = u64::from_le_bytes(good[loc + 8..loc + 16].try_into().unwrap()) as usize;
    let cd_offset = u64::from_le_bytes(good[zip64 + 48..zip64 + 56].try_into().unwrap()) as usize;
    let first_len = 46
        + u16::from_le_bytes(good[cd_offset + 28..cd_offset + 30].try_into().unwrap()) as usize
        + u16::from_le_bytes(good[cd_offset + 30..cd_offset + 32].try_into().unwrap()) as usize;
    let second = cd_offset + first_len;
    let first_offset = good[cd_offset + 42..cd_offset + 46].to_vec();
    b[second + 42..second + 46].copy_from_slice(&first_offset);
    let r = Archive::open(Bytes::from_vec(b));
    assert!(matches!(r.err().and_then(|e| e.rule()), Some(Rule::BadField | Rule::Overlap)));
}

#[test]
fn entry_names_that_escape_are_flagged() {
    assert!(!is_safe_name("../../etc/passwd"));
    assert!(!is_safe_name("/abs/path"));
    assert!(is_safe_name("archive/data/0"));
}

/// An AOTInductor package whose `weights_config.json` is `config`, with one on-disk weight
/// record `weight_0` holding a float32 storage of 6 elements.
fn aoti_package(config: &str) -> Vec<u8> {
    let storage: Vec<u8> = (0..6u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let weight = torch_save(&tensor_pickle(6, 0, &[6], &[1]), &[("0", &storage)]);
    let mut z = ZipWriter::new(Vec::new(), "pkg");
    z.add("data/aotinductor/model/model.wrapper.so", b"\x7fELF").unwrap();
    z.add("data/aotinductor/model/weights_config.json", config.as_bytes()).unwrap();
    z.add("data/weights/weight_0", &weight).unwrap();
    z.add("byteorder", b"little").unwrap();
    z.finish().unwrap()
}

#[test]
fn aoti_weight_configs_pointing_outside_their_storage_are_unreadable_entries() {
    let good = tensorfile::OpenOptions::new()
        .open_bytes(Bytes::from_vec(aoti_package(r#"{"w": ["weight_0", [2, 2], [1, 2], 1]}"#)))
        .unwrap();
    let bytes = good.read("w").unwrap().as_dense().unwrap().to_vec();
    let floats: Vec<f32> = bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(floats, [1.0, 3.0, 2.0, 4.0], "as_strided([2, 2], [1, 2], 1) of 0..6");

    for (config, rule) in [
        (r#"{"w": ["weight_0", [2, 4], [4, 1], 0]}"#, Rule::OutOfBounds),
        (r#"{"w": ["weight_0", [1], [1], 18446744073709551615]}"#, Rule::ShapeOverflow),
        (r#"{"w": ["weight_0", [2], [1, 1], 0]}"#, Rule::BadField),
        (r#"{"w": ["../../etc/passwd", [1], [1], 0]}"#, Rule::BadField),
        (r#"{"w": ["weight_9", [1], [1], 0]}"#, Rule::MissingField),
        (r#"{"w": "weight_0"}"#, Rule::BadField),
    ] {
        let f = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(aoti_package(config))).unwrap();
        assert!(f.entries().is_empty(), "{config}");
        let u = &f.unreadable()[0];
        assert_eq!((u.name(), u.error().rule()), ("w", Some(rule)), "{config}: {}", u.error());
    }
    let broken = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(aoti_package("[1, 2")));
    assert_eq!(broken.err().and_then(|e| e.rule()), Some(Rule::BadJson));
}
