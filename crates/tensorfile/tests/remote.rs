//! Reading remote files from real servers on loopback: nginx (HTTP ranges) and moto's S3
//! server, counting the body bytes each server sent (see `servers/mod.rs`).
//!
//! What is checked, for every format, on both servers:
//! - listing (open + entries) a 1 GiB file moves less than 1 MiB;
//! - opening and reading one small tensor moves at most that tensor's stored bytes, plus the
//!   file's index (every byte of the file that is no tensor's data), plus one speculative read
//!   of [`SPECULATIVE_READ`] (64 KiB);
//! - reading every tensor gives exactly the local file's tensors;
//! - reading ahead overlaps requests and keeps at most [`REQUESTS_IN_FLIGHT`] in flight (moto,
//!   behind the proxy that sees every request);
//! - a whole download is counted exactly (a check of the counting itself);
//! - a missing object is an error naming its URL;
//! - a server answering the first request with 503 is retried, and the read succeeds.
//!
//! The 1 GiB files are a safetensors file written here (sparse zeros but a few small tensors)
//! and its conversions to `.zt`, `.pt` and `.ptd` by the library's writers (served by nginx;
//! moto gets the safetensors one only: uploading the others cost 20 s of CI); `.pte` and `.pt2`
//! are committed fixtures. Each test runs its checks on every server and every file, then
//! fails listing every check that failed, with the bytes counted (`--nocapture` shows them all).
//!
//! Without nginx or moto the tests print `skipped:` and pass, unless
//! `TENSORFILE_REQUIRE_SERVERS=1`. moto keeps the uploaded files (about 1.2 GiB) in memory, so
//! that the tests need no disk beyond a few megabytes (the 1 GiB files are sparse).
//!
//! The faults of a bad network are injected by a server of the tests' own
//! (`servers/faults.rs`), so those tests need nothing installed and always run: a connection
//! reset or closed midway, a body shorter than asked, a stalled body, no response at all, 429
//! with `Retry-After`, 500/502/504 in a row, an object changed after it was opened. Each read
//! either completes with the right bytes, resumed from the byte reached (the ranges the
//! server was asked for are checked), or fails within its bound with a message naming the URL,
//! the range and the cause. They run in a child process of this binary with short bounds
//! (`TENSORFILE_REMOTE_TIMEOUT=2`, `..._STALL_TIMEOUT=0.3`, `..._BACKOFF=0.01`; a few seconds
//! in all), which also reads a `gs://` and an `az://` object from that server with each
//! ecosystem's credentials from the environment (a GCS bearer token; Azurite's account key).

#![cfg(feature = "remote")]

// The test servers' helper calls libc (`atexit`, `kill`) and sets the environment before the
// tests start threads: test-only `unsafe`, each use with its SAFETY comment.
#[allow(unsafe_code)]
mod servers;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use servers::faults::{Fault, FaultServer};
use servers::{Moto, Nginx, Proxy, Traffic};
use tensorfile::convert::{ConvertOptions, Selection, convert_to_writer};
use tensorfile::model::ChecksumKind;
use tensorfile::source::{REQUESTS_IN_FLIGHT, SPECULATIVE_READ, Source};
use tensorfile::{Depth, Format, TensorData, TensorFile};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
/// The bucket moto serves the files from.
const BUCKET: &str = "tensorfile";

// ---------------------------------------------------------------------------------------------
// Files

/// One file the servers serve.
struct TestFile {
    /// Its name in the served folder and its key in the bucket.
    name: String,
    path: PathBuf,
    /// One of the 1 GiB files.
    big: bool,
}

impl TestFile {
    fn on_s3(&self) -> bool {
        !self.big || self.name.ends_with(".safetensors")
    }
}

struct Files {
    dir: PathBuf,
    list: Vec<TestFile>,
}

impl Files {
    fn small(&self) -> impl Iterator<Item = &TestFile> {
        self.list.iter().filter(|f| !f.big)
    }

    /// The files uploaded to moto: all but the 1 GiB conversions (the same ranged reads as
    /// over HTTP, and 20 s of CI's two cores to upload): the 1 GiB safetensors file stands
    /// for them there.
    fn on_s3(&self) -> impl Iterator<Item = &TestFile> {
        self.list.iter().filter(|f| f.on_s3())
    }

    fn get(&self, name: &str) -> &TestFile {
        self.list.iter().find(|f| f.name == name).expect("a test file")
    }
}

/// How a tensor of a written safetensors file is filled (zeros are holes of the sparse file).
#[derive(Clone, Copy)]
enum Fill {
    /// Deterministic bytes from a seed.
    Pattern(u64),
    /// Zeros but for 64 bytes from a seed at the start: tensors that are no copies of each
    /// other (a `.ptd` stores identical tensors once).
    Marked(u64),
}

fn pattern(seed: u64, len: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Write a safetensors file: the header by hand, then each tensor's bytes in order, zeros
/// left as holes (`set_len`), so a 1 GiB file takes a few kilobytes of disk.
fn write_safetensors(path: &Path, tensors: &[(&str, &str, &[u64], Fill)]) {
    use std::io::{Seek, SeekFrom, Write};
    let size_of = |dtype: &str| match dtype {
        "F32" | "I32" => 4,
        "F16" | "BF16" | "I16" => 2,
        "I64" | "F64" => 8,
        "U8" | "I8" | "BOOL" => 1,
        other => panic!("no size for {other}"),
    };
    let mut header = serde_json::Map::new();
    let mut offset = 0u64;
    let mut spans = Vec::new();
    for &(name, dtype, shape, _) in tensors {
        let len = shape.iter().product::<u64>() * size_of(dtype);
        header.insert(
            name.to_string(),
            serde_json::json!({ "dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len] }),
        );
        spans.push((offset, len));
        offset += len;
    }
    let mut json = serde_json::to_string(&header).unwrap();
    while (8 + json.len()) % 8 != 0 {
        json.push(' ');
    }
    let data_start = 8 + json.len() as u64;
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&(json.len() as u64).to_le_bytes()).unwrap();
    f.write_all(json.as_bytes()).unwrap();
    f.set_len(data_start + offset).unwrap();
    for (&(_, _, _, fill), &(at, len)) in tensors.iter().zip(&spans) {
        let written = match fill {
            Fill::Pattern(seed) => pattern(seed, len),
            Fill::Marked(seed) => pattern(seed, len.min(64)),
        };
        f.seek(SeekFrom::Start(data_start + at)).unwrap();
        f.write_all(&written).unwrap();
    }
}

/// A file written with holes where whole blocks of zeros would go: the 1 GiB conversions
/// take a few kilobytes of disk.
struct SparseFile {
    file: std::fs::File,
    pos: u64,
    end: u64,
}

impl tensorfile::formats::Output for SparseFile {}

impl std::io::Write for SparseFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        const BLOCK: usize = 64 * 1024;
        static ZEROS: [u8; BLOCK] = [0; BLOCK];
        let mut at = 0;
        while at < buf.len() {
            // Up to the next multiple of BLOCK in the file, so holes are whole blocks.
            let room = BLOCK - (self.pos % BLOCK as u64) as usize;
            let piece = &buf[at..(at + room).min(buf.len())];
            if piece != &ZEROS[..piece.len()] {
                self.file.write_all_at(piece, self.pos)?;
            }
            self.pos += piece.len() as u64;
            self.end = self.end.max(self.pos);
            at += piece.len();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.set_len(self.end)
    }
}

impl std::io::Seek for SparseFile {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.pos = match to {
            std::io::SeekFrom::Start(n) => n,
            std::io::SeekFrom::End(d) => self.end.checked_add_signed(d).unwrap(),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d).unwrap(),
        };
        Ok(self.pos)
    }
}

/// Reading back (which zTensor 2's writer does to confirm equal parts): the holes and the
/// end not yet extended read as zeros.
impl std::io::Read for SparseFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = buf.len().min(usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX));
        let mut done = 0;
        while done < want {
            match self.file.read_at(&mut buf[done..want], self.pos + done as u64)? {
                0 => {
                    buf[done..want].fill(0);
                    done = want;
                }
                n => done += n,
            }
        }
        self.pos += want as u64;
        Ok(want)
    }
}

/// Convert `src` into each of `exts` beside it, with the library's writers (into sparse files).
fn convert_into(src: &Path, stem: &str, exts: &[&str], checksum: ChecksumKind) -> Vec<PathBuf> {
    use std::io::Write;
    let file = TensorFile::open(src).unwrap();
    let mut options = ConvertOptions::default();
    options.write.checksum = checksum;
    options.verify = false;
    exts.iter()
        .map(|ext| {
            let started = std::time::Instant::now();
            let dest = src.with_file_name(format!("{stem}.{ext}"));
            let mut out = SparseFile { file: std::fs::File::create(&dest).unwrap(), pos: 0, end: 0 };
            let format = Format::from_path(&dest).unwrap();
            convert_to_writer(&file, &mut out, format, &options, &mut |_| {})
                .unwrap_or_else(|e| panic!("converting to .{ext}: {e}"));
            out.flush().unwrap();
            eprintln!("{} written in {:.1?}", dest.display(), started.elapsed());
            dest
        })
        .collect()
}

/// The files, made once per test binary in a temporary folder removed at exit.
fn files() -> &'static Files {
    static FILES: OnceLock<Files> = OnceLock::new();
    FILES.get_or_init(|| {
        let started = std::time::Instant::now();
        let dir = tempfile::Builder::new().prefix("tensorfile-remote-").tempdir().unwrap().keep();
        servers::remove_at_exit(&dir);
        let mut list = Vec::new();

        // 1 GiB: four 256 MiB tensors of (mostly) zeros, small tensors before them and one
        // after.
        let big = dir.join("big.safetensors");
        let quarter: &[u64] = &[8192, 8192];
        write_safetensors(
            &big,
            &[
                ("small.a", "F32", &[4, 4], Fill::Pattern(1)),
                ("small.b", "BF16", &[3, 5], Fill::Pattern(2)),
                ("small.c", "I64", &[5], Fill::Pattern(3)),
                ("big.0", "F32", quarter, Fill::Marked(20)),
                ("big.1", "F32", quarter, Fill::Marked(21)),
                ("big.2", "F32", quarter, Fill::Marked(22)),
                ("big.3", "F32", quarter, Fill::Marked(23)),
                ("small.tail", "F32", &[2], Fill::Pattern(4)),
            ],
        );
        list.push(TestFile { name: "big.safetensors".into(), path: big.clone(), big: true });
        for path in convert_into(&big, "big", &["zt", "pt", "ptd"], ChecksumKind::None) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            list.push(TestFile { name, path, big: true });
        }

        // 20 MiB of varied bytes (more than one 8 MiB part), in every format the
        // library writes, with its default checksums.
        let varied = dir.join("varied.safetensors");
        write_safetensors(
            &varied,
            &[
                ("layers.0.weight", "F32", &[1024, 1024], Fill::Pattern(10)),
                ("layers.0.bias", "F16", &[300], Fill::Pattern(11)),
                ("layers.1.weight", "BF16", &[2048, 2048], Fill::Pattern(12)),
                ("layers.1.steps", "I64", &[7], Fill::Pattern(13)),
                ("layers.2.weight", "F32", &[2048, 1024], Fill::Pattern(14)),
                ("layers.2.index", "I32", &[3, 3], Fill::Pattern(15)),
            ],
        );
        list.push(TestFile { name: "varied.safetensors".into(), path: varied.clone(), big: false });
        for path in convert_into(&varied, "varied", &["zt", "pt", "ptd"], ChecksumKind::default()) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            list.push(TestFile { name, path, big: false });
        }

        // Four 12 MiB tensors (three parts each): read ahead together, twelve part requests
        // would be in flight but for the object's bound.
        let parts = dir.join("parts.safetensors");
        let twelve: &[u64] = &[3072, 1024];
        let names = ["p.0", "p.1", "p.2", "p.3"];
        let tensors: Vec<_> = (0..4).map(|k| (names[k], "F32", twelve, Fill::Marked(30 + k as u64))).collect();
        write_safetensors(&parts, &tensors);
        list.push(TestFile { name: "parts.safetensors".into(), path: parts, big: false });

        // Committed fixtures of the formats the library does not write.
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        for rel in ["executorch/mobilenet_v2.pte", "pytorch/mobilenet_v2.pt2"] {
            let from = fixtures.join(rel);
            let name = from.file_name().unwrap().to_string_lossy().into_owned();
            let path = dir.join(&name);
            std::fs::copy(&from, &path).unwrap();
            list.push(TestFile { name, path, big: false });
        }
        eprintln!("test files made in {:.1?}", started.elapsed());
        Files { dir, list }
    })
}

// ---------------------------------------------------------------------------------------------
// Servers

/// moto with every test file uploaded, behind a counting proxy; shared by the tests, which
/// take turns ([`S3::turn`]) so that each counts only its own requests.
struct S3 {
    _moto: &'static Moto,
    proxy: Proxy,
    turn: Mutex<()>,
}

/// Every test calls this first: the files, and moto with the files uploaded and the `AWS_*`
/// environment set (before any test reads the environment: the others wait here).
fn setup() -> (&'static Files, Option<&'static S3>) {
    static S3_SERVER: OnceLock<Option<S3>> = OnceLock::new();
    let files = files();
    let s3 = S3_SERVER.get_or_init(|| {
        let started = std::time::Instant::now();
        static MOTO: OnceLock<Option<Moto>> = OnceLock::new();
        let moto = MOTO.get_or_init(Moto::start).as_ref()?;
        moto.kill_at_exit();
        let proxy = Proxy::start(moto.port());
        servers::set_s3_env(&proxy.endpoint());
        moto.create_bucket(BUCKET);
        // Two uploads at a time: moto holds each body twice while it stores it.
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    let uploaded: Vec<&TestFile> = files.on_s3().collect();
                    while let Some(f) = uploaded.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) {
                        moto.upload(BUCKET, &f.name, &f.path);
                    }
                });
            }
        });
        eprintln!("files uploaded to moto in {:.1?}", started.elapsed());
        Some(S3 { _moto: moto, proxy, turn: Mutex::new(()) })
    });
    (files, s3.as_ref())
}

/// A server a test reads from.
enum Server<'a> {
    /// An nginx of the test's own.
    Http(Nginx),
    /// The shared moto, this test's turn held.
    S3 { s3: &'a S3, _turn: MutexGuard<'a, ()> },
}

impl Server<'_> {
    /// Whether the server holds `f` (moto: [`Files::on_s3`]).
    fn serves(&self, f: &TestFile) -> bool {
        matches!(self, Server::Http(_)) || f.on_s3()
    }

    fn name(&self) -> &'static str {
        match self {
            Server::Http(_) => "nginx",
            Server::S3 { .. } => "moto",
        }
    }

    fn url(&self, name: &str) -> String {
        match self {
            Server::Http(n) => n.url(name),
            Server::S3 { .. } => format!("s3://{BUCKET}/{name}"),
        }
    }

    /// What the server sent so far.
    fn traffic(&self) -> Traffic {
        match self {
            Server::Http(n) => n.traffic(),
            Server::S3 { s3, .. } => s3.proxy.traffic(),
        }
    }

    /// The most requests in flight at once since the last call, where the server is behind
    /// the counting proxy (moto).
    fn take_most_in_flight(&self) -> Option<u64> {
        match self {
            Server::Http(_) => None,
            Server::S3 { s3, .. } => Some(s3.proxy.take_most_in_flight()),
        }
    }
}

/// Run `check` against nginx, then moto (each skipped when not installed), and fail listing
/// every failed check.
fn on_each_server(test: &str, mut check: impl FnMut(&Files, &Server<'_>, &mut Checks)) {
    if !servers::nginx_installed() && !servers::moto_installed() {
        // Said (or failed) here, before the files are made for nothing.
        servers::unavailable(
            "nginx nor moto's S3 server",
            "apt-get install -y nginx-light; pip install 'moto[server]'",
        );
        return;
    }
    let (files, s3) = setup();
    let mut checks = Checks { test: test.to_string(), failures: Vec::new() };
    if let Some(nginx) = Nginx::start(&files.dir) {
        check(files, &Server::Http(nginx), &mut checks);
    }
    match s3 {
        Some(s3) => {
            let turn = s3.turn.lock().unwrap_or_else(|e| e.into_inner());
            check(files, &Server::S3 { s3, _turn: turn }, &mut checks);
        }
        None => eprintln!("{test}: moto skipped"),
    }
    checks.finish();
}

/// Failed checks, gathered so that one test reports every file and server.
struct Checks {
    test: String,
    failures: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, what: String) {
        eprintln!("{}: {} {what}", self.test, if ok { "ok  " } else { "FAIL" });
        if !ok {
            self.failures.push(what);
        }
    }

    fn finish(self) {
        assert!(self.failures.is_empty(), "{} failed:\n{}", self.test, self.failures.join("\n"));
    }
}

// ---------------------------------------------------------------------------------------------
// What is measured

/// Bytes of `file` that are no tensor's data: its index, in the widest sense (headers,
/// footers, flatbuffers, zip records, pickles, padding).
fn index_bytes(file: &TensorFile) -> u64 {
    let mut spans: Vec<(u64, u64)> =
        file.entries().iter().map(|e| (e.storage().offset(), e.storage().offset() + e.storage().len())).collect();
    spans.sort_unstable();
    let mut data = 0;
    let mut reach = 0;
    for (start, end) in spans {
        let start = start.max(reach);
        if end > start {
            data += end - start;
            reach = end;
        }
    }
    file.size() - data
}

/// The entry to read alone: the smallest non-empty one, the last in the file of equal ones.
fn small_entry(file: &TensorFile) -> usize {
    (0..file.entries().len())
        .filter(|&i| file.entries()[i].nbytes() > 0)
        .min_by_key(|&i| (file.entries()[i].storage().len(), u64::MAX - file.entries()[i].storage().offset()))
        .expect("a non-empty tensor")
}

/// The same dense bytes (every tensor of these files is dense).
fn same(a: &TensorData, b: &TensorData) -> bool {
    matches!((a.as_dense(), b.as_dense()), (Ok(a), Ok(b)) if **a == **b)
}

/// `f` opened from `server`, or `None` with the failure recorded.
fn open_remote(server: &Server<'_>, f: &TestFile, checks: &mut Checks) -> Option<TensorFile> {
    let opened = TensorFile::open(server.url(&f.name));
    opened.map_err(|e| checks.check(false, format!("[{}] {}: cannot open: {e}", server.name(), f.name))).ok()
}

fn open_local(f: &TestFile) -> TensorFile {
    TensorFile::open(&f.path).unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn listing_a_1_gib_file_moves_less_than_1_mib() {
    on_each_server("listing", |files, server, checks| {
        let served = |f: &&TestFile| server.serves(f);
        for f in files.list.iter().filter(served).filter(|f| f.big || f.name.starts_with("mobilenet")) {
            let local = open_local(f);
            let before = server.traffic();
            let Some(remote) = open_remote(server, f, checks) else { continue };
            let same = remote.entries() == local.entries();
            let moved = server.traffic() - before;
            checks.check(same, format!("[{}] {}: entries equal the local file's", server.name(), f.name));
            let (limit, why) = if f.big {
                (MIB - 1, "< 1 MiB".to_string())
            } else {
                let index = index_bytes(&local);
                (index + SPECULATIVE_READ, format!("<= index {index} + {SPECULATIVE_READ}"))
            };
            checks.check(
                moved.body_bytes <= limit,
                format!("[{}] {} ({} bytes): listing moved {moved} ({why})", server.name(), f.name, local.size()),
            );
        }
    });
}

#[test]
fn reading_one_tensor_moves_its_bytes_plus_at_most_one_index() {
    on_each_server("one tensor", |files, server, checks| {
        let served = |f: &&TestFile| server.serves(f);
        for f in files.list.iter().filter(served).filter(|f| f.big || f.name.starts_with("mobilenet")) {
            let local = open_local(f);
            let i = small_entry(&local);
            let entry = &local.entries()[i];
            let before = server.traffic();
            let read = TensorFile::open(server.url(&f.name)).and_then(|remote| remote.read_index(i));
            let moved = server.traffic() - before;
            let data = match read {
                Ok(data) => data,
                Err(e) => {
                    checks.check(
                        false,
                        format!("[{}] {}: cannot read {}: {e}", server.name(), f.name, entry.info().name()),
                    );
                    continue;
                }
            };
            let name = entry.info().name();
            checks.check(
                same(&data, &local.read_index(i).unwrap()),
                format!("[{}] {}: {name} equals the local tensor", server.name(), f.name),
            );
            let index = index_bytes(&local);
            let limit = entry.storage().len() + index + SPECULATIVE_READ;
            checks.check(
                moved.body_bytes <= limit,
                format!(
                    "[{}] {} ({} bytes): opening and reading {name} moved {moved} (<= tensor {} + index {index} + {SPECULATIVE_READ} = {limit})",
                    server.name(),
                    f.name,
                    local.size(),
                    entry.storage().len(),
                ),
            );
        }
    });
}

#[test]
fn reading_every_tensor_gives_the_local_tensors() {
    on_each_server("full read", |files, server, checks| {
        for f in files.small() {
            let local = open_local(f);
            let before = server.traffic();
            let Some(remote) = open_remote(server, f, checks) else { continue };
            let mut equal = remote.entries() == local.entries();
            for i in 0..local.entries().len() {
                equal &= remote.read_index(i).is_ok_and(|d| same(&d, &local.read_index(i).unwrap()));
            }
            let moved = server.traffic() - before;
            // Read again in order, fetching one tensor ahead: the same tensors, in that order;
            // an error from the caller stops the reading.
            let order: Vec<usize> = (0..local.entries().len()).rev().collect();
            let mut seen = Vec::new();
            let ahead = remote.read_each(&order, true, &mut |i, data| {
                seen.push(i);
                assert!(same(&data?, &local.read_index(i).unwrap()), "{}: entry {i}", f.name);
                Ok(())
            });
            checks.check(
                ahead.is_ok() && seen == order,
                format!("[{}] {}: read_each gives every tensor in the order asked", server.name(), f.name),
            );
            let mut calls = 0;
            let stopped = remote.read_each(&order, false, &mut |_, _| {
                calls += 1;
                Err(tensorfile::Error::usage("enough"))
            });
            checks.check(
                stopped.is_err() && calls == 1,
                format!("[{}] {}: read_each stops at the caller's first error", server.name(), f.name),
            );
            let (deep, local_deep) = (remote.verify_with(Depth::Deep), local.verify_with(Depth::Deep));
            checks.check(
                deep.problems.is_empty()
                    && deep.decoded_bytes == local_deep.decoded_bytes
                    && deep.checksums == local_deep.checksums,
                format!(
                    "[{}] {}: a deep verify finds nothing, decodes {} bytes and checks {} checksums as locally",
                    server.name(),
                    f.name,
                    local_deep.decoded_bytes,
                    local_deep.checksums
                ),
            );
            let tensors = local.size() - index_bytes(&local);
            checks.check(
                equal,
                format!(
                    "[{}] {} ({} bytes, {tensors} of tensors): every tensor equals the local one; moved {moved}",
                    server.name(),
                    f.name,
                    local.size()
                ),
            );
        }
    });
}

#[test]
fn reading_ahead_overlaps_requests_and_keeps_within_the_bound() {
    on_each_server("read ahead", |files, server, checks| {
        if server.take_most_in_flight().is_none() {
            return; // nginx: no proxy counting requests in flight
        }
        for f in files.small() {
            let Some(remote) = open_remote(server, f, checks) else { continue };
            let all: Vec<usize> = (0..remote.entries().len()).collect();
            server.take_most_in_flight();
            let read = remote.read_each(&all, false, &mut |_, data| data.map(drop));
            let most = server.take_most_in_flight().unwrap_or(0);
            checks.check(
                read.is_ok() && most <= REQUESTS_IN_FLIGHT as u64,
                format!(
                    "[{}] {}: reading everything keeps at most {REQUESTS_IN_FLIGHT} requests in flight (saw {most})",
                    server.name(),
                    f.name
                ),
            );
        }
        // Small tensors, each one request: fetched one after another, there would never be
        // two requests at once.
        let f = files.get("mobilenet_v2.pte");
        let Some(remote) = open_remote(server, f, checks) else { return };
        let small: Vec<usize> = (0..remote.entries().len())
            .filter(|&i| (4096..=256 * 1024).contains(&remote.entries()[i].storage().len()))
            .collect();
        server.take_most_in_flight();
        let read = remote.read_each(&small, false, &mut |_, data| data.map(drop));
        let most = server.take_most_in_flight().unwrap_or(0);
        checks.check(
            read.is_ok() && small.len() >= 20 && most >= 2,
            format!(
                "[{}] {}: {} small tensors read with requests overlapping ({most} at most)",
                server.name(),
                f.name,
                small.len()
            ),
        );
    });
}

/// The counting itself: a whole download is counted as exactly the file's size, by the
/// server and by the library.
#[test]
fn a_whole_download_is_counted_exactly() {
    on_each_server("whole download", |files, server, checks| {
        let f = files.get("varied.safetensors");
        let size = std::fs::metadata(&f.path).unwrap().len();
        let before = server.traffic();
        let src = Source::open_url(&server.url(&f.name)).unwrap();
        let whole = src.whole().unwrap();
        let moved = server.traffic() - before;
        checks.check(
            *whole == *std::fs::read(&f.path).unwrap(),
            format!("[{}] {}: downloaded bytes equal the file", server.name(), f.name),
        );
        checks.check(
            moved.body_bytes == size && src.bytes_fetched() == size,
            format!(
                "[{}] {} ({size} bytes): whole download moved {moved}, library counted {}",
                server.name(),
                f.name,
                src.bytes_fetched()
            ),
        );
    });
}

#[test]
fn a_missing_object_is_an_error_naming_its_url() {
    on_each_server("missing", |_, server, checks| {
        let url = server.url("no-such-file.safetensors");
        match TensorFile::open(&url) {
            Ok(_) => checks.check(false, format!("[{}] {url} opened", server.name())),
            Err(e) => {
                let message = e.to_string();
                checks.check(message.contains(&url), format!("[{}] error names the URL: {message}", server.name()));
            }
        }
    });
}

#[test]
fn a_503_to_the_first_request_is_retried() {
    on_each_server("503 retried", |files, server, checks| {
        let f = files.get("varied.safetensors");
        let local = open_local(f);
        let own_proxy;
        let (proxy, url) = match server {
            Server::Http(nginx) => {
                own_proxy = Proxy::start(nginx.port());
                (&own_proxy, format!("{}/{}", own_proxy.endpoint(), f.name))
            }
            Server::S3 { s3, .. } => (&s3.proxy, server.url(&f.name)),
        };
        let refused_before = proxy.refused();
        proxy.refuse_next(1);
        let read = TensorFile::open(&url).and_then(|remote| remote.read("layers.1.steps"));
        proxy.refuse_next(0);
        let refused = proxy.refused() - refused_before;
        match read {
            Ok(data) => checks.check(
                same(&data, &local.read("layers.1.steps").unwrap()) && refused == 1,
                format!("[{}] read after {refused} request(s) answered 503", server.name()),
            ),
            Err(e) => checks.check(false, format!("[{}] after {refused} 503(s): {e}", server.name())),
        }
    });
}

/// Converting a remote file with a target dtype (the remote path fetches each tensor whole,
/// ahead) casts its tensors exactly as converting the local file does.
#[test]
fn converting_with_a_dtype_casts_as_locally() {
    on_each_server("cast", |files, server, checks| {
        let f = files.get("varied.safetensors");
        let options = ConvertOptions { dtype: Some(tensorfile::DType::BFloat16), ..ConvertOptions::default() };
        let convert = |file: &TensorFile| {
            let mut out = std::io::Cursor::new(Vec::new());
            convert_to_writer(file, &mut out, Format::Safetensors, &options, &mut |_| {})
                .map(|r| (r.cast, out.into_inner()))
        };
        let Some(remote) = open_remote(server, f, checks) else { return };
        let (local_cast, local_bytes) = convert(&open_local(f)).unwrap();
        match convert(&remote) {
            Ok((cast, bytes)) => checks.check(
                !local_cast.is_empty() && cast == local_cast && bytes == local_bytes,
                format!("[{}] {}: {} tensors cast as locally", server.name(), f.name, cast.len()),
            ),
            Err(e) => checks.check(false, format!("[{}] {}: {e}", server.name(), f.name)),
        }
    });
}

/// A remote file merged with a local one of another format, selected and renamed, converts as
/// the two local files do (the remote one fetched ahead, its tensors from its URL).
#[test]
fn merging_a_remote_input_with_a_selection_converts_as_locally() {
    on_each_server("merge", |files, server, checks| {
        let (st, pt2) = (files.get("varied.safetensors"), files.get("mobilenet_v2.pt2"));
        let select = Selection::new(&["layers.*", "features.1.*"], &["layers.1.*"], &[(r"^layers\.", "l.")]).unwrap();
        let options = ConvertOptions { select, ..ConvertOptions::default() };
        let convert = |file: &TensorFile| {
            let mut out = std::io::Cursor::new(Vec::new());
            convert_to_writer(file, &mut out, Format::Safetensors, &options, &mut |_| {})
                .map(|r| (r.tensors, r.renamed.len(), out.into_inner()))
        };
        let local = tensorfile::OpenOptions::new().open_merged(&[st.path.clone(), pt2.path.clone()]).unwrap();
        let (tensors, renamed, local_bytes) = convert(&local).unwrap();
        let remote =
            tensorfile::OpenOptions::new().open_merged(&[PathBuf::from(server.url(&st.name)), pt2.path.clone()]);
        match remote.and_then(|remote| convert(&remote)) {
            Ok((n, r, bytes)) => checks.check(
                (n, r) == (tensors, renamed) && renamed == 4 && n > renamed && bytes == local_bytes,
                format!("[{}] {n} tensors merged, {r} renamed, as locally", server.name()),
            ),
            Err(e) => checks.check(false, format!("[{}] merge: {e}", server.name())),
        }
    });
}

/// A remote file that does not open is diagnosed from two range reads (its first and last
/// bytes) in the same words as the local file.
#[test]
fn a_remote_file_that_does_not_open_says_what_it_is() {
    on_each_server("diagnosed", |files, server, checks| {
        // Files the HTTP server serves from its folder (moto holds only what setup uploaded).
        let Server::Http(_) = server else { return };
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let pointer = std::fs::read(fixtures.join("diagnose/lfs_pointer.safetensors")).unwrap();
        let cut = std::fs::read(fixtures.join("safetensors/dtypes.safetensors")).unwrap()[..841].to_vec();
        let page = std::fs::read(fixtures.join("diagnose/not_found.safetensors")).unwrap();
        for (name, bytes) in [("lfs.safetensors", pointer), ("cut.safetensors", cut), ("page.safetensors", page)] {
            let path = files.dir.join(name);
            std::fs::write(&path, &bytes).unwrap();
            let local = TensorFile::open(&path).err().expect("a broken file");
            let remote = TensorFile::open(server.url(name)).err();
            let same = remote.as_ref().is_some_and(|r| {
                r.diagnosis().is_some() && r.diagnosis() == local.diagnosis() && r.message() == local.message()
            });
            checks.check(
                same,
                format!(
                    "[{}] {name}: {:?} as locally: {}",
                    server.name(),
                    remote.map(|r| r.message()),
                    local.message()
                ),
            );
        }
    });
}

/// Any part of a split GGUF model (the parts `llama-gguf-split` made, committed in
/// `tests/fixtures/gguf-split`) opens by URL as the whole model: the parts beside it fetched,
/// every tensor as the local parts read it, the first part's metadata; a part that is not
/// there is an error naming its URL.
#[test]
fn a_split_gguf_model_opens_from_any_remote_part() {
    on_each_server("split gguf", |files, server, checks| {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gguf-split");
        let parts: Vec<String> = (1..=4).map(|k| format!("model-{k:05}-of-00004.gguf")).collect();
        // Served as they are, and the first part alone under another model's name.
        let mut served: Vec<(String, PathBuf)> = parts.iter().map(|p| (p.clone(), fixtures.join(p))).collect();
        served.push(("alone-00001-of-00004.gguf".into(), fixtures.join(&parts[0])));
        for (name, from) in &served {
            match server {
                Server::Http(_) => drop(std::fs::copy(from, files.dir.join(name)).unwrap()),
                Server::S3 { s3, .. } => s3._moto.upload(BUCKET, name, from),
            }
        }
        let local = TensorFile::open(fixtures.join(&parts[0])).unwrap();
        let bytes = |file: &TensorFile, i: usize| {
            file.read_index(i).map(|d| d.parts().iter().flat_map(|p| p.bytes().to_vec()).collect::<Vec<u8>>())
        };
        for name in &parts {
            let Some(remote) = TensorFile::open(server.url(name))
                .map_err(|e| checks.check(false, format!("[{}] {name}: {e}", server.name())))
                .ok()
            else {
                continue;
            };
            let n = local.entries().len();
            let equal = remote.entries().len() == n
                && (0..n).all(|i| bytes(&remote, i).ok() == bytes(&local, i).ok())
                && remote.summary().metadata == local.summary().metadata;
            checks.check(equal, format!("[{}] {name}: the whole model, {n} tensors as locally", server.name()));
        }
        let missing = server.url("alone-00002-of-00004.gguf");
        match TensorFile::open(server.url("alone-00001-of-00004.gguf")) {
            Ok(_) => checks.check(false, format!("[{}] a model of one part in four opened", server.name())),
            Err(e) => checks.check(
                e.rule() == Some(tensorfile::Rule::MissingFile) && e.to_string().contains(&missing),
                format!("[{}] a missing part names its URL: {e}", server.name()),
            ),
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Faults of the network, injected by a loopback server of the tests' own (`servers/faults.rs`):
// nothing to install, so these always run.

/// The bounds the fault tests run under: short, so that a read that fails does so in a second
/// or two. They are set in the environment of a child process of this test binary that runs
/// the `fault_*` tests (ignored in a plain run), not in this process, whose tests read from
/// nginx and moto under the library's defaults.
const FAULT_BOUNDS: [(&str, &str); 3] = [
    ("TENSORFILE_REMOTE_TIMEOUT", "2"),
    ("TENSORFILE_REMOTE_STALL_TIMEOUT", "0.3"),
    ("TENSORFILE_REMOTE_BACKOFF", "0.01"),
];
const FAULT_TIMEOUT: Duration = Duration::from_secs(2);
const FAULT_STALL: Duration = Duration::from_millis(300);
/// Set in the child process that runs the fault tests.
const FAULT_CHILD_ENV: &str = "TENSORFILE_FAULT_TESTS";
const RUN_BY: &str = "run by faults_of_the_network_are_survived_or_bounded, with short bounds";

/// The bucket (GCS) and container (Azure) the cloud tests read `model.bin` from, served by
/// the parent's [`FaultServer`] with its bytes from [`pattern`]`(CLOUD_SEED, CLOUD_LEN)`.
const CLOUD_BUCKET: &str = "tensorfile";
const CLOUD_SEED: u64 = 99;
const CLOUD_LEN: u64 = 2 * MIB + 17;
/// The credentials each ecosystem takes from its environment, pointed at that server: a
/// bearer token and a base URL for GCS (its XML API); the emulator's account and key for
/// Azure (requests signed with Shared Key), at the emulator's URL.
fn cloud_env(endpoint: &str) -> [(&'static str, String); 6] {
    [
        ("GOOGLE_BASE_URL", endpoint.to_string()),
        ("GOOGLE_BEARER_TOKEN", "tensorfile-test-token".into()),
        ("GOOGLE_ALLOW_HTTP", "true".into()),
        ("AZURE_STORAGE_USE_EMULATOR", "true".into()),
        ("AZURITE_BLOB_STORAGE_URL", endpoint.to_string()),
        ("AZURE_ALLOW_HTTP", "true".into()),
    ]
}

/// Runs the ignored tests (`fault_*`, `cloud_*`) in a child process with [`FAULT_BOUNDS`]
/// and, for `cloud_*`, the environment of [`cloud_env`] pointing at a [`FaultServer`] of this
/// process; fails with their output when one fails. Then checks what that server saw: each
/// ecosystem's requests, ranged and signed as it signs them.
#[test]
fn faults_of_the_network_are_survived_or_bounded() {
    let started = Instant::now();
    let cloud = FaultServer::start();
    let object = pattern(CLOUD_SEED, CLOUD_LEN);
    cloud.put(&format!("/{CLOUD_BUCKET}/model.bin"), object.clone(), "gcs-1");
    cloud.put(&format!("/devstoreaccount1/{CLOUD_BUCKET}/model.bin"), object, "azure-1");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--test-threads=16"])
        .envs(FAULT_BOUNDS)
        .envs(cloud_env(&cloud.endpoint()))
        .env(FAULT_CHILD_ENV, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{stdout}{stderr}");
    let passed = stdout.lines().find_map(|l| {
        l.strip_prefix("test result: ok. ").and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok())
    });
    assert!(out.status.success(), "the fault tests failed:\n{stdout}{stderr}");
    assert!(passed >= Some(16_u32), "fewer fault tests ran than written ({passed:?}):\n{stdout}");
    eprintln!("fault tests: {} in {:.1?}", passed.unwrap_or(0), started.elapsed());

    let seen = cloud.seen();
    let saw = |path: &str, auth: &str| {
        seen.iter().any(|s| {
            s.method == "GET"
                && s.target.split('?').next() == Some(path)
                && s.range == Some(1000..6000)
                && s.headers.iter().any(|(k, v)| k == "authorization" && v.starts_with(auth))
        })
    };
    let requests: Vec<String> = seen.iter().map(|s| format!("{} {} {:?}", s.method, s.target, s.range)).collect();
    assert!(
        saw(&format!("/{CLOUD_BUCKET}/model%2Ebin"), "Bearer tensorfile-test-token"),
        "no GCS GET of bytes 1000..6000 with the bearer token: {requests:#?}"
    );
    assert!(
        saw(&format!("/devstoreaccount1/{CLOUD_BUCKET}/model.bin"), "SharedKey devstoreaccount1:"),
        "no Azure GET of bytes 1000..6000 signed with the account's key: {requests:#?}"
    );
}

/// `url` read by range: a small range (one request) and a large one (streamed in parts) equal
/// the object's bytes.
fn read_cloud_object(url: &str) {
    if !in_fault_child() {
        return;
    }
    let expected = pattern(CLOUD_SEED, CLOUD_LEN);
    let src = Source::open_url(url).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(src.len(), CLOUD_LEN);
    let small = src.range(1000, 5000).unwrap_or_else(|e| panic!("{e}"));
    assert!(*small == expected[1000..6000], "{url}: bytes 1000..6000 differ");
    let large = src.range(7, CLOUD_LEN - 7).unwrap_or_else(|e| panic!("{e}"));
    assert!(*large == expected[7..], "{url}: bytes 7.. differ");
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with its server's environment"]
fn cloud_a_gs_object_is_read_by_range_with_credentials_from_the_environment() {
    read_cloud_object(&format!("gs://{CLOUD_BUCKET}/model.bin"));
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with its server's environment"]
fn cloud_an_az_object_is_read_by_range_with_credentials_from_the_environment() {
    read_cloud_object(&format!("az://{CLOUD_BUCKET}/model.bin"));
}

/// Whether this is the child process that runs the fault tests; else (`--include-ignored`)
/// they say `skipped:` and pass, their bounds and servers not set up.
fn in_fault_child() -> bool {
    let child = std::env::var_os(FAULT_CHILD_ENV).is_some();
    if !child {
        eprintln!("skipped: {RUN_BY}");
    }
    child
}

/// A fault server serving `len` bytes of a pattern at `/object.bin` (ETag `v1`): the server,
/// the object's URL and its bytes; `None` outside the child process of the fault tests.
fn fault_server(len: u64) -> Option<(FaultServer, String, Vec<u8>)> {
    if !in_fault_child() {
        return None;
    }
    let server = FaultServer::start();
    let bytes = pattern(len, len);
    server.put("/object.bin", bytes.clone(), "v1");
    let url = format!("{}/object.bin", server.endpoint());
    Some((server, url, bytes))
}

/// Read `offset..offset + len` of `url` (a fresh open): the bytes or the error, and the time
/// the read took (the open not counted).
fn read_range(url: &str, offset: u64, len: u64) -> (tensorfile::Result<Vec<u8>>, Duration) {
    let src = Source::open_url(url).unwrap_or_else(|e| panic!("opening {url}: {e}"));
    let started = Instant::now();
    let read = src.range(offset, len).map(|b| b.to_vec());
    (read, started.elapsed())
}

/// The read completed with the right bytes, and the server saw these `GET` ranges.
#[track_caller]
fn assert_resumed(
    server: &FaultServer,
    read: tensorfile::Result<Vec<u8>>,
    expected: &[u8],
    ranges: &[std::ops::Range<u64>],
) {
    let got = read.unwrap_or_else(|e| panic!("the read failed: {e}"));
    assert!(got == expected, "wrong bytes ({} read, {} expected)", got.len(), expected.len());
    assert_eq!(server.get_ranges(), ranges, "the ranges the server saw");
    eprintln!("resumed, the server saw: {:?}", server.get_ranges());
}

/// The read failed, within `bound`, with a message naming the URL, the range and `cause`.
#[track_caller]
fn assert_failed(
    read: tensorfile::Result<Vec<u8>>,
    took: Duration,
    bound: Duration,
    url: &str,
    range: &str,
    cause: &str,
) {
    let Err(e) = read else { panic!("the read succeeded") };
    let message = e.to_string();
    eprintln!("failed after {took:.2?}: {message}");
    assert!(took <= bound, "took {took:?}, more than {bound:?}: {message}");
    for part in [url, range, cause] {
        assert!(message.contains(part), "the message names no {part:?}: {message}");
    }
}

const FAULT_LEN: u64 = 3 * MIB;

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_connection_reset_midway_is_resumed_from_the_byte_reached() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    server.inject([Fault::Reset { after: 1_000_000 }]);
    let (read, _) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 1_000_000..FAULT_LEN]);
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_body_cut_off_at_a_chosen_byte_is_resumed_from_it() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    server.inject([Fault::Cut { after: 1_234_567 }, Fault::Pass, Fault::Cut { after: 1000 }]);
    let (read, _) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 1_234_567..FAULT_LEN]);
    // A small range (one request, not streamed in parts) alike.
    let (read, _) = read_range(&url, 100_000, 200_000);
    let ranges = [0..FAULT_LEN, 1_234_567..FAULT_LEN, 100_000..300_000, 101_000..300_000];
    assert_resumed(&server, read, &bytes[100_000..300_000], &ranges);
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_response_shorter_than_asked_is_resumed_from_its_end() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    server.inject([Fault::Short { after: 777_777 }]);
    let (read, _) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 777_777..FAULT_LEN]);
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_stalled_body_is_resumed_after_the_stall_timeout() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    server.inject([Fault::Stall { after: 500_000 }]);
    let (read, took) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 500_000..FAULT_LEN]);
    assert!(took >= FAULT_STALL && took < FAULT_TIMEOUT, "took {took:?}");
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_response_that_never_starts_is_asked_for_again() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    server.inject([Fault::StallHead]);
    let (read, took) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 0..FAULT_LEN]);
    assert!(took >= FAULT_STALL && took < FAULT_TIMEOUT, "took {took:?}");
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_429_is_retried_after_its_retry_after() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    server.inject([Fault::Status(429, Some(1))]);
    let (read, _) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 0..FAULT_LEN]);
    let gets: Vec<Duration> = server.seen().iter().filter(|s| s.method == "GET").map(|s| s.at).collect();
    let waited = gets[1] - gets[0];
    eprintln!("retried {waited:.2?} after the 429");
    assert!(waited >= Duration::from_secs(1), "retried after {waited:?}, before its Retry-After of 1 s");
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_503_is_retried_after_its_retry_after_date() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    // An HTTP-date at least two seconds ahead (dates are whole seconds).
    server.inject([Fault::StatusUntil(503, 1)]);
    let (read, _) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 0..FAULT_LEN]);
    let gets: Vec<Duration> = server.seen().iter().filter(|s| s.method == "GET").map(|s| s.at).collect();
    let waited = gets[1] - gets[0];
    eprintln!("retried {waited:.2?} after the 503 with a date");
    assert!(waited >= Duration::from_millis(1000), "retried after {waited:?}, before its Retry-After date");
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_server_errors_in_a_row_are_retried() {
    let Some((server, url, bytes)) = fault_server(FAULT_LEN) else { return };
    server.inject([Fault::Status(500, None), Fault::Status(502, None), Fault::Status(504, None)]);
    let (read, _) = read_range(&url, 0, FAULT_LEN);
    assert_resumed(&server, read, &bytes, &[0..FAULT_LEN, 0..FAULT_LEN, 0..FAULT_LEN, 0..FAULT_LEN]);
}

/// An object that changes after it was opened, before a read or between the parts of one, is
/// an error saying so: never bytes of two versions.
#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_an_object_changed_since_it_was_opened_is_an_error() {
    let len = 9 * MIB; // three parts
    let Some((server, url, _)) = fault_server(len) else { return };
    let changed = Fault::Change { bytes: pattern(7, len), etag: "v2".into() };
    server.inject([changed.clone()]);
    let (read, took) = read_range(&url, 0, 100);
    assert_failed(read, took, FAULT_TIMEOUT, &url, "bytes 0..100", "changed since it was opened (ETag \"v1\" then");
    // Between the parts of one range.
    server.put("/object.bin", pattern(len, len), "v1");
    let src = Source::open_url(&url).unwrap();
    server.inject([Fault::Pass, changed]);
    let started = Instant::now();
    let read = src.range(0, len).map(|b| b.to_vec());
    assert_failed(read, started.elapsed(), FAULT_TIMEOUT, &url, "bytes ", "changed since it was opened");
    let gets: Vec<_> = server.seen().into_iter().filter(|s| s.method == "GET").collect();
    assert!(gets.iter().all(|s| s.if_match.as_deref() == Some("\"v1\"")), "every GET asks for ETag v1: {gets:?}");
}

/// A server that ignores `If-Match`, whose object changes while a response is cut off: the
/// resumed response's ETag is another, and the read fails.
#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_an_object_changed_midway_through_a_response_is_an_error() {
    let Some((server, url, _)) = fault_server(FAULT_LEN) else { return };
    server.ignore_if_match();
    server.inject([Fault::Cut { after: 1_000_000 }, Fault::Change { bytes: pattern(8, FAULT_LEN), etag: "v2".into() }]);
    let (read, took) = read_range(&url, 0, FAULT_LEN);
    assert_failed(read, took, FAULT_TIMEOUT, &url, "bytes 0..3145728", "ETag \"v1\" then, ETag \"v2\" now");
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_server_that_keeps_answering_503_fails_within_the_bound() {
    let Some((server, url, _)) = fault_server(FAULT_LEN) else { return };
    server.always(Some(Fault::Status(503, None)));
    let (read, took) = read_range(&url, 0, FAULT_LEN);
    let bound = FAULT_TIMEOUT + Duration::from_millis(500);
    assert_failed(read, took, bound, &url, "bytes 0..3145728", "503");
    eprintln!("{} GETs", server.get_ranges().len());
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_server_whose_responses_keep_stalling_fails_within_the_bound() {
    let Some((server, url, _)) = fault_server(FAULT_LEN) else { return };
    server.always(Some(Fault::Stall { after: 1000 }));
    let (read, took) = read_range(&url, 0, FAULT_LEN);
    let bound = FAULT_TIMEOUT + Duration::from_millis(500);
    assert_failed(read, took, bound, &url, "bytes 0..3145728", "no bytes for 300ms");
    // Resumed from the byte reached each time.
    let starts: Vec<u64> = server.get_ranges().iter().map(|r| r.start).collect();
    assert!(starts.len() >= 2 && starts.iter().enumerate().all(|(k, &s)| s == 1000 * k as u64), "{starts:?}");
}

#[test]
#[ignore = "run by faults_of_the_network_are_survived_or_bounded, with short bounds"]
fn fault_a_server_that_never_answers_fails_within_the_bound() {
    let Some((server, url, _)) = fault_server(FAULT_LEN) else { return };
    server.always(Some(Fault::StallHead));
    let (read, took) = read_range(&url, 0, FAULT_LEN);
    let bound = FAULT_TIMEOUT + Duration::from_millis(500);
    assert_failed(read, took, bound, &url, "bytes 0..3145728", "no response within 300ms");
    eprintln!("{} GETs", server.get_ranges().len());
}

/// Set in the child process that runs the cache test: the cache's folder.
const CACHE_CHILD_ENV: &str = "TENSORFILE_CACHE_TEST_DIR";

#[test]
fn a_second_load_reads_the_cache_not_the_network() {
    // In a process of its own: the cache is process-wide, and the other tests count requests.
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "cache_ranges_in_a_process_of_their_own", "--test-threads=1"])
        .env(CACHE_CHILD_ENV, dir.path())
        .env(tensorfile::io::CACHE_DIR_ENV, dir.path())
        .env(tensorfile::io::CACHE_LIMIT_ENV, "20MB")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("test result: ok. 1 passed"), "{stdout}{stderr}");
}

#[test]
#[ignore = "run by a_second_load_reads_the_cache_not_the_network, in a process of its own"]
fn cache_ranges_in_a_process_of_their_own() {
    let Some(dir) = std::env::var_os(CACHE_CHILD_ENV) else {
        eprintln!("skipped: run by a_second_load_reads_the_cache_not_the_network");
        return;
    };
    let server = FaultServer::start();
    let len = 6 * 1024 * 1024;
    let v1 = pattern(7, len);
    server.put("/model.bin", v1.clone(), "v1");
    let url = format!("{}/model.bin", server.endpoint());
    // First load: from the network, kept.
    let (read, _) = read_range(&url, 0, len);
    assert_eq!(read.unwrap(), v1);
    let first = server.get_ranges().len();
    assert!(first >= 2, "a 6 MiB range is fetched in parts: {first} requests");
    // Again (a new open, as a new process would): every part from the cache.
    let (read, _) = read_range(&url, 0, len);
    assert_eq!(read.unwrap(), v1);
    let (small, _) = read_range(&url, 1000, 5000);
    assert_eq!(small.unwrap(), &v1[1000..6000], "a range not cached is fetched");
    assert_eq!(server.get_ranges().len(), first + 1, "only the new small range went to the network");
    // The object changed (another ETag): another object in the cache, never the old bytes.
    let v2 = pattern(8, len);
    server.put("/model.bin", v2.clone(), "v2");
    let (read, _) = read_range(&url, 0, len);
    assert_eq!(read.unwrap(), v2);
    // Two readers at once on a cold object: both whole, whoever writes the cache first.
    let v3 = pattern(9, len);
    server.put("/other.bin", v3.clone(), "v3");
    let other = format!("{}/other.bin", server.endpoint());
    std::thread::scope(|s| {
        let a = s.spawn(|| read_range(&other, 0, len).0.unwrap());
        let b = s.spawn(|| read_range(&other, 0, len).0.unwrap());
        assert_eq!(a.join().unwrap(), v3);
        assert_eq!(b.join().unwrap(), v3);
    });
    // Held to its limit (20 MB: three 6 MiB objects do not fit).
    let mut total = 0u64;
    for object in std::fs::read_dir(&dir).unwrap().flatten() {
        for range in std::fs::read_dir(object.path()).unwrap().flatten() {
            total += range.metadata().unwrap().len();
        }
    }
    assert!(total <= 20_000_000, "the cache holds {total} bytes");
}
