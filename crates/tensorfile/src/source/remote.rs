//! Remote objects read by range through `object_store`: `http(s)://` (any server that honours
//! `Range`), `s3://`, `gs://` and `az://`, with credentials and endpoints from the usual
//! environment variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and retries with exponential
//! backoff.
//!
//! The library's API is blocking; requests run on one small tokio runtime shared by every
//! remote object, and callers block on them.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, ClientConfigKey, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt,
    ObjectStoreScheme, RetryConfig, aws, azure, gcp, http,
};

use super::Bytes;
use super::kept::Kept;
use super::pool::Buffer;
use crate::error::{Error, ErrorKind, Result};

/// Ranges larger than this are fetched as several requests of this size, concurrently.
pub const PART_SIZE: u64 = 4 * 1024 * 1024;
/// Ranges larger than this are streamed into their buffer as they arrive (no copy of the
/// whole response first).
const STREAM_FROM: u64 = 1024 * 1024;
/// How many times a transfer cut off midway is started again.
const STREAM_RETRIES: u32 = 3;
/// Requests in flight at once for the ranges of one object (whole small ranges and parts of
/// large ones), however many ranges are being fetched: a read fetching ahead fetches several.
pub const REQUESTS_IN_FLIGHT: usize = 8;
/// Requests in flight at once for many small ranges (an archive's local headers).
pub const SMALL_RANGES_IN_FLIGHT: usize = 32;

pub struct RemoteObject {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    len: u64,
    fetched: AtomicU64,
    kept: Kept,
    /// Permits for the requests of [`Self::range`], [`REQUESTS_IN_FLIGHT`] in all.
    requests: tokio::sync::Semaphore,
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

fn retries() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: 8,
        retry_timeout: Duration::from_secs(120),
    }
}

fn client_options() -> ClientOptions {
    client_config().into_iter().fold(ClientOptions::new(), |options, (key, value)| options.with_config(key, value))
}

/// The client settings this library chooses. Given to the S3, GCS and Azure builders key by
/// key, not as a whole [`ClientOptions`], which would drop what their `from_env` read (such
/// as `AWS_ALLOW_HTTP`).
fn client_config() -> [(ClientConfigKey, String); 3] {
    [
        (ClientConfigKey::ConnectTimeout, "10s".to_string()),
        (ClientConfigKey::Timeout, "120s".to_string()),
        (ClientConfigKey::PoolMaxIdlePerHost, SMALL_RANGES_IN_FLIGHT.to_string()),
    ]
}

/// A cloud store (S3, GCS, Azure: builders of different types, configured alike) for `url`:
/// settings from the environment, then this library's client settings and retries.
macro_rules! cloud_store {
    ($builder:ty, $client_key:path, $url:expr) => {
        Arc::new(
            client_config()
                .into_iter()
                .fold(<$builder>::from_env().with_url($url), |b, (key, value)| b.with_config($client_key(key), value))
                .with_retry(retries())
                .build()
                .map_err(remote_error)?,
        )
    };
}

/// The store behind `url` and the object's path within it.
fn store_for(url: &str) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
    let bad = |why: String| Error::usage(format!("{url}: {why}"));
    let parsed = url::Url::parse(url).map_err(|e| bad(format!("not a valid URL ({e})")))?;
    let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::Http => {
            let base = format!("{}://{}", parsed.scheme(), parsed.authority());
            let options = client_options().with_allow_http(parsed.scheme() == "http");
            Arc::new(
                http::HttpBuilder::new()
                    .with_url(base)
                    .with_client_options(options)
                    .with_retry(retries())
                    .build()
                    .map_err(remote_error)?,
            )
        }
        ObjectStoreScheme::AmazonS3 => cloud_store!(aws::AmazonS3Builder, aws::AmazonS3ConfigKey::Client, url),
        ObjectStoreScheme::GoogleCloudStorage => {
            cloud_store!(gcp::GoogleCloudStorageBuilder, gcp::GoogleConfigKey::Client, url)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            cloud_store!(azure::MicrosoftAzureBuilder, azure::AzureConfigKey::Client, url)
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

impl RemoteObject {
    pub fn open(url: &str) -> Result<RemoteObject> {
        let (store, path) = store_for(url)?;
        let meta = runtime()?.block_on(store.head(&path)).map_err(remote_error)?;
        Ok(RemoteObject {
            url: url.to_string(),
            store,
            path,
            len: meta.size,
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
                None if len <= STREAM_FROM => self.get(offset..offset + len).await.map(Bytes::from_owner),
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
            let got = self.get(range).await?;
            return Ok(Bytes::from_owner(got));
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

    /// Bytes `range` streamed into `dst` (of the same length) as they arrive; a transfer cut
    /// off midway is asked for again (the request itself is retried by the store).
    async fn get_into(&self, range: Range<u64>, dst: &mut [u8]) -> Result<()> {
        let mut attempt = 0;
        loop {
            match self.try_get_into(range.clone(), dst).await {
                Err(e) if attempt < STREAM_RETRIES && matches!(e.kind(), ErrorKind::Remote(_)) => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                }
                done => return done,
            }
        }
    }

    async fn try_get_into(&self, range: Range<u64>, dst: &mut [u8]) -> Result<()> {
        let options = GetOptions { range: Some(GetRange::Bounded(range.clone())), ..GetOptions::default() };
        let got = self.store.get_opts(&self.path, options).await.map_err(remote_error)?;
        let mut body = got.into_stream();
        let mut at = 0;
        while let Some(piece) = body.next().await {
            let piece = piece.map_err(remote_error)?;
            let end = at + piece.len();
            let Some(slot) = dst.get_mut(at..end) else {
                return Err(wrong_length(&range, end as u64));
            };
            slot.copy_from_slice(&piece);
            self.fetched.fetch_add(piece.len() as u64, Ordering::Relaxed);
            at = end;
        }
        if at != dst.len() {
            return Err(wrong_length(&range, at as u64));
        }
        Ok(())
    }

    async fn get(&self, range: Range<u64>) -> Result<bytes::Bytes> {
        let want = range.end - range.start;
        let got = self.store.get_range(&self.path, range.clone()).await.map_err(remote_error)?;
        self.fetched.fetch_add(got.len() as u64, Ordering::Relaxed);
        if got.len() as u64 != want {
            return Err(wrong_length(&range, got.len() as u64));
        }
        Ok(got)
    }
}

fn wrong_length(range: &Range<u64>, sent: u64) -> Error {
    Error::new(ErrorKind::Remote(format!(
        "asked for bytes {}..{}, the server sent {sent} bytes or more",
        range.start, range.end
    )))
}
