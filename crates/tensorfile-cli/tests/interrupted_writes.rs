//! Writes never damage what exists: a conversion killed mid-way or stopped by a full disk
//! leaves the old destination as it was, and a file can be rewritten while it is read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tensorfile::io::Bytes;
use tensorfile::model::{ChecksumKind, TensorInfo};
use tensorfile::{Compression, DType, Format, TensorData, TensorFile, WriteOptions};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_tensorfile")
}

/// A safetensors file of `tensors` float32 tensors of `len` values each (varied values, so
/// zstd has work to do).
fn source(path: &Path, tensors: usize, len: u64) {
    let data: Vec<(TensorInfo, TensorData)> = (0..tensors)
        .map(|t| {
            let bytes: Vec<u8> =
                (0..len).flat_map(|i| ((i as f32 * 0.37 + t as f32).sin() * 1000.0).to_le_bytes()).collect();
            (TensorInfo::dense(format!("t{t}"), DType::Float32, vec![len]), TensorData::dense(Bytes::from_vec(bytes)))
        })
        .collect();
    let bytes = tensorfile::formats::write_to_vec(Format::Safetensors, &data, &WriteOptions::default()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Files of `dir` whose names start with `.{name}.` (the temporary files of writes to `name`).
fn temporaries(dir: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!(".{name}.");
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect()
}

#[test]
fn a_conversion_killed_mid_way_leaves_the_old_destination() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dest) = (dir.path().join("src.safetensors"), dir.path().join("dest.zt"));
    source(&src, 32, 256 << 10); // 32 MiB, compressed slowly at the highest level
    std::fs::write(&dest, b"the old destination").unwrap();
    let mut child = Command::new(bin())
        .args(["convert".as_ref(), src.as_os_str(), dest.as_os_str(), "--compress".as_ref(), "zstd:19".as_ref()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it a moment after its temporary file appears.
    let deadline = Instant::now() + Duration::from_secs(60);
    while temporaries(dir.path(), "dest.zt").is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "the conversion ended before it could be interrupted");
        assert!(Instant::now() < deadline, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "the conversion ended before it could be interrupted");
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success(), "the conversion was killed");
    assert_eq!(std::fs::read(&dest).unwrap(), b"the old destination");
}

#[test]
#[cfg(unix)]
fn a_conversion_stopped_by_a_full_disk_leaves_the_old_destination_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dest) = (dir.path().join("src.safetensors"), dir.path().join("dest.zt"));
    source(&src, 8, 64 << 10); // 2 MiB
    std::fs::write(&dest, b"the old destination").unwrap();
    // A file size limit of 512 KiB: writing past it fails (EFBIG, with SIGXFSZ ignored) as a
    // full disk would.
    let script = format!("ulimit -f 512 && trap '' XFSZ && exec \"{}\" convert \"$0\" \"$1\"", bin());
    let out = Command::new("sh").args(["-c", &script]).arg(&src).arg(&dest).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("dest.zt"), "the error names the destination: {stderr}");
    assert_eq!(std::fs::read(&dest).unwrap(), b"the old destination");
    assert_eq!(temporaries(dir.path(), "dest.zt"), Vec::<PathBuf>::new());
}

#[test]
fn a_file_can_be_rewritten_while_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.zt");
    source(&dir.path().join("src.safetensors"), 4, 1000);
    let src = TensorFile::open(dir.path().join("src.safetensors")).unwrap();
    let options = |c| tensorfile::convert::ConvertOptions {
        write: WriteOptions { compression: c, checksum: ChecksumKind::Crc32c, ..WriteOptions::default() },
        ..Default::default()
    };
    tensorfile::convert::convert_file(&src, &path, &options(Compression::None), &mut |_| {}).unwrap();
    // Open (and map) it, then compress it into itself, in this process and with the binary.
    let open = TensorFile::open(&path).unwrap();
    let before = open.read("t2").unwrap().as_dense().unwrap().to_vec();
    tensorfile::convert::convert_file(&open, &path, &options(Compression::Zstd(3)), &mut |_| {}).unwrap();
    // The reader still sees the old file's bytes, and the new file reads the same tensors.
    assert_eq!(open.read("t2").unwrap().as_dense().unwrap().to_vec(), before);
    assert!(open.verify().is_empty());
    let rewritten = TensorFile::open(&path).unwrap();
    assert!(rewritten.entries().iter().all(|e| e.storage().encoding() == tensorfile::model::Encoding::Zstd));
    assert_eq!(rewritten.read("t2").unwrap().as_dense().unwrap().to_vec(), before);
    let status = Command::new(bin()).args(["convert".as_ref(), path.as_os_str(), path.as_os_str()]).status().unwrap();
    assert!(status.success());
    let again = TensorFile::open(&path).unwrap();
    assert!(again.verify().is_empty());
    assert_eq!(again.read("t2").unwrap().as_dense().unwrap().to_vec(), before);
}
