//! A loopback HTTP/1.1 server of the tests' own (std threads, nothing to install) that serves
//! objects by range and injects the faults of a bad network: statuses (`429` with
//! `Retry-After`, `5xx`), a connection reset or closed midway through a body, a body shorter
//! than asked, a response that stalls, an object that changes between two requests.
//!
//! It speaks what `object_store` sends: `HEAD` (200 with `Content-Length`, `ETag`,
//! `Last-Modified`) and `GET` with `Range: bytes=a-b` (206 with `Content-Range`), `If-Match`
//! answered `412` when the ETag differs (unless told to ignore it), keep-alive connections.
//! Every request is logged ([`Seen`]) so that tests can assert on the ranges asked for, and
//! the headers of each (credentials) are kept. Paths are percent-decoded, so that it serves
//! the paths of GCS's XML API (`/bucket/object`) and of Azure's blob API
//! (`/account/container/blob`) as well as plain ones.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Head, read_head};

/// How long a stalled response holds its connection before closing it (longer than any stall
/// timeout the tests set).
const STALL_FOR: Duration = Duration::from_secs(10);

/// A fault injected into the answer to one `GET`.
#[derive(Clone, Debug)]
pub enum Fault {
    /// None: the request answered as it should be (to let requests through before a fault).
    Pass,
    /// This status, with `Retry-After: seconds` when given, and a short body.
    Status(u16, Option<u64>),
    /// This status, with `Retry-After` as an HTTP-date (IMF-fixdate) this many seconds after
    /// the answer (rounded up to the second), and a short body.
    StatusUntil(u16, u64),
    /// The head and the first `after` bytes of the body, then a TCP reset.
    Reset { after: u64 },
    /// The head and the first `after` bytes of the body, then the connection closed.
    Cut { after: u64 },
    /// A 206 whose `Content-Length` (and body) stops after `after` bytes of the range asked.
    Short { after: u64 },
    /// The head and the first `after` bytes of the body, then nothing.
    Stall { after: u64 },
    /// No answer at all.
    StallHead,
    /// The object replaced by these bytes with this ETag before the request is answered.
    Change { bytes: Vec<u8>, etag: String },
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The request's target, query included.
    pub target: String,
    /// `Range: bytes=a-b`, as `a..b + 1`.
    pub range: Option<std::ops::Range<u64>>,
    pub if_match: Option<String>,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
    /// When it came, from the server's start.
    pub at: Duration,
}

struct Object {
    bytes: Arc<Vec<u8>>,
    etag: String,
}

#[derive(Default)]
struct State {
    /// Objects by path (the target without its query).
    objects: Mutex<HashMap<String, Object>>,
    /// Faults for the next `GET`s, one each, in order.
    next: Mutex<VecDeque<Fault>>,
    /// A fault for every `GET` once `next` is empty.
    always: Mutex<Option<Fault>>,
    log: Mutex<Vec<Seen>>,
    ignore_if_match: AtomicBool,
    stop: AtomicBool,
}

/// The server; it stops accepting when dropped.
pub struct FaultServer {
    port: u16,
    state: Arc<State>,
    started: Instant,
}

impl FaultServer {
    pub fn start() -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let state = Arc::new(State::default());
        let started = Instant::now();
        let s = state.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(client, &s, started);
                });
            }
        });
        FaultServer { port, state, started }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Serve `bytes` at `path` (starting with `/`) with this ETag (quotes added).
    pub fn put(&self, path: &str, bytes: Vec<u8>, etag: &str) {
        let object = Object { bytes: Arc::new(bytes), etag: format!("\"{etag}\"") };
        self.state.objects.lock().unwrap().insert(path.to_string(), object);
    }

    /// Inject these faults into the next `GET`s, one each.
    pub fn inject(&self, faults: impl IntoIterator<Item = Fault>) {
        self.state.next.lock().unwrap().extend(faults);
    }

    /// Inject this fault into every `GET` after those of [`FaultServer::inject`].
    pub fn always(&self, fault: Option<Fault>) {
        *self.state.always.lock().unwrap() = fault;
    }

    /// Answer `GET`s whatever their `If-Match` says (a server that does not check it).
    pub fn ignore_if_match(&self) {
        self.state.ignore_if_match.store(true, Ordering::SeqCst);
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.log.lock().unwrap().clone()
    }

    /// The ranges of the `GET`s so far, in the order they came.
    pub fn get_ranges(&self) -> Vec<std::ops::Range<u64>> {
        self.seen().into_iter().filter(|s| s.method == "GET").filter_map(|s| s.range).collect()
    }

    /// Time since the server started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// `bytes=a-b` as `a..b + 1` (the one form `object_store` sends).
fn parse_range(value: &str) -> Option<std::ops::Range<u64>> {
    let (a, b) = value.trim().strip_prefix("bytes=")?.split_once('-')?;
    let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a <= b).then_some(a..b + 1)
}

/// A request path with its `%XX` escapes decoded (GCS's client escapes every `.` and `/` of an
/// object's name).
fn percent_decoded(path: &str) -> String {
    let mut out = Vec::new();
    let mut bytes = path.bytes();
    while let Some(b) = bytes.next() {
        let hex = |b: Option<u8>| b.and_then(|b| (b as char).to_digit(16));
        match b {
            b'%' => match (hex(bytes.next()), hex(bytes.next())) {
                (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Answer the requests of one connection until it closes or a fault ends it.
fn serve(client: TcpStream, state: &State, started: Instant) -> io::Result<()> {
    let mut from = BufReader::new(client.try_clone()?);
    let mut to = client;
    while let Some(raw) = read_head(&mut from)? {
        let head = Head::parse(&raw);
        // Request bodies (none expected from reads) are skipped.
        io::copy(&mut (&mut from).take(head.content_length().unwrap_or(0)), &mut io::sink())?;
        let method = head.first.first().cloned().unwrap_or_default();
        let target = head.first.get(1).cloned().unwrap_or_default();
        let range = head.header("range").and_then(parse_range);
        let if_match = head.header("if-match").map(str::to_string);
        state.log.lock().unwrap().push(Seen {
            method: method.clone(),
            target: target.clone(),
            range: range.clone(),
            if_match: if_match.clone(),
            headers: head.headers.clone(),
            at: started.elapsed(),
        });
        let path = percent_decoded(target.split('?').next().unwrap_or_default());
        let fault = if method == "GET" {
            let next = state.next.lock().unwrap().pop_front();
            next.or_else(|| state.always.lock().unwrap().clone())
        } else {
            None
        };
        if let Some(Fault::Change { bytes, etag }) = &fault {
            let object = Object { bytes: Arc::new(bytes.clone()), etag: format!("\"{etag}\"") };
            state.objects.lock().unwrap().insert(path.clone(), object);
        }
        let object = state.objects.lock().unwrap().get(&path).map(|o| (o.bytes.clone(), o.etag.clone()));
        let Some((bytes, etag)) = object else {
            respond(&mut to, "404 Not Found", &[], b"no such object")?;
            continue;
        };
        let size = bytes.len() as u64;
        let validators = [("ETag", etag.clone()), ("Last-Modified", "Sun, 29 Nov 2026 00:00:00 GMT".to_string())];
        if method == "HEAD" {
            let mut headers = validators.to_vec();
            headers.push(("Accept-Ranges", "bytes".into()));
            write_head(&mut to, "200 OK", &headers, size)?;
            continue;
        }
        if method != "GET" {
            respond(&mut to, "405 Method Not Allowed", &[], b"")?;
            continue;
        }
        if let Some(Fault::Status(code, retry_after)) = fault {
            let headers: Vec<_> = retry_after.map(|s| ("Retry-After", s.to_string())).into_iter().collect();
            respond(&mut to, &format!("{code} Injected"), &headers, b"injected")?;
            continue;
        }
        if let Some(Fault::StatusUntil(code, seconds)) = fault {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
            let at = now.as_secs() + 1 + seconds;
            respond(&mut to, &format!("{code} Injected"), &[("Retry-After", imf_fixdate(at))], b"injected")?;
            continue;
        }
        if matches!(fault, Some(Fault::StallHead)) {
            stall(state);
            return Ok(());
        }
        let ignore = state.ignore_if_match.load(Ordering::SeqCst);
        if if_match.as_ref().is_some_and(|m| *m != etag && m != "*") && !ignore {
            respond(&mut to, "412 Precondition Failed", &validators, b"ETag does not match")?;
            continue;
        }
        let whole = 0..size;
        let served = range.clone().map(|r| r.start..r.end.min(size)).unwrap_or(whole);
        if served.start >= size.max(1) && range.is_some() {
            let headers = [("Content-Range", format!("bytes */{size}"))];
            respond(&mut to, "416 Range Not Satisfiable", &headers, b"")?;
            continue;
        }
        let mut headers = validators.to_vec();
        let status = match range {
            Some(_) => {
                headers.push(("Content-Range", format!("bytes {}-{}/{size}", served.start, served.end - 1)));
                "206 Partial Content"
            }
            None => "200 OK",
        };
        let body = &bytes[served.start as usize..served.end as usize];
        match fault {
            Some(Fault::Short { after }) => {
                let short = &body[..(after as usize).min(body.len())];
                write_head(&mut to, status, &headers, short.len() as u64)?;
                to.write_all(short)?;
            }
            Some(Fault::Reset { after }) => {
                write_head(&mut to, status, &headers, body.len() as u64)?;
                to.write_all(&body[..(after as usize).min(body.len())])?;
                to.flush()?;
                // Time for the client to take what was sent before the reset drops it.
                std::thread::sleep(Duration::from_millis(100));
                reset(&to);
                return Ok(());
            }
            Some(Fault::Cut { after }) => {
                write_head(&mut to, status, &headers, body.len() as u64)?;
                to.write_all(&body[..(after as usize).min(body.len())])?;
                to.shutdown(Shutdown::Both)?;
                return Ok(());
            }
            Some(Fault::Stall { after }) => {
                write_head(&mut to, status, &headers, body.len() as u64)?;
                to.write_all(&body[..(after as usize).min(body.len())])?;
                to.flush()?;
                stall(state);
                return Ok(());
            }
            _ => {
                write_head(&mut to, status, &headers, body.len() as u64)?;
                to.write_all(body)?;
            }
        }
    }
    Ok(())
}

fn write_head(to: &mut TcpStream, status: &str, headers: &[(&str, String)], len: u64) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    to.write_all(head.as_bytes())
}

fn respond(to: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) -> io::Result<()> {
    write_head(to, status, headers, body.len() as u64)?;
    to.write_all(body)
}

/// Hold the connection, sending nothing, until [`STALL_FOR`] has passed or the server stops.
fn stall(state: &State) {
    let until = Instant::now() + STALL_FOR;
    while Instant::now() < until && !state.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

unsafe extern "C" {
    fn setsockopt(fd: i32, level: i32, name: i32, value: *const std::ffi::c_void, len: u32) -> i32;
}

/// Close with a TCP reset (`SO_LINGER` of 0 seconds), not the orderly end of a close.
fn reset(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    // Linux's values (`struct linger`, `SOL_SOCKET`, `SO_LINGER`).
    #[repr(C)]
    struct Linger {
        on: i32,
        seconds: i32,
    }
    const SOL_SOCKET: i32 = 1;
    const SO_LINGER: i32 = 13;
    let linger = Linger { on: 1, seconds: 0 };
    // SAFETY: the descriptor is the open socket `stream` owns; the value is a `struct linger`
    // of the size passed, alive for the call.
    let done = unsafe {
        setsockopt(
            stream.as_raw_fd(),
            SOL_SOCKET,
            SO_LINGER,
            (&linger as *const Linger).cast(),
            std::mem::size_of::<Linger>() as u32,
        )
    };
    assert_eq!(done, 0, "setting SO_LINGER for a reset");
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) of seconds since 1970 (Howard Hinnant's
/// `civil_from_days`).
fn imf_fixdate(seconds: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (days, rest) = ((seconds / 86_400) as i64, seconds % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[test]
fn imf_fixdates_are_written_as_http_writes_them() {
    assert_eq!(imf_fixdate(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(imf_fixdate(1_835_481_599), "Tue, 29 Feb 2028 23:59:59 GMT");
}
