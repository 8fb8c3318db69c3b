//! Real servers on loopback for the tests of remote reading, and what they sent.
//!
//! - [`Nginx`]: static files over HTTP, with `Range` (nginx from the Debian package
//!   `nginx-light`); what it sent is read from its access log.
//! - [`Moto`]: moto's S3 server (`pip install 'moto[server]'`), its executable from
//!   `TENSORFILE_MOTO` or `moto_server` on `PATH`; moto logs no byte counts, so tests reach it
//!   through a [`Proxy`] that counts.
//! - [`Proxy`]: a counting TCP proxy (std threads) that reads the HTTP/1.1 exchanges passing
//!   through it; it can answer the first connections with `503` to check retries.
//! - [`faults::FaultServer`]: an HTTP server of the tests' own that injects the faults of a bad
//!   network (nothing to install: its tests always run).
//!
//! What is counted, for both servers alike: the **body bytes of responses** (nginx's
//! `$body_bytes_sent`; for the proxy, the bytes after each response's head, framed by
//! `Content-Length` or chunked encoding, chunk framing left out). Status lines and headers are
//! not counted, so a `HEAD` or an error counts 0 bytes and a whole download counts exactly the
//! object's size.
//!
//! When a server is missing, [`unavailable`] fails the test if `TENSORFILE_REQUIRE_SERVERS=1`
//! (what CI sets), and otherwise prints a `skipped:` line and the test goes on without it.
#![allow(dead_code)] // each test binary uses its own part

pub mod faults;

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Set to `1` to fail, rather than skip, when a server is not installed.
pub const REQUIRE_ENV: &str = "TENSORFILE_REQUIRE_SERVERS";
/// The moto server executable (else `moto_server` on `PATH`).
pub const MOTO_ENV: &str = "TENSORFILE_MOTO";

/// What a server sent: responses and their body bytes (headers not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub requests: u64,
    pub body_bytes: u64,
}

impl std::ops::Sub for Traffic {
    type Output = Traffic;
    fn sub(self, earlier: Traffic) -> Traffic {
        Traffic { requests: self.requests - earlier.requests, body_bytes: self.body_bytes - earlier.body_bytes }
    }
}

impl std::fmt::Display for Traffic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} body bytes in {} responses", self.body_bytes, self.requests)
    }
}

/// A server this machine lacks: a failure when [`REQUIRE_ENV`] is `1`, else a `skipped:` line.
pub fn unavailable(what: &str, install: &str) {
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{what} not found and {REQUIRE_ENV}=1: install ({install})");
    }
    eprintln!("skipped: {what} not found (install: {install}; set {REQUIRE_ENV}=1 to fail instead)");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

fn wait_for_port(port: u16, child: &mut Child, what: &str, log: &Path, timeout: Duration) {
    let start = Instant::now();
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Some(status) = child.try_wait().expect("the server's status") {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!("{what} exited ({status}) before listening on port {port}:\n{log}");
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let log = std::fs::read_to_string(log).unwrap_or_default();
            panic!("{what} did not listen on port {port} within {timeout:?}:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One plain HTTP/1.1 request on a new connection (`Connection: close`), the body streamed
/// from `body` when given: the status and the response's body.
pub fn http_request(port: u16, method: &str, path: &str, body: Option<&Path>) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let len = body.map_or(0, |p| std::fs::metadata(p).expect("the body's file").len());
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    if let Some(p) = body {
        io::copy(&mut std::fs::File::open(p).expect("open the body"), &mut s).expect("send the body");
    }
    let mut response = Vec::new();
    s.read_to_end(&mut response).expect("receive");
    let end = response.windows(4).position(|w| w == b"\r\n\r\n").map_or(response.len(), |i| i + 4);
    let status = std::str::from_utf8(&response[..end])
        .ok()
        .and_then(|h| h.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {:?}", String::from_utf8_lossy(&response)));
    (status, response[end..].to_vec())
}

// ---------------------------------------------------------------------------------------------
// nginx

/// An nginx serving the files of a folder on a loopback port; killed on drop.
pub struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
    marks: AtomicU64,
}

fn nginx_executable() -> Option<PathBuf> {
    let system = PathBuf::from("/usr/sbin/nginx");
    if system.is_file() { Some(system) } else { on_path("nginx") }
}

/// Whether nginx is installed (nothing said when it is not).
pub fn nginx_installed() -> bool {
    nginx_executable().is_some()
}

/// Whether moto's server is installed (nothing said when it is not).
pub fn moto_installed() -> bool {
    moto_executable().is_some()
}

impl Nginx {
    /// Serve `root`; `None` (after [`unavailable`]) when nginx is not installed.
    pub fn start(root: &Path) -> Option<Nginx> {
        let Some(exe) = nginx_executable() else {
            unavailable("nginx", "apt-get install -y nginx-light");
            return None;
        };
        let dir = tempfile::tempdir().expect("a temporary folder");
        let d = dir.path();
        for sub in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            std::fs::create_dir(d.join(sub)).expect("nginx's temporary folders");
        }
        let port = free_port();
        let config = format!(
            "daemon off;\n\
             master_process off;\n\
             worker_processes 1;\n\
             pid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n\
             \x20   client_body_temp_path {d}/client_body;\n\
             \x20   proxy_temp_path {d}/proxy;\n\
             \x20   fastcgi_temp_path {d}/fastcgi;\n\
             \x20   uwsgi_temp_path {d}/uwsgi;\n\
             \x20   scgi_temp_path {d}/scgi;\n\
             \x20   default_type application/octet-stream;\n\
             \x20   log_format counted '$request $status $body_bytes_sent $bytes_sent';\n\
             \x20   access_log {d}/access.log counted;\n\
             \x20   server {{\n\
             \x20       listen 127.0.0.1:{port};\n\
             \x20       root {root};\n\
             \x20       location / {{ }}\n\
             \x20   }}\n\
             }}\n",
            d = d.display(),
            root = root.display(),
        );
        std::fs::write(d.join("nginx.conf"), config).expect("nginx's configuration");
        let log = d.join("error.log");
        let mut child = Command::new(&exe)
            .arg("-p")
            .arg(d)
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .arg("-e")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("stderr.log")).expect("a log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        wait_for_port(port, &mut child, "nginx", &log, Duration::from_secs(20));
        Some(Nginx { child, dir, port, marks: AtomicU64::new(0) })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of a file of the served folder.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// What was sent since the start, once every request answered before this call is in the
    /// access log: a marker request is made and the log waited on until it shows it (one
    /// worker logs each request as it finishes, in order). Marker requests are not counted.
    pub fn traffic(&self) -> Traffic {
        let mark = format!("/.tensorfile-mark-{}", self.marks.fetch_add(1, Ordering::Relaxed));
        let (status, _) = http_request(self.port, "GET", &mark, None);
        assert_eq!(status, 404, "nginx's answer to a marker request");
        let log = self.dir.path().join("access.log");
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            if let Some(at) = lines.iter().position(|l| l.split_whitespace().nth(1) == Some(mark.as_str())) {
                let mut t = Traffic::default();
                for line in &lines[..at] {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    if fields.get(1).is_some_and(|p| p.starts_with("/.tensorfile-mark-")) {
                        continue;
                    }
                    // `$request $status $body_bytes_sent $bytes_sent`: the request has spaces.
                    let body = fields.iter().rev().nth(1).and_then(|b| b.parse::<u64>().ok());
                    t.requests += 1;
                    t.body_bytes += body.unwrap_or_else(|| panic!("an access log line of another form: {line}"));
                }
                return t;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "nginx did not log {mark} within 20 s");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// At exit

/// What is undone when the test process exits (`static`s are never dropped).
enum Cleanup {
    Kill(i32),
    Remove(PathBuf),
}

static CLEANUPS: Mutex<Vec<Cleanup>> = Mutex::new(Vec::new());

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
    fn kill(pid: i32, signal: i32) -> i32;
}

extern "C" fn clean_up() {
    for cleanup in CLEANUPS.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        match cleanup {
            // SAFETY: signals a child process this process started; 9 is SIGKILL.
            Cleanup::Kill(pid) => unsafe {
                kill(pid, 9);
            },
            Cleanup::Remove(path) => {
                let _ = std::fs::remove_dir_all(path);
            }
        }
    }
}

fn at_exit(cleanup: Cleanup) {
    let mut cleanups = CLEANUPS.lock().unwrap_or_else(|e| e.into_inner());
    if cleanups.is_empty() {
        // SAFETY: registers a function that only signals processes and removes files.
        unsafe { atexit(clean_up) };
    }
    cleanups.push(cleanup);
}

/// Remove a folder (of test files kept in a `static`) when the process exits.
pub fn remove_at_exit(dir: &Path) {
    at_exit(Cleanup::Remove(dir.to_path_buf()));
}

// ---------------------------------------------------------------------------------------------
// moto

/// moto's S3 server on a loopback port; killed on drop, and at the process's exit when it
/// lives in a `static` (see [`Moto::kill_at_exit`]).
pub struct Moto {
    child: Mutex<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

fn moto_executable() -> Option<PathBuf> {
    match std::env::var_os(MOTO_ENV) {
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_file()),
        None => on_path("moto_server"),
    }
}

impl Moto {
    /// `None` (after [`unavailable`]) when moto's server is not installed.
    pub fn start() -> Option<Moto> {
        let Some(exe) = moto_executable() else {
            unavailable(
                "moto's S3 server",
                &format!("pip install 'moto[server]' and put moto_server on PATH or its path in {MOTO_ENV}"),
            );
            return None;
        };
        let dir = tempfile::tempdir().expect("a temporary folder");
        let log = dir.path().join("moto.log");
        let port = free_port();
        let out = std::fs::File::create(&log).expect("a log file");
        let mut child = Command::new(&exe)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            // Objects kept in memory, not spooled to temporary files: the disk may be short
            // of the gigabytes the tests upload.
            .env("MOTO_S3_DEFAULT_KEY_BUFFER_SIZE", (8u64 << 30).to_string())
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("a log file"))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        wait_for_port(port, &mut child, "moto_server", &log, Duration::from_secs(60));
        Some(Moto { child: Mutex::new(child), port, dir })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Make a bucket (moto checks no signature: a plain request does).
    pub fn create_bucket(&self, bucket: &str) {
        let (status, body) = http_request(self.port, "PUT", &format!("/{bucket}"), None);
        assert_eq!(status, 200, "creating bucket {bucket}: {}", String::from_utf8_lossy(&body));
    }

    /// Upload a local file as `bucket/key`, streamed.
    pub fn upload(&self, bucket: &str, key: &str, file: &Path) {
        let (status, body) = http_request(self.port, "PUT", &format!("/{bucket}/{key}"), Some(file));
        assert_eq!(status, 200, "uploading {key}: {}", String::from_utf8_lossy(&body));
    }

    /// Kill the server and remove its folder when the process exits: for a server kept in a
    /// `static`, which is never dropped.
    pub fn kill_at_exit(&'static self) {
        at_exit(Cleanup::Kill(self.child.lock().unwrap().id() as i32));
        at_exit(Cleanup::Remove(self.dir.path().to_path_buf()));
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The environment that makes `s3://` URLs reach `endpoint` (moto takes any credentials).
/// Set it before any test thread reads the environment (e.g. from one `OnceLock`).
pub fn set_s3_env(endpoint: &str) {
    let vars = [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    for (key, value) in vars {
        // SAFETY: called once, from tests that set it before they start any thread of their
        // own or read the environment concurrently.
        unsafe { std::env::set_var(key, value) };
    }
}

// ---------------------------------------------------------------------------------------------
// The counting proxy

#[derive(Default)]
struct Counts {
    responses: AtomicU64,
    body_bytes: AtomicU64,
    refused: AtomicU64,
    /// Requests passed on whose responses have not been passed back whole, and the most of
    /// them at once.
    in_flight: AtomicU64,
    most_in_flight: AtomicU64,
}

impl Counts {
    fn request_sent(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
    }

    fn response_done(&self) {
        let _ = self.in_flight.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// A TCP proxy in front of a loopback port that counts what the server sends back: responses
/// and their body bytes (see the module's notes). It can answer the next connections with
/// `HTTP/1.1 503` and close them ([`Proxy::refuse_next`]).
pub struct Proxy {
    port: u16,
    counts: Arc<Counts>,
    refuse: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let counts = Arc::new(Counts::default());
        let refuse = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, r, s) = (counts.clone(), refuse.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let (c, r) = (c.clone(), r.clone());
                std::thread::spawn(move || {
                    let _ = serve(client, upstream, &c, &r);
                });
            }
        });
        Proxy { port, counts, refuse, stop }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Answer the next `n` connections' first request with `503 Service Unavailable` and close
    /// them, without reaching the server.
    pub fn refuse_next(&self, n: usize) {
        self.refuse.store(n, Ordering::SeqCst);
    }

    /// Requests answered with `503` so far.
    pub fn refused(&self) -> u64 {
        self.counts.refused.load(Ordering::SeqCst)
    }

    /// The most requests in flight at once since the last call (a request is in flight from
    /// when the proxy has it until before the last byte of its response is passed back, so
    /// that a client never sees fewer than are counted).
    pub fn take_most_in_flight(&self) -> u64 {
        self.counts.most_in_flight.swap(self.counts.in_flight.load(Ordering::SeqCst), Ordering::SeqCst)
    }

    /// What the server sent through the proxy so far (the `503`s are not counted). Bytes are
    /// counted before they are passed on, so whatever a client has received is counted.
    pub fn traffic(&self) -> Traffic {
        Traffic {
            requests: self.counts.responses.load(Ordering::SeqCst),
            body_bytes: self.counts.body_bytes.load(Ordering::SeqCst),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The head of a request or response (through the blank line), `None` at a clean end.
fn read_head(r: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        if r.read_until(b'\n', &mut head)? == 0 {
            return if head.is_empty() { Ok(None) } else { Err(io::ErrorKind::UnexpectedEof.into()) };
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            return Ok(Some(head));
        }
    }
}

/// The first line's words and the value of a header (case-insensitive name).
struct Head {
    first: Vec<String>,
    headers: Vec<(String, String)>,
}

impl Head {
    fn parse(raw: &[u8]) -> Head {
        let text = String::from_utf8_lossy(raw);
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default().split_whitespace().map(str::to_string).collect();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Head { first, headers }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> Option<u64> {
        self.header("content-length").map(|v| v.parse().expect("a numeric Content-Length"))
    }

    fn chunked(&self) -> bool {
        self.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    }
}

/// A writer that adds what it is given to a counter before writing it.
struct Counting<'a, W: Write> {
    inner: W,
    counter: Option<&'a AtomicU64>,
}

impl<W: Write> Write for Counting<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(c) = self.counter {
            c.fetch_add(buf.len() as u64, Ordering::SeqCst);
        }
        self.inner.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The methods of requests passed on whose responses have not come back yet.
#[derive(Default)]
struct Pending {
    methods: Mutex<(VecDeque<String>, bool)>,
    changed: Condvar,
}

impl Pending {
    fn push(&self, method: Option<String>) {
        let mut m = self.methods.lock().unwrap();
        match method {
            Some(method) => m.0.push_back(method),
            None => m.1 = true,
        }
        self.changed.notify_all();
    }

    fn try_pop(&self) -> Option<String> {
        self.methods.lock().unwrap().0.pop_front()
    }

    fn pop(&self) -> Option<String> {
        let mut m = self.methods.lock().unwrap();
        loop {
            if let Some(method) = m.0.pop_front() {
                return Some(method);
            }
            if m.1 {
                return None;
            }
            m = self.changed.wait(m).unwrap();
        }
    }
}

fn serve(client: TcpStream, upstream: u16, counts: &Arc<Counts>, refuse: &AtomicUsize) -> io::Result<()> {
    if refuse.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
        let mut from_client = BufReader::new(&client);
        read_head(&mut from_client)?;
        counts.refused.fetch_add(1, Ordering::SeqCst);
        (&client).write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        return client.shutdown(Shutdown::Both);
    }
    let server = TcpStream::connect(("127.0.0.1", upstream))?;
    let pending = Arc::new(Pending::default());
    let requests = {
        let (client, server, pending) = (client.try_clone()?, server.try_clone()?, pending.clone());
        let counts = Arc::clone(counts);
        std::thread::spawn(move || {
            let result = pass_requests(&client, &server, &pending, &counts);
            pending.push(None);
            let _ = server.shutdown(Shutdown::Write);
            result
        })
    };
    let result = pass_responses(&server, &client, &pending, counts);
    // Requests whose responses will never come.
    while pending.try_pop().is_some() {
        counts.response_done();
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
    let _ = requests.join();
    result
}

fn pass_requests(client: &TcpStream, server: &TcpStream, pending: &Pending, counts: &Counts) -> io::Result<()> {
    let mut from = BufReader::new(client);
    let mut to = server;
    while let Some(raw) = read_head(&mut from)? {
        let head = Head::parse(&raw);
        assert!(!head.chunked(), "the counting proxy does not pass chunked request bodies");
        counts.request_sent();
        pending.push(Some(head.first.first().cloned().unwrap_or_default()));
        to.write_all(&raw)?;
        let len = head.content_length().unwrap_or(0);
        io::copy(&mut (&mut from).take(len), &mut to)?;
    }
    Ok(())
}

fn pass_responses(server: &TcpStream, client: &TcpStream, pending: &Pending, counts: &Counts) -> io::Result<()> {
    let mut open = false;
    let result = relay_responses(server, client, pending, counts, &mut open);
    if open {
        // Cut off midway: no longer in flight.
        counts.response_done();
    }
    result
}

/// Pass responses back; `open` says whether one has been started and not finished.
fn relay_responses(
    server: &TcpStream,
    client: &TcpStream,
    pending: &Pending,
    counts: &Counts,
    open: &mut bool,
) -> io::Result<()> {
    let finish = |open: &mut bool| {
        *open = false;
        counts.response_done();
    };
    let mut from = BufReader::new(server);
    let mut body = Counting { inner: client, counter: Some(&counts.body_bytes) };
    let mut framing = Counting { inner: client, counter: None };
    while let Some(raw) = read_head(&mut from)? {
        let head = Head::parse(&raw);
        let status: u16 = head.first.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        if (100..200).contains(&status) {
            framing.write_all(&raw)?;
            continue;
        }
        let method = pending.pop().unwrap_or_default();
        counts.responses.fetch_add(1, Ordering::SeqCst);
        *open = true;
        let len = head.content_length();
        let bodiless = method == "HEAD" || status == 204 || status == 304;
        if bodiless || (len == Some(0) && !head.chunked()) {
            finish(open);
            framing.write_all(&raw)?;
            continue;
        }
        framing.write_all(&raw)?;
        if head.chunked() {
            loop {
                let mut size_line = Vec::new();
                from.read_until(b'\n', &mut size_line)?;
                let size_text = String::from_utf8_lossy(&size_line);
                let size_text = size_text.trim().split(';').next().unwrap_or("").to_string();
                let size = u64::from_str_radix(&size_text, 16)
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a bad chunk size"))?;
                if size == 0 {
                    finish(open);
                    framing.write_all(&size_line)?;
                    // Trailers, through the blank line.
                    let trailer = read_head(&mut from)?.unwrap_or_default();
                    framing.write_all(&trailer)?;
                    break;
                }
                framing.write_all(&size_line)?;
                io::copy(&mut (&mut from).take(size), &mut body)?;
                let mut crlf = Vec::new();
                from.read_until(b'\n', &mut crlf)?;
                framing.write_all(&crlf)?;
            }
        } else if let Some(len) = len {
            // In flight until its last byte: done before that byte is passed on.
            io::copy(&mut (&mut from).take(len - 1), &mut body)?;
            finish(open);
            io::copy(&mut (&mut from).take(1), &mut body)?;
        } else {
            // Delimited by the end of the connection.
            io::copy(&mut from, &mut body)?;
            finish(open);
            break;
        }
    }
    Ok(())
}
