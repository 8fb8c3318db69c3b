//! One timed operation on one file, for `scripts/bench`: tensorfile or a Rust peer (the
//! safetensors crate, the zTensor 0.1 reference crate `ztensor =0.1.0`, the zTensor 2 crate
//! `ztensor =2.1.1`, a bare memory map).
//! Prints one line of JSON: `{"seconds": ..., "bytes": ..., "tensors": ..., "sum": ...}`,
//! where `seconds` covers the operation alone (not the process start).
//!
//! Usage: bench_op TOOL OP FILE [OUT] [OPTION]
//!   tensorfile  open | list | read | load (read, a file that is not cached read whole first) | read-one (the largest tensor up to 64 MiB) | write-zt | write-zt-zstd | write-zt-zstd-1 |
//!               write-zt2 | convert | convert-zstd | convert-unchecked (OUT for writes and conversions; its
//!               extension picks the format; -zstd: compressed, for .zt; -unchecked: no checksum written or checked; write-zt2: zTensor 2, checksums not checked while reading) | zstd | zstd-1
//!               (compress into a .zt that goes nowhere: the CPU work alone; -1: one thread)
//!               | dequantize (FILE NAME THREADS [reuse]: tensor NAME decoded to float32 on THREADS
//!               threads, 0 for one per core; only the decoding is timed, its stored bytes read
//!               before; reuse: the second of two decodings, into memory the first used)
//!               | quantize (FILE TYPE THREADS: the float32 tensor `rows` of FILE, a 2-D
//!               safetensors tensor, quantized into ggml type TYPE on THREADS threads; only the
//!               quantizing is timed, the values read and converted before)
//!   safetensors open | read
//!   ztensor     open | read
//!   ztensor2    open | read | write (OUT from FILE, a .safetensors or a zTensor 2 .zt, in
//!                                    canonical form, published as the crate publishes)
//!   mmap        read              (sum every byte of the file: the warm-read limit)
//!   write       plain             (write_all of FILE's tensor bytes to OUT: the write limit)
//!   dd          direct            (dd iflag=direct bs=64M of FILE: the disk's sequential read)
//!   cp          sync              (coreutils `cp FILE OUT`, then OUT synced: the copy limit)
//!   curl        read | read-mem   (FILE a URL: `curl` fetching it whole into /dev/null, or
//!                                  into memory: a file in /dev/shm, removed after)
//!
//! FILE may be a URL for tensorfile's ops (a remote file read by range).
//!
//! `read` touches every byte (a wrapping sum of 8-byte words), so lazy mapping is not free;
//! of a quantized tensor, every byte of its stored parts. `list` and `open` read every
//! tensor's name, dtype, layout and shape.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use tensorfile::convert::{ConvertOptions, convert_file, convert_to_writer};
use tensorfile::formats::{Compression, Format, WriteOptions};
use tensorfile::model::{ChecksumKind, DType};
use tensorfile::output::AtomicFile;
use tensorfile::source::Bytes;
use tensorfile::{Access, TensorFile};

/// The sum every reader computes over the bytes it reads.
fn sum(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut total = 0u64;
    for w in &mut words {
        total = total.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()));
    }
    words.remainder().iter().fold(total, |t, &b| t.wrapping_add(u64::from(b)))
}

/// An output that keeps nothing: where bytes go when only producing them is measured.
struct Discard(u64);

impl tensorfile::formats::Output for Discard {}

impl Write for Discard {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Seek for Discard {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        if let std::io::SeekFrom::Start(p) = pos {
            self.0 = p;
        }
        Ok(self.0)
    }
}

impl std::io::Read for Discard {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("a discarding output keeps nothing to read back"))
    }
}

struct Outcome {
    bytes: u64,
    tensors: usize,
    sum: u64,
}

fn map(path: &Path) -> Bytes {
    Bytes::map_file(path).expect("map")
}

fn tensorfile_op(op: &str, path: &Path, out: Option<&Path>) -> Outcome {
    // load: every tensor into memory as a loader does, a file that is not cached read whole
    // with direct I/O first.
    let access = if op == "load" { Access::ReadWholeIfCold } else { Access::Map };
    let file = tensorfile::OpenOptions::new().access(access).open(path).expect("open");
    let tensors = file.entries().len();
    match op {
        "open" | "list" => {
            let listed = file.entries().iter().map(|e| {
                let info = e.info();
                let layout = info.layout().describe().len() + info.dtype().name().len();
                (info.name().len() + layout + info.shape().len()) as u64
            });
            Outcome { bytes: 0, tensors, sum: listed.sum() }
        }
        "read" | "load" => {
            let (mut bytes, mut total) = (0, 0u64);
            let all: Vec<usize> = (0..tensors).collect();
            file.read_each(&all, false, &mut |_, data| {
                for part in data?.parts() {
                    bytes += part.bytes().len() as u64;
                    total = total.wrapping_add(sum(part.bytes()));
                }
                Ok(())
            })
            .expect("read");
            Outcome { bytes, tensors, sum: total }
        }
        "read-one" => {
            let sizes = file.entries().iter().map(|e| e.nbytes());
            let one = sizes.enumerate().filter(|(_, n)| *n <= 64 << 20).max_by_key(|(_, n)| *n).expect("a tensor").0;
            let data = file.read_index(one).expect("read");
            let b = data.as_dense().expect("dense");
            Outcome { bytes: b.len() as u64, tensors: 1, sum: sum(b) }
        }
        "write-zt" | "write-zt-zstd" | "write-zt-zstd-1" | "zstd" | "zstd-1" => {
            let compression = if op == "write-zt" { Compression::None } else { Compression::Zstd(3) };
            let write = WriteOptions { compression, checksum: ChecksumKind::None, ..WriteOptions::default() };
            let options = ConvertOptions { write, ..ConvertOptions::default() };
            let run = || {
                if op.starts_with("zstd") {
                    // Compression alone: the .zt goes to a sink, no disk in the way.
                    let mut sink = Discard(0);
                    convert_to_writer(&file, &mut sink, Format::Zt, &options, &mut |_| {}).expect("write");
                    return;
                }
                let mut f = AtomicFile::create(out.expect("OUT")).expect("create");
                {
                    let mut w = f.writer();
                    convert_to_writer(&file, &mut w, Format::Zt, &options, &mut |_| {}).expect("write");
                    w.flush().expect("flush");
                }
                f.commit().expect("commit");
            };
            if op.ends_with("-1") {
                rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool").install(run);
            } else {
                run();
            }
            Outcome { bytes: file.entries().iter().map(|e| e.nbytes()).sum(), tensors, sum: 0 }
        }
        "write-zt2" => {
            let options = ConvertOptions { verify: false, format: Some(Format::Zt2), ..ConvertOptions::default() };
            let report = convert_file(&file, out.expect("OUT"), &options, &mut |_| {}).expect("convert");
            Outcome { bytes: report.bytes, tensors: report.tensors, sum: 0 }
        }
        "convert" | "convert-zstd" | "convert-unchecked" => {
            let compression = if op == "convert-zstd" { Compression::Zstd(3) } else { Compression::None };
            // -unchecked: no checksum written (zTensor) nor checked while reading.
            let unchecked = op == "convert-unchecked";
            let checksum = if unchecked { ChecksumKind::None } else { WriteOptions::default().checksum };
            let options = ConvertOptions {
                write: WriteOptions { compression, checksum, ..WriteOptions::default() },
                verify: !unchecked,
                ..ConvertOptions::default()
            };
            let report = convert_file(&file, out.expect("OUT"), &options, &mut |_| {}).expect("convert");
            Outcome { bytes: report.bytes, tensors: report.tensors, sum: 0 }
        }
        other => panic!("unknown tensorfile op {other}"),
    }
}

fn safetensors_op(op: &str, path: &Path) -> Outcome {
    let m = map(path);
    let st = safetensors::SafeTensors::deserialize(&m).expect("deserialize");
    let names = st.names();
    match op {
        "open" => Outcome { bytes: 0, tensors: names.len(), sum: names.iter().map(|n| n.len() as u64).sum() },
        "read" => {
            let (mut bytes, mut total) = (0, 0u64);
            for n in &names {
                let data = st.tensor(n).expect("tensor").data();
                bytes += data.len() as u64;
                total = total.wrapping_add(sum(data));
            }
            Outcome { bytes, tensors: names.len(), sum: total }
        }
        other => panic!("unknown safetensors op {other}"),
    }
}

fn ztensor_op(op: &str, path: &Path) -> Outcome {
    let mut reader = ztensor::ZTensorReader::open(path).expect("open");
    let names: Vec<String> = reader.list_tensors().iter().map(|t| t.name.clone()).collect();
    match op {
        "open" => Outcome { bytes: 0, tensors: names.len(), sum: names.iter().map(|n| n.len() as u64).sum() },
        "read" => {
            let (mut bytes, mut total) = (0, 0u64);
            for n in &names {
                let data = reader.read_raw_tensor_data_by_name(n).expect("read");
                bytes += data.len() as u64;
                total = total.wrapping_add(sum(&data));
            }
            Outcome { bytes, tensors: names.len(), sum: total }
        }
        other => panic!("unknown ztensor op {other}"),
    }
}

/// `name` of `path` decoded to float32 on `threads` threads (0: one per core), timed alone.
/// With `reuse`, decoded once untimed first, so that the timed decoding writes into memory
/// the allocator hands back (when it keeps freed memory: see `scripts/benchlib/quant.py`)
/// rather than into fresh pages: the kernels without the page faults.
fn dequantize_op(path: &Path, name: &str, threads: usize, reuse: bool) -> (f64, Outcome) {
    let file = TensorFile::open(path).expect("open");
    let index = file.index_of(name).expect("no such tensor");
    let shape = file.entries()[index].info().shape().to_vec();
    let data = file.read_index(index).expect("read");
    // The stored bytes paged in before the clock starts: only decoding is timed.
    let stored = data.parts().iter().fold(0u64, |t, p| t.wrapping_add(sum(p.bytes())));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    // Both decodings on one thread of the pool, which allocates their output from one arena.
    let (seconds, values) = pool.install(|| {
        if reuse {
            drop(data.to_dense(DType::Float32, &shape).expect("dequantize"));
        }
        let start = Instant::now();
        let values = data.to_dense(DType::Float32, &shape).expect("dequantize");
        (start.elapsed().as_secs_f64(), values)
    });
    (seconds, Outcome { bytes: values.len() as u64, tensors: 1, sum: stored.wrapping_add(sum(&values)) })
}

/// The float32 tensor `rows` of `path` quantized into `type_name` on `threads` threads: the
/// kernels alone, the values in memory before the clock starts.
fn quantize_op(path: &Path, type_name: &str, threads: usize) -> (f64, Outcome) {
    let t = tensorfile::model::quant::GgmlType::from_name(type_name).expect("no such ggml type");
    let file = TensorFile::open(path).expect("open");
    let index = file.index_of("rows").expect("a tensor named rows");
    let shape = file.entries()[index].info().shape().to_vec();
    let n_per_row = *shape.last().expect("2-D") as usize;
    let bytes = file.read_index(index).expect("read").as_dense().expect("dense").to_vec();
    let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    let (seconds, blocks) = pool.install(|| {
        let start = Instant::now();
        let blocks = t.quantize(&values, n_per_row, None).expect("quantize");
        (start.elapsed().as_secs_f64(), blocks)
    });
    (seconds, Outcome { bytes: bytes.len() as u64, tensors: 1, sum: sum(&blocks) })
}

fn ztensor2_op(op: &str, path: &Path, out: Option<&Path>) -> Outcome {
    if op == "write" {
        return ztensor2_write(path, out.expect("OUT"));
    }
    let src = ztensor2::Source::open(path).expect("open");
    match op {
        "open" => {
            let listed = src.tensors().map(|t| (t.name().len() + t.layout().len() + t.shape().len()) as u64);
            Outcome { bytes: 0, tensors: src.len(), sum: listed.sum() }
        }
        "read" => {
            let (mut bytes, mut total) = (0, 0u64);
            for t in src.tensors() {
                for p in t.parts() {
                    let data = t.part(p).and_then(|p| p.bytes()).expect("read");
                    bytes += data.len() as u64;
                    total = total.wrapping_add(sum(&data));
                }
            }
            Outcome { bytes, tensors: src.len(), sum: total }
        }
        other => panic!("unknown ztensor2 op {other}"),
    }
}

/// The zTensor 2 crate writing `src`'s tensors to `out`: from a safetensors file, dense
/// tensors; from a zTensor 2 file, every object with its layout, parts and attributes.
fn ztensor2_write(src: &Path, out: &Path) -> Outcome {
    use ztensor2::DType as Z;
    let mut w = ztensor2::Writer::publish(out).expect("create");
    let (mut bytes, mut tensors) = (0, 0);
    if src.extension().is_some_and(|e| e == "safetensors") {
        let m = map(src);
        let st = safetensors::SafeTensors::deserialize(&m).expect("deserialize");
        let mut names = st.names();
        names.sort();
        for n in names {
            let t = st.tensor(n).expect("tensor");
            let dtype = match t.dtype() {
                safetensors::Dtype::BF16 => Z::BF16,
                safetensors::Dtype::F16 => Z::F16,
                safetensors::Dtype::F32 => Z::F32,
                other => panic!("no zTensor 2 dtype for {other:?} here"),
            };
            let shape: Vec<u64> = t.shape().iter().map(|&d| d as u64).collect();
            w.add(n, shape, dtype, t.data()).expect("add");
            bytes += t.data().len() as u64;
            tensors += 1;
        }
    } else {
        let source = ztensor2::Source::open(src).expect("open");
        if let Some(a) = source.attributes() {
            w.set_attributes(a.clone());
        }
        let mut all: Vec<_> = source.tensors().collect();
        all.sort_by(|a, b| a.name().cmp(b.name()));
        for t in all {
            let parts: Vec<_> = t
                .parts()
                .map(|p| {
                    let part = t.part(p).expect("part");
                    (p, part.dtype(), part.logical(), part.bytes().expect("read"))
                })
                .collect();
            w.object(t.name(), |o| {
                let mut o = o.shape(t.shape()).layout(t.layout());
                if let Some(a) = t.attributes() {
                    o = o.attributes(a.clone());
                }
                for (name, dtype, logical, data) in &parts {
                    o = o.part(*name, |p| {
                        let p = p.dtype(*dtype).bytes(data);
                        match logical {
                            Some(l) => p.logical(*l),
                            None => p,
                        }
                    });
                }
                o
            })
            .expect("add");
            bytes += parts.iter().map(|p| p.3.len() as u64).sum::<u64>();
            tensors += 1;
        }
    }
    w.finish().expect("finish");
    Outcome { bytes, tensors, sum: 0 }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: bench_op TOOL OP FILE [OUT]");
        std::process::exit(2);
    }
    let (tool, op, path) = (args[1].as_str(), args[2].as_str(), Path::new(&args[3]));
    let out = args.get(4).map(Path::new);
    if (tool, op) == ("tensorfile", "dequantize") {
        let threads = args.get(5).and_then(|t| t.parse().ok()).expect("THREADS");
        let reuse = args.get(6).is_some_and(|a| a == "reuse");
        let (seconds, o) = dequantize_op(path, args.get(4).expect("NAME"), threads, reuse);
        println!("{{\"seconds\": {seconds}, \"bytes\": {}, \"tensors\": 1, \"sum\": {}}}", o.bytes, o.sum);
        return;
    }
    if (tool, op) == ("tensorfile", "quantize") {
        let threads = args.get(5).and_then(|t| t.parse().ok()).expect("THREADS");
        let (seconds, o) = quantize_op(path, args.get(4).expect("TYPE"), threads);
        println!("{{\"seconds\": {seconds}, \"bytes\": {}, \"tensors\": 1, \"sum\": {}}}", o.bytes, o.sum);
        return;
    }
    let start = Instant::now();
    let outcome = match tool {
        "tensorfile" => tensorfile_op(op, path, out),
        "safetensors" => safetensors_op(op, path),
        "ztensor" => ztensor_op(op, path),
        "ztensor2" => ztensor2_op(op, path, out),
        "mmap" => {
            let m = map(path);
            Outcome { bytes: m.len() as u64, tensors: 0, sum: sum(&m) }
        }
        "write" => {
            // The tensor bytes, gathered before the clock starts again: only writing is timed.
            let file = TensorFile::open(path).expect("open");
            let data: Vec<_> = (0..file.entries().len()).map(|i| file.read_index(i).expect("read")).collect();
            let start = Instant::now();
            let mut f = File::create(out.expect("OUT")).expect("create");
            let mut bytes = 0;
            for d in &data {
                let b = d.as_dense().expect("dense");
                f.write_all(b).expect("write");
                bytes += b.len() as u64;
            }
            f.sync_all().expect("sync");
            let seconds = start.elapsed().as_secs_f64();
            println!("{{\"seconds\": {seconds}, \"bytes\": {bytes}, \"tensors\": {}, \"sum\": 0}}", data.len());
            return;
        }
        "dd" => {
            // The disk's own sequential direct read: dd with O_DIRECT, 64 MiB requests.
            let got = std::process::Command::new("dd")
                .arg(format!("if={}", path.display()))
                .args(["of=/dev/null", "bs=64M", "iflag=direct", "status=none"])
                .status()
                .expect("run dd");
            assert!(got.success(), "dd failed");
            Outcome { bytes: std::fs::metadata(path).expect("stat").len(), tensors: 0, sum: 0 }
        }
        "cp" => {
            // coreutils cp, then the copy synced: the durability of an atomic write.
            let out = out.expect("OUT");
            let status = std::process::Command::new("cp").arg(path).arg(out).status().expect("run cp");
            assert!(status.success(), "cp failed");
            File::open(out).expect("open the copy").sync_all().expect("sync");
            Outcome { bytes: std::fs::metadata(out).expect("stat").len(), tensors: 0, sum: 0 }
        }
        "curl" => {
            let into = match op {
                "read" => std::path::PathBuf::from("/dev/null"),
                _ => std::path::PathBuf::from(format!("/dev/shm/tensorfile-bench-{}", std::process::id())),
            };
            let got = std::process::Command::new("curl")
                .args(["-sS", "--fail", "-w", "%{size_download}", "-o"])
                .arg(&into)
                .arg(path)
                .output()
                .expect("run curl");
            if op != "read" {
                let _ = std::fs::remove_file(&into);
            }
            assert!(got.status.success(), "curl failed: {}", String::from_utf8_lossy(&got.stderr));
            let bytes = String::from_utf8_lossy(&got.stdout).trim().parse::<f64>().expect("size") as u64;
            Outcome { bytes, tensors: 0, sum: 0 }
        }
        other => panic!("unknown tool {other}"),
    };
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"seconds\": {seconds}, \"bytes\": {}, \"tensors\": {}, \"sum\": {}}}",
        outcome.bytes, outcome.tensors, outcome.sum
    );
}
