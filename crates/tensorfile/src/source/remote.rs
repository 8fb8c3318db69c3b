//! Remote objects read by range through `object_store`: `http(s)://` (any server that honours
//! `Range`), `s3://`, `gs://` and `az://`, with credentials and endpoints from the usual
//! environment variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
//!
//! What survives the network: a failed request (5xx, 429 after its `Retry-After`, a refused
//! or reset connection, no response head within the stall timeout) is retried with exponential
//! backoff; a response cut off, stalled or ended short is resumed from the byte it reached; the
//! object's ETag seen when it was opened is pinned (`If-Match` on every request, and every
//! response's ETag compared), so that an object changed meanwhile is an error, never a mix of
//! two versions. A read that cannot complete fails after a bound, naming the URL, the range
//! and the last error. The bounds come from the environment at each open ([`Settings`]).
//!
//! The library's API is blocking; requests run on one small tokio runtime shared by every
//! remote object, and callers block on them.

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use futures::TryStreamExt;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, ClientConfigKey, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt,
    ObjectStoreScheme, RetryConfig, aws, azure, gcp, http,
};

use super::Bytes;
use super::cache::ObjectCache;
use super::kept::Kept;
use super::pool::Buffer;
use super::retry_after::retry_after;
use crate::error::{Error, ErrorKind, Result};

/// Ranges larger than this are fetched as several requests of this size, concurrently.
pub const PART_SIZE: u64 = 4 * 1024 * 1024;
/// Ranges larger than this are streamed into one buffer part by part; smaller ones are one
/// request.
const STREAM_FROM: u64 = 1024 * 1024;
/// How many attempts in a row at one range may bring no new byte before its read fails.
const STREAM_RETRIES: u32 = 3;
/// Requests in flight at once for the ranges of one object (whole small ranges and parts of
/// large ones), however many ranges are being fetched: a read fetching ahead fetches several.
pub const REQUESTS_IN_FLIGHT: usize = 8;
/// Requests in flight at once for many small ranges (an archive's local headers).
pub const SMALL_RANGES_IN_FLIGHT: usize = 32;
/// The longest wait between two attempts, and the longest `Retry-After` honoured.
const MAX_BACKOFF: Duration = Duration::from_secs(15);
/// Retries of one request by the store before it gives up (within [`Settings::timeout`]).
const MAX_RETRIES: usize = 8;

/// Seconds (`30`, `2.5`, `2s`, `250ms`) a read of one range may take, every retry and resume
/// included, before it fails (default 120).
const TIMEOUT_ENV: &str = "TENSORFILE_REMOTE_TIMEOUT";
/// Seconds a response may send nothing (its head, or its next bytes) before it is given up
/// and asked for again from the byte reached (default 30).
const STALL_ENV: &str = "TENSORFILE_REMOTE_STALL_TIMEOUT";
/// Seconds of the first wait before a retry, doubled at each retry up to 15 (default 0.1).
const BACKOFF_ENV: &str = "TENSORFILE_REMOTE_BACKOFF";

/// How remote reads wait and retry: [`TIMEOUT_ENV`], [`STALL_ENV`] and [`BACKOFF_ENV`], read
/// from the environment when an object is opened.
#[derive(Debug, Clone, Copy)]
struct Settings {
    timeout: Duration,
    stall: Duration,
    backoff: Duration,
}

impl Settings {
    fn from_env() -> Result<Settings> {
        Ok(Settings {
            timeout: duration_from_env(TIMEOUT_ENV, Duration::from_secs(120))?,
            stall: duration_from_env(STALL_ENV, Duration::from_secs(30))?,
            backoff: duration_from_env(BACKOFF_ENV, Duration::from_millis(100))?,
        })
    }

    /// The store's retries: exponential backoff from [`Settings::backoff`], within
    /// [`Settings::timeout`].
    fn retries(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: self.backoff,
                max_backoff: MAX_BACKOFF.max(self.backoff),
                base: 2.0,
            },
            max_retries: MAX_RETRIES,
            retry_timeout: self.timeout,
        }
    }

    /// The client settings this library chooses. Given to the S3, GCS and Azure builders key
    /// by key, not as a whole [`ClientOptions`], which would drop what their `from_env` read
    /// (such as `AWS_ALLOW_HTTP`). A request may take the whole [`Settings::timeout`]; one
    /// that stalls is cut off sooner ([`Watched`], [`RemoteObject::attempt`]).
    fn client_config(&self) -> [(ClientConfigKey, String); 3] {
        let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
        [
            (ClientConfigKey::ConnectTimeout, ms(self.stall.min(Duration::from_secs(10)))),
            (ClientConfigKey::Timeout, ms(self.timeout)),
            (ClientConfigKey::PoolMaxIdlePerHost, SMALL_RANGES_IN_FLIGHT.to_string()),
        ]
    }
}

/// The duration in the environment variable `name`, else `default`.
fn duration_from_env(name: &str, default: Duration) -> Result<Duration> {
    match std::env::var(name) {
        Ok(text) => parse_duration(&text).ok_or_else(|| {
            Error::usage(format!("{name}={text}: not a duration (seconds above 0, such as 30, 2.5, 2s or 250ms)"))
        }),
        Err(_) => Ok(default),
    }
}

/// Seconds, bare or with `s`, or milliseconds with `ms`; above 0.
fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, scale) = match (text.strip_suffix("ms"), text.strip_suffix('s')) {
        (Some(n), _) => (n, 1e-3),
        (None, Some(n)) => (n, 1.0),
        (None, None) => (text, 1.0),
    };
    let seconds: f64 = number.trim().parse().ok()?;
    Duration::try_from_secs_f64(seconds * scale).ok().filter(|d| !d.is_zero())
}

/// The last request of an object's store that failed, when, and in words: what a read that
/// gives up while the store is still retrying reports.
type LastFailure = Arc<Mutex<Option<(tokio::time::Instant, String)>>>;

/// The HTTP client of every store: reqwest's, with a bound on the wait for each response's
/// head ([`Settings::stall`]: past it, the request fails as timed out, which the store
/// retries), servers' `Retry-After` honoured (up to [`MAX_BACKOFF`], before the store's own
/// backoff), and every failure noted for the errors of [`RemoteObject`].
#[derive(Debug)]
struct Watched {
    inner: HttpClient,
    stall: Duration,
    last: LastFailure,
}

impl Watched {
    fn note(&self, what: String) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((tokio::time::Instant::now(), what));
    }

    async fn call_watched(&self, req: HttpRequest) -> std::result::Result<HttpResponse, HttpError> {
        let method = req.method().clone();
        let response = match tokio::time::timeout(self.stall, self.inner.execute(req)).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => {
                self.note(format!("{method}: {e}"));
                return Err(e);
            }
            Err(_) => {
                let why = format!("no response within {:?} ({STALL_ENV})", self.stall);
                self.note(format!("{method}: {why}"));
                return Err(HttpError::new(
                    HttpErrorKind::Timeout,
                    std::io::Error::new(std::io::ErrorKind::TimedOut, why),
                ));
            }
        };
        let status = response.status();
        if status.is_client_error() || status.is_server_error() {
            self.note(format!("{method}: the server answered {status}"));
        }
        if status.as_u16() == 429 || status.as_u16() == 503 {
            // Seconds or an HTTP-date.
            let after = response.headers().get("retry-after").and_then(|v| v.to_str().ok());
            if let Some(wait) = after.and_then(|v| retry_after(v, std::time::SystemTime::now())) {
                tokio::time::sleep(wait.min(MAX_BACKOFF)).await;
            }
        }
        Ok(response)
    }
}

impl HttpService for Watched {
    // What `#[async_trait]` would write (the crate is not a dependency of this one).
    fn call<'a, 'f>(
        &'a self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<HttpResponse, HttpError>> + Send + 'f>>
    where
        'a: 'f,
        Self: 'f,
    {
        Box::pin(self.call_watched(req))
    }
}

/// Makes each store's [`Watched`] client.
#[derive(Debug)]
struct Connector {
    stall: Duration,
    last: LastFailure,
}

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Watched { inner, stall: self.stall, last: self.last.clone() }))
    }
}

pub struct RemoteObject {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    len: u64,
    /// The ETag seen at open, asked for (`If-Match`) and checked on every response.
    etag: Option<String>,
    settings: Settings,
    last_failure: LastFailure,
    fetched: AtomicU64,
    kept: Kept,
    /// Permits for the requests of [`Self::range`], [`REQUESTS_IN_FLIGHT`] in all.
    requests: tokio::sync::Semaphore,
    /// Where its ranges are kept between loads ([`super::cache`]), when a cache is set.
    cache: Option<ObjectCache>,
}

/// Threads of the network runtime: one per core, two to four (receiving competes with the
/// caller for the cores; more threads than cores only switch between each other).
fn runtime_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 4)
}

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::io::Result<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(runtime_threads())
                .thread_name("tensorfile-remote")
                .enable_all()
                .build()
        })
        .as_ref()
        .map_err(|e| Error::new(ErrorKind::Remote(format!("cannot start the network runtime: {e}"))))
}

/// A cloud store (S3, GCS, Azure: builders of different types, configured alike) for `url`:
/// settings from the environment, then this library's client settings, retries and client.
macro_rules! cloud_store {
    ($builder:ty, $client_key:path, $url:expr, $settings:expr, $connector:expr) => {
        Arc::new(
            $settings
                .client_config()
                .into_iter()
                .fold(<$builder>::from_env().with_url($url), |b, (key, value)| b.with_config($client_key(key), value))
                .with_retry($settings.retries())
                .with_http_connector($connector)
                .build()
                .map_err(remote_error)?,
        )
    };
}

/// The store behind `url` and the object's path within it.
fn store_for(url: &str, settings: &Settings, connector: Connector) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
    let bad = |why: String| Error::usage(format!("{url}: {why}"));
    let parsed = url::Url::parse(url).map_err(|e| bad(format!("not a valid URL ({e})")))?;
    let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::Http => {
            let base = format!("{}://{}", parsed.scheme(), parsed.authority());
            let options = settings
                .client_config()
                .into_iter()
                .fold(ClientOptions::new(), |options, (key, value)| options.with_config(key, value))
                .with_allow_http(parsed.scheme() == "http");
            Arc::new(
                http::HttpBuilder::new()
                    .with_url(base)
                    .with_client_options(options)
                    .with_retry(settings.retries())
                    .with_http_connector(connector)
                    .build()
                    .map_err(remote_error)?,
            )
        }
        ObjectStoreScheme::AmazonS3 => {
            cloud_store!(aws::AmazonS3Builder, aws::AmazonS3ConfigKey::Client, url, settings, connector)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            cloud_store!(gcp::GoogleCloudStorageBuilder, gcp::GoogleConfigKey::Client, url, settings, connector)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            cloud_store!(azure::MicrosoftAzureBuilder, azure::AzureConfigKey::Client, url, settings, connector)
        }
        _ => return Err(bad("not a remote URL tensorfile reads (http, https, s3, gs, az)".into())),
    };
    Ok((store, path))
}

/// An object store's error; the URL is added by the caller, as a file path is.
fn remote_error(e: object_store::Error) -> Error {
    match e {
        object_store::Error::NotFound { .. } => {
            Error::from(std::io::Error::new(std::io::ErrorKind::NotFound, "no such object"))
        }
        e => Error::new(ErrorKind::Remote(e.to_string())),
    }
}

/// Why one attempt at a range stopped short.
enum Stop {
    /// Worth another attempt from the byte reached (a response cut off, stalled, ended short).
    Retry(String),
    /// The read fails (the store gave up retrying, the object changed, no such object).
    Fail(Error),
}

impl RemoteObject {
    pub fn open(url: &str) -> Result<RemoteObject> {
        let settings = Settings::from_env()?;
        let last_failure = LastFailure::default();
        let connector = Connector { stall: settings.stall, last: last_failure.clone() };
        let (store, path) = store_for(url, &settings, connector)?;
        let head = async { tokio::time::timeout(settings.timeout, store.head(&path)).await };
        let meta = match runtime()?.block_on(head) {
            Ok(meta) => meta.map_err(remote_error)?,
            Err(_) => {
                let last = last_failure.lock().unwrap_or_else(|e| e.into_inner()).take();
                return Err(Error::new(ErrorKind::Remote(format!(
                    "no answer to HEAD within {:?} ({TIMEOUT_ENV}); last error: {}",
                    settings.timeout,
                    last.map_or_else(|| "none".to_string(), |(_, what)| what)
                )))
                .in_file(url));
            }
        };
        let cache = super::cache::current()?
            .and_then(|c| ObjectCache::new(&c, url, meta.size, meta.e_tag.as_deref().filter(|e| !e.starts_with("W/"))));
        Ok(RemoteObject {
            cache,
            url: url.to_string(),
            store,
            path,
            len: meta.size,
            etag: meta.e_tag,
            settings,
            last_failure,
            fetched: AtomicU64::new(0),
            kept: Kept::default(),
            requests: tokio::sync::Semaphore::new(REQUESTS_IN_FLIGHT),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn bytes_fetched(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// A range already checked against the object's size.
    pub fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        if let Some(b) = self.kept.get(offset, len)? {
            return Ok(b);
        }
        let bytes = runtime()?.block_on(self.fetch(offset..offset + len))?;
        self.kept.keep(offset, &bytes);
        Ok(bytes)
    }

    /// Ranges already checked against the object's size, fetched concurrently: many small
    /// ones ([`SMALL_RANGES_IN_FLIGHT`] at a time, outside [`REQUESTS_IN_FLIGHT`]).
    pub fn ranges(&self, wanted: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        let fetch = futures::stream::iter(wanted.iter().map(|&(offset, len)| async move {
            match self.kept.get(offset, len)? {
                Some(b) => Ok(b),
                None if len <= STREAM_FROM => self.get(offset..offset + len).await,
                None => self.fetch(offset..offset + len).await,
            }
        }));
        runtime()?.block_on(fetch.buffered(SMALL_RANGES_IN_FLIGHT).try_collect())
    }

    /// One range: a single request when small, else parts of [`PART_SIZE`], each streamed
    /// straight into its place in one buffer; each request waits for one of the object's
    /// [`REQUESTS_IN_FLIGHT`] permits.
    async fn fetch(&self, range: Range<u64>) -> Result<Bytes> {
        let len = range.end - range.start;
        if len == 0 {
            return Ok(Bytes::from_vec(Vec::new()));
        }
        if len <= STREAM_FROM {
            let _permit = self.permit().await?;
            return self.get(range).await;
        }
        let cap = usize::try_from(len).map_err(|_| Error::unsupported("a range larger than the address space"))?;
        let mut out = Buffer::new(cap)
            .map_err(|e| Error::unsupported(format!("cannot allocate {len} bytes for a download: {e}")))?;
        let part = usize::try_from(PART_SIZE).unwrap_or(usize::MAX);
        let parts = out.as_mut().chunks_mut(part).enumerate().map(|(k, dst)| async move {
            let start = range.start + (k * part) as u64;
            let _permit = self.permit().await?;
            self.get_into(start..start + dst.len() as u64, dst).await
        });
        futures::stream::iter(parts).buffer_unordered(REQUESTS_IN_FLIGHT).try_collect::<()>().await?;
        out.freeze()
    }

    async fn permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>> {
        // The semaphore is never closed, and acquiring fails only on a closed one.
        self.requests.acquire().await.map_err(|e| Error::new(ErrorKind::Remote(e.to_string())))
    }

    /// A small range in a buffer of its own.
    async fn get(&self, range: Range<u64>) -> Result<Bytes> {
        let len = usize::try_from(range.end - range.start)
            .map_err(|_| Error::unsupported("a range larger than the address space"))?;
        let mut out = vec![0; len];
        self.get_into(range, &mut out).await?;
        Ok(Bytes::from_vec(out))
    }

    /// Bytes `range` streamed into `dst` (of the same length) as they arrive. The store
    /// retries a failed request and resumes a response cut off; what it gives up on midway,
    /// a response that stalls ([`STALL_ENV`]) and one that ends short are resumed here from
    /// the byte reached, until [`STREAM_RETRIES`] attempts in a row bring nothing or
    /// [`TIMEOUT_ENV`] has passed since the first request.
    async fn get_into(&self, range: Range<u64>, dst: &mut [u8]) -> Result<()> {
        if self.cache.as_ref().is_some_and(|c| c.read(range.start, dst)) {
            return Ok(());
        }
        self.fetch_into(&range, dst).await?;
        if let Some(cache) = &self.cache {
            cache.write(range.start, dst);
        }
        Ok(())
    }

    /// [`Self::get_into`] from the network.
    async fn fetch_into(&self, range: &Range<u64>, dst: &mut [u8]) -> Result<()> {
        let range = range.clone();
        let started = tokio::time::Instant::now();
        let deadline = started + self.settings.timeout;
        let mut backoff = self.settings.backoff;
        let mut at = 0;
        let (mut attempts, mut fruitless) = (0, 0);
        let mut why = String::from("no response");
        // Whole once every byte is in (a body that errs after its last byte included).
        while at < dst.len() {
            let before = at;
            let attempted = tokio::time::Instant::now();
            attempts += 1;
            why = match tokio::time::timeout_at(deadline, self.attempt(&range, dst, &mut at)).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(Stop::Fail(e))) => return Err(e),
                Ok(Err(Stop::Retry(why))) => why,
                // Cut off during an attempt: what the store saw last, if it saw it during this
                // attempt, else why the one before stopped.
                Err(_) => {
                    let last = self.last_failure.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    let last = last.filter(|(when, _)| *when >= attempted).map_or(why, |(_, what)| what);
                    return Err(self.gave_up(&range, at, (started, attempts), &last));
                }
            };
            if at > before {
                (fruitless, backoff) = (0, self.settings.backoff);
            } else {
                fruitless += 1;
            }
            if at < dst.len() {
                if fruitless > STREAM_RETRIES || tokio::time::Instant::now() + backoff >= deadline {
                    return Err(self.gave_up(&range, at, (started, attempts), &why));
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        Ok(())
    }

    /// One request for the rest of `range` from `*at` (bytes already in `dst`), its bytes put
    /// in place and `*at` moved past them as they arrive.
    async fn attempt(&self, range: &Range<u64>, dst: &mut [u8], at: &mut usize) -> std::result::Result<(), Stop> {
        let rest = range.start + *at as u64..range.end;
        let options = GetOptions {
            range: Some(GetRange::Bounded(rest.clone())),
            // A weak ETag never matches (`If-Match` compares strongly): compared below only.
            if_match: self.etag.clone().filter(|t| !t.starts_with("W/")),
            ..GetOptions::default()
        };
        let got = match self.store.get_opts(&self.path, options).await {
            Ok(got) => got,
            Err(e) => return Err(Stop::Fail(self.request_failed(range, e).await)),
        };
        if self.etag.is_some() && got.meta.e_tag != self.etag {
            return Err(Stop::Fail(self.changed(range, got.meta.e_tag.as_deref())));
        }
        let stall = self.settings.stall;
        let mut body = got.into_stream();
        loop {
            let piece = match tokio::time::timeout(stall, body.next()).await {
                Ok(None) => break,
                Ok(Some(Ok(piece))) => piece,
                Ok(Some(Err(e))) => return Err(Stop::Retry(e.to_string())),
                Err(_) => return Err(Stop::Retry(format!("no bytes for {stall:?} ({STALL_ENV})"))),
            };
            let end = *at + piece.len();
            let Some(slot) = dst.get_mut(*at..end) else {
                let what = format!("the server sent more than the {} bytes asked for", rest.end - rest.start);
                return Err(Stop::Fail(self.read_error(range, &what)));
            };
            slot.copy_from_slice(&piece);
            self.fetched.fetch_add(piece.len() as u64, Ordering::Relaxed);
            *at = end;
        }
        if *at != dst.len() {
            let got = range.start + *at as u64;
            return Err(Stop::Retry(format!("the response to bytes {}..{} ended at byte {got}", rest.start, rest.end)));
        }
        Ok(())
    }

    /// The error of a request the store gave up on: the object changed when its ETag no
    /// longer matches (a `412`, or a `HEAD` that shows another ETag).
    async fn request_failed(&self, range: &Range<u64>, e: object_store::Error) -> Error {
        if matches!(e, object_store::Error::NotFound { .. }) {
            return remote_error(e).in_file(&self.url);
        }
        if self.etag.is_some() {
            let head = tokio::time::timeout(self.settings.stall, self.store.head(&self.path)).await;
            if let Ok(Ok(meta)) = head {
                if meta.e_tag != self.etag {
                    return self.changed(range, meta.e_tag.as_deref());
                }
            }
            if matches!(e, object_store::Error::Precondition { .. }) {
                return self.changed(range, None);
            }
        }
        self.read_error(range, &e.to_string())
    }

    fn changed(&self, range: &Range<u64>, now: Option<&str>) -> Error {
        let was = self.etag.as_deref().unwrap_or_default();
        let now = now.map_or_else(|| "another one".to_string(), |t| format!("ETag {t}"));
        self.read_error(range, &format!("the object changed since it was opened (ETag {was} then, {now} now)"))
    }

    /// A read that stopped trying: after [`STREAM_RETRIES`] fruitless attempts in a row, or at
    /// [`TIMEOUT_ENV`]; `tried` is when the first attempt started and how many were made.
    fn gave_up(&self, range: &Range<u64>, at: usize, tried: (tokio::time::Instant, u32), last: &str) -> Error {
        let (started, attempts) = tried;
        let what = format!(
            "gave up after {:.1?} and {attempts} attempt{} ({TIMEOUT_ENV} is {:?}) with {at} of {} bytes read; last error: {last}",
            started.elapsed(),
            if attempts == 1 { "" } else { "s" },
            self.settings.timeout,
            range.end - range.start
        );
        self.read_error(range, &what)
    }

    fn read_error(&self, range: &Range<u64>, what: &str) -> Error {
        Error::new(ErrorKind::Remote(format!("bytes {}..{}: {what}", range.start, range.end))).in_file(&self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_in_seconds_or_milliseconds() {
        let ms = Duration::from_millis;
        for (text, want) in [("2", ms(2000)), (" 2.5 ", ms(2500)), ("2s", ms(2000)), ("250ms", ms(250)), ("0.01", ms(10))] {
            assert_eq!(parse_duration(text), Some(want), "{text}");
        }
        for text in ["", "0", "-1", "1m", "abc", "NaN", "inf", "1e30"] {
            assert_eq!(parse_duration(text), None, "{text}");
        }
    }
}
