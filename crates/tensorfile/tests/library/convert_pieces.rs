//! Large tensors travel in pieces: a compressed `.zt` tensor is decoded a piece at a time,
//! every writer takes pieces, and what is written does not depend on how the data was cut.

use crate::common;

use common::*;
use tensorfile::convert::{ConvertOptions, convert_to_writer};
use tensorfile::formats::{Compression, WriteOptions};
use tensorfile::model::{ByteOrder, ChecksumKind, Chunks, TensorData, TensorInfo};
use tensorfile::source::Bytes;
use tensorfile::{DType, Format, Rule, TensorFile};

/// Bytes of input per zstd frame of a large tensor (the writer's CHUNK).
const CHUNK: usize = 4 << 20;

/// A large bf16 tensor (just over 2 frames), a small one, and the large one again (tied
/// weights: `.ptd` stores identical content once).
fn tensors() -> Vec<(TensorInfo, TensorData)> {
    let large = TensorInfo::dense("large", DType::BFloat16, vec![2 * CHUNK as u64 / 2048 + 3, 1024]);
    let small = TensorInfo::dense("small", DType::Float32, vec![7, 5]);
    let (large_info, large_data) = dense(large, 1);
    let tied = large_info.clone().with_name("tied");
    vec![(large_info, large_data.clone()), dense(small, 2), (tied, large_data)]
}

fn zstd_zt() -> TensorFile {
    let opts = options(Compression::Zstd(1), ChecksumKind::Crc32c, ByteOrder::Little);
    open(write(Format::Zt, &tensors(), &opts))
}

fn bytes_of(t: &TensorData) -> &[u8] {
    t.as_dense().unwrap()
}

#[test]
fn a_compressed_tensor_is_read_in_pieces_of_bounded_size() {
    let file = zstd_zt();
    let want = tensors();
    let pieces: Vec<Bytes> = file.read_chunks(0, true).unwrap().map(Result::unwrap).collect();
    assert_eq!(pieces.len(), 3);
    assert!(pieces.iter().all(|p| p.len() <= 16 << 20));
    assert!(pieces.iter().flat_map(|p| p.iter().copied()).eq(bytes_of(&want[0].1).iter().copied()));
    // Small ones come whole.
    let small: Vec<Bytes> = file.read_chunks(1, true).unwrap().map(Result::unwrap).collect();
    assert_eq!(small.len(), 1);
    assert_eq!(&small[0][..], bytes_of(&want[1].1));
}

#[test]
fn pieces_of_a_corrupt_blob_fail_their_checksum_first() {
    let opts = options(Compression::Zstd(1), ChecksumKind::Crc32c, ByteOrder::Little);
    let mut bytes = write(Format::Zt, &tensors(), &opts);
    bytes[64 + 1000] ^= 0x40; // inside the first blob
    let file = open(bytes);
    let err = file.read_chunks(0, true).err().expect("checksum mismatch");
    assert_eq!(err.rule(), Some(Rule::ChecksumMismatch));
    assert_eq!(err.tensor(), Some("large"));
}

/// A large raw tensor is handed over at once and its checksum checked beside the consumer:
/// the mismatch comes as the item after the piece, so taking every piece (as every writer
/// does) fails, and a conversion of the file fails naming the tensor.
#[test]
fn a_corrupt_raw_blob_fails_after_its_piece() {
    let opts = options(Compression::None, ChecksumKind::Crc32c, ByteOrder::Little);
    let clean = open(write(Format::Zt, &tensors(), &opts));
    let items: Vec<_> = clean.read_chunks(0, true).unwrap().collect();
    assert_eq!(items.len(), 1, "one piece, no error after it");
    let mut bytes = write(Format::Zt, &tensors(), &opts);
    let at = clean.entries()[0].storage().offset() as usize + 5000;
    bytes[at] ^= 0x40;
    let file = open(bytes);
    let items: Vec<_> = file.read_chunks(0, true).unwrap().collect();
    assert_eq!(items.len(), 2);
    assert!(items[0].is_ok());
    let err = items[1].as_ref().unwrap_err();
    assert_eq!((err.rule(), err.tensor()), (Some(Rule::ChecksumMismatch), Some("large")));
    for format in [Format::Safetensors, Format::Zt, Format::Pt, Format::Ptd] {
        let mut out = std::io::Cursor::new(Vec::new());
        let err = convert_to_writer(&file, &mut out, format, &ConvertOptions::default(), &mut |_| {}).unwrap_err();
        assert_eq!((err.rule(), err.tensor()), (Some(Rule::ChecksumMismatch), Some("large")), "{format:?}");
    }
    // Unverified, the bytes come as they are.
    assert_eq!(file.read_chunks(0, false).unwrap().count(), 1);
}

/// Convert `src` into `format` in memory.
fn convert(src: &TensorFile, format: Format, write: WriteOptions) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let options = ConvertOptions { write, ..Default::default() };
    convert_to_writer(src, &mut out, format, &options, &mut |_| {}).unwrap();
    out.into_inner()
}

#[test]
fn a_compressed_zt_converts_into_every_writer_exactly() {
    let src = zstd_zt();
    let want = tensors();
    let targets = [
        (Format::Safetensors, WriteOptions::default()),
        (Format::Pt, WriteOptions::default()),
        (Format::Ptd, WriteOptions::default()),
        (Format::Zt, WriteOptions::default()),
        (Format::Zt, options(Compression::None, ChecksumKind::Crc32c, ByteOrder::Big)),
        (Format::Zt, options(Compression::Zstd(1), ChecksumKind::Crc32c, ByteOrder::Little)),
    ];
    for (format, opts) in targets {
        let back = tensorfile::OpenOptions::new()
            .format(format)
            .open_bytes(Bytes::from_vec(convert(&src, format, opts.clone())))
            .unwrap();
        assert!(back.verify().is_empty(), "{format} {opts:?}: {:?}", back.verify());
        for (info, data) in &want {
            let got = back.read(info.name()).unwrap_or_else(|e| panic!("{format}: {e}"));
            assert!(got.as_dense().unwrap()[..] == bytes_of(data)[..], "{format} {opts:?}: {} differs", info.name());
        }
    }
}

#[test]
fn tied_tensors_streamed_into_a_ptd_share_one_segment() {
    let ptd = convert(&zstd_zt(), Format::Ptd, WriteOptions::default());
    let file = tensorfile::OpenOptions::new().format(Format::Ptd).open_bytes(Bytes::from_vec(ptd)).unwrap();
    let offset = |name: &str| file.entry(name).unwrap().storage().offset();
    assert_eq!(offset("large"), offset("tied"));
    assert_ne!(offset("large"), offset("small"));
}

/// Write `tensors` through `write_chunks`, each cut into pieces of `piece` bytes.
fn write_in_pieces(format: Format, tensors: &[(TensorInfo, TensorData)], opts: &WriteOptions, piece: usize) -> Vec<u8> {
    let plan: Vec<TensorInfo> = tensors.iter().map(|(i, _)| i.clone()).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = format.writer(Box::new(&mut out), &plan, opts).unwrap();
    for (_, data) in tensors {
        let bytes = data.as_dense().unwrap().clone();
        w.write_chunks(&mut || {
            let len = bytes.len() as u64;
            let cuts: Vec<_> =
                (0..len).step_by(piece).map(|start| bytes.slice(start, (len - start).min(piece as u64))).collect();
            Ok(Box::new(cuts.into_iter()) as Chunks<'_>)
        })
        .unwrap();
    }
    w.finish().unwrap();
    out.into_inner()
}

#[test]
fn what_is_written_does_not_depend_on_how_the_data_was_cut() {
    let t = tensors();
    let zstd = options(Compression::Zstd(1), ChecksumKind::Crc32c, ByteOrder::Little);
    let big_endian = options(Compression::None, ChecksumKind::Crc32c, ByteOrder::Big);
    for (format, opts) in [
        (Format::Zt, zstd),
        (Format::Zt, big_endian),
        (Format::Safetensors, WriteOptions::default()),
        (Format::Pt, WriteOptions::default()),
        (Format::Ptd, WriteOptions::default()),
    ] {
        let whole = write(format, &t, &opts);
        for piece in [CHUNK, 3 * CHUNK + 17, 999_999] {
            assert!(write_in_pieces(format, &t, &opts, piece) == whole, "{format} {opts:?} in pieces of {piece}");
        }
    }
}

#[test]
fn pieces_that_do_not_add_up_are_refused() {
    let info = TensorInfo::dense("t", DType::Float32, vec![3 * CHUNK as u64 / 4]);
    for format in [Format::Zt, Format::Safetensors, Format::Pt, Format::Ptd] {
        for compression in [Compression::None, Compression::Zstd(1)] {
            for len in [3 * CHUNK - 4, 3 * CHUNK + 4] {
                let opts = options(compression, ChecksumKind::Crc32c, ByteOrder::Little);
                let mut out = std::io::Cursor::new(Vec::new());
                let mut w = format.writer(Box::new(&mut out), std::slice::from_ref(&info), &opts).unwrap();
                let result = w.write_chunks(&mut || {
                    let pieces =
                        vec![Ok(Bytes::from_vec(vec![1; len / 2])), Ok(Bytes::from_vec(vec![2; len - len / 2]))];
                    Ok(Box::new(pieces.into_iter()) as Chunks<'_>)
                });
                let finished = result.and_then(|()| w.finish());
                assert!(finished.is_err(), "{format} {compression:?}: {len} bytes accepted for {}", 3 * CHUNK);
            }
        }
    }
}

/// An output that cannot be cut back (the default of [`Output::set_len`]).
struct Uncuttable(std::io::Cursor<Vec<u8>>);

impl std::io::Write for Uncuttable {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
impl std::io::Read for Uncuttable {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}
impl std::io::Seek for Uncuttable {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.0.seek(pos)
    }
}
impl tensorfile::formats::Output for Uncuttable {}

/// A `.ptd` writes a large tensor while hashing it and cuts it back off when the content is
/// stored already: into a file, into memory and into an output that cannot be cut (which
/// hashes first), the bytes are the same, and the tied tensor's copy is not left behind.
#[test]
fn a_ptd_is_the_same_whether_large_tensors_are_written_ahead_or_hashed_first() {
    let dir = tempfile::tempdir().unwrap();
    let st = dir.path().join("tied.safetensors");
    std::fs::write(&st, write(Format::Safetensors, &tensors(), &WriteOptions::default())).unwrap();
    let src = TensorFile::open(&st).unwrap();
    let in_memory = convert(&src, Format::Ptd, WriteOptions::default());
    let mut uncut = Uncuttable(std::io::Cursor::new(Vec::new()));
    convert_to_writer(&src, &mut uncut, Format::Ptd, &ConvertOptions::default(), &mut |_| {}).unwrap();
    assert!(uncut.0.into_inner() == in_memory, "hashed first and written ahead differ");
    let dest = dir.path().join("tied.ptd");
    tensorfile::convert::convert_file(&src, &dest, &ConvertOptions::default(), &mut |_| {}).unwrap();
    let on_disk = std::fs::read(&dest).unwrap();
    assert!(on_disk == in_memory, "the file differs from the bytes written in memory");
    let large = bytes_of(&tensors()[0].1).len();
    assert!(on_disk.len() < 2 * large, "the tied copy is stored once: {} bytes", on_disk.len());
    let back = TensorFile::open(&dest).unwrap();
    assert!(back.verify().is_empty(), "{:?}", back.verify());
    for (info, data) in &tensors() {
        assert!(back.read(info.name()).unwrap().as_dense().unwrap()[..] == bytes_of(data)[..], "{}", info.name());
    }
}
