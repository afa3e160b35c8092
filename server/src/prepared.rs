//! Hot reads as prepared bytes: a body rendered once, kept with its gzip and
//! brotli forms and a strong `ETag`, and answered to every reader of the
//! same revision without serialising or compressing again (304 when the
//! reader already has it).

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// A rendered body in every encoding we serve.
pub struct Prepared {
    /// What it was rendered from; equal revisions render equal bytes.
    revision: String,
    made: Instant,
    /// One strong ETag per encoding (different bytes, different tags).
    etags: [HeaderValue; 3],
    content_type: HeaderValue,
    identity: Bytes,
    gzip: Bytes,
    brotli: Bytes,
}

impl Prepared {
    /// Compresses `body` once (gzip level 6, brotli quality 5: quick enough
    /// to redo at every revision, within a few percent of the best size for
    /// JSON this repetitive).
    pub fn new(revision: String, content_type: &'static str, body: Vec<u8>) -> std::io::Result<Self> {
        Self::compressed(revision, content_type, body, 6, 5)
    }

    /// Compresses a file that changes only with a new build as small as the
    /// encoders can (gzip 9, brotli 11): seconds once, bytes saved on every
    /// download.
    pub fn smallest(revision: String, content_type: &'static str, body: Vec<u8>) -> std::io::Result<Self> {
        Self::compressed(revision, content_type, body, 9, 11)
    }

    fn compressed(revision: String, content_type: &'static str, body: Vec<u8>, gzip_level: u32, brotli_quality: u32) -> std::io::Result<Self> {
        let mut gzip = flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 8), flate2::Compression::new(gzip_level));
        gzip.write_all(&body)?;
        let gzip = gzip.finish()?;
        let mut brotli = Vec::with_capacity(body.len() / 10);
        {
            // A window just big enough for the body: the encoder sets up
            // (and zeroes) as much memory as the window it is given.
            let window = body.len().max(1 << 16).next_power_of_two().trailing_zeros().min(22);
            let mut writer = brotli::CompressorWriter::new(&mut brotli, 64 * 1024, brotli_quality, window);
            writer.write_all(&body)?;
        }
        let tag = |suffix: &str| HeaderValue::from_str(&format!("\"{revision}{suffix}\"")).map_err(std::io::Error::other);
        let etags = [tag("")?, tag("-gz")?, tag("-br")?];
        Ok(Self {
            revision,
            made: Instant::now(),
            etags,
            content_type: HeaderValue::from_static(content_type),
            identity: Bytes::from(body),
            gzip: Bytes::from(gzip),
            brotli: Bytes::from(brotli),
        })
    }

    /// The answer to one request: 304 if it names our ETag, else the body
    /// in the best encoding it accepts.
    pub fn respond(&self, request: &HeaderMap) -> Response {
        let encoding = preferred_encoding(request);
        let (etag, content_encoding, body) = match encoding {
            Encoding::Identity => (&self.etags[0], None, &self.identity),
            Encoding::Gzip => (&self.etags[1], Some("gzip"), &self.gzip),
            Encoding::Brotli => (&self.etags[2], Some("br"), &self.brotli),
        };
        let mut headers = HeaderMap::new();
        headers.insert(ETAG, etag.clone());
        headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
        // Live data: a cache may keep it but must ask before reusing it.
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        // A reader holding this revision in any encoding has it.
        if self.etags.iter().any(|ours| names_etag(request, ours)) {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
        headers.insert(CONTENT_TYPE, self.content_type.clone());
        if let Some(name) = content_encoding {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static(name));
        }
        (StatusCode::OK, headers, Body::from(body.clone())).into_response()
    }
}

fn names_etag(request: &HeaderMap, etag: &HeaderValue) -> bool {
    let Some(wanted) = request.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()) else { return false };
    let ours = etag.to_str().unwrap_or_default();
    wanted.split(',').map(str::trim).any(|tag| tag == "*" || tag == ours || tag.strip_prefix("W/") == Some(ours))
}

#[derive(Debug, PartialEq)]
enum Encoding {
    Brotli,
    Gzip,
    Identity,
}

/// Brotli, else gzip, else none, as `Accept-Encoding` allows (`q=0` refuses).
fn preferred_encoding(request: &HeaderMap) -> Encoding {
    if accepts(request, "br") {
        Encoding::Brotli
    } else if accepts(request, "gzip") {
        Encoding::Gzip
    } else {
        Encoding::Identity
    }
}

/// Whether the request's `Accept-Encoding` takes `encoding` (named, and
/// not refused with `q=0`). `x-gzip` names gzip (RFC 9110, 8.4.1.3).
pub(crate) fn accepts(request: &HeaderMap, encoding: &str) -> bool {
    let names = |name: &str| name.eq_ignore_ascii_case(encoding) || (encoding == "gzip" && name.eq_ignore_ascii_case("x-gzip"));
    request.get_all(ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let named = parts.next().is_some_and(names);
        let refused =
            |p: &str| p.split_once('=').is_some_and(|(k, q)| k.trim().eq_ignore_ascii_case("q") && q.trim().parse::<f32>().ok() == Some(0.0));
        named && !parts.any(refused)
    })
}

/// The latest prepared body of each resource, re-rendered when its revision
/// moves on, but at most once per `refresh` while it keeps moving (an
/// on-sale changes the map faster than anyone can read it; the live feed
/// carries every change in between). One render at a time per resource:
/// readers meanwhile get the previous bytes.
pub struct PreparedCache {
    refresh: Duration,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

#[derive(Default)]
struct Slot {
    current: RwLock<Option<Arc<Prepared>>>,
    rendering: tokio::sync::Mutex<()>,
}

/// Most resources kept (one per event, and per section asked for).
const MAX_SLOTS: usize = 10_000;

impl PreparedCache {
    pub fn new(refresh: Duration) -> Self {
        Self { refresh, slots: Mutex::default() }
    }

    /// The prepared body of `resource` at `revision` (or one at most
    /// `refresh` old), rendering it with `render` when needed.
    pub async fn get<F>(&self, resource: &str, revision: &str, render: F) -> std::io::Result<Arc<Prepared>>
    where
        F: FnOnce() -> std::io::Result<Prepared> + Send + 'static,
    {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            if slots.len() >= MAX_SLOTS && !slots.contains_key(resource) {
                slots.clear();
            }
            slots.entry(resource.to_owned()).or_default().clone()
        };
        let fresh = |p: &Arc<Prepared>| p.revision == revision || p.made.elapsed() < self.refresh;
        let current = slot.current.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(p) = current.as_ref().filter(|p| fresh(p)) {
            return Ok(p.clone());
        }
        let _rendering = match (slot.rendering.try_lock(), current) {
            (Ok(guard), _) => guard,
            // Someone is rendering: the previous bytes will do meanwhile.
            (Err(_), Some(previous)) => return Ok(previous),
            (Err(_), None) => slot.rendering.lock().await,
        };
        if let Some(p) = slot.current.read().unwrap_or_else(|e| e.into_inner()).as_ref().filter(|p| fresh(p)) {
            return Ok(p.clone());
        }
        // Serialising and compressing a big map is CPU work: off the reactor.
        let prepared = Arc::new(tokio::task::spawn_blocking(render).await.map_err(std::io::Error::other)??);
        *slot.current.write().unwrap_or_else(|e| e.into_inner()) = Some(prepared.clone());
        Ok(prepared)
    }
}

impl PreparedCache {
    /// The prepared body of `resource` at `revision` if it is ready; if not,
    /// starts rendering it in the background (once) and answers `None`, so
    /// a caller with another way to answer need not wait for it.
    pub fn ready_or_start<F>(self: &Arc<Self>, resource: &str, revision: &str, render: F) -> Option<Arc<Prepared>>
    where
        F: FnOnce() -> std::io::Result<Prepared> + Send + 'static,
    {
        let slot = self.slots.lock().unwrap_or_else(|e| e.into_inner()).get(resource).cloned();
        let ready = slot.as_ref().and_then(|slot| slot.current.read().unwrap_or_else(|e| e.into_inner()).clone());
        if let Some(p) = ready.filter(|p| p.revision == revision) {
            return Some(p);
        }
        if slot.as_ref().is_none_or(|slot| slot.rendering.try_lock().is_ok()) {
            let (cache, resource, revision) = (self.clone(), resource.to_owned(), revision.to_owned());
            tokio::spawn(async move {
                if let Err(e) = cache.get(&resource, &revision, render).await {
                    tracing::warn!(resource, error = %e, "could not prepare a body");
                }
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (axum::http::HeaderName::from_static(k), HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn encodings_follow_accept_encoding() {
        assert_eq!(preferred_encoding(&headers(&[("accept-encoding", "gzip, deflate, br")])), Encoding::Brotli);
        assert_eq!(preferred_encoding(&headers(&[("accept-encoding", "gzip, br;q=0")])), Encoding::Gzip);
        assert_eq!(preferred_encoding(&headers(&[("accept-encoding", "identity")])), Encoding::Identity);
        assert_eq!(preferred_encoding(&HeaderMap::new()), Encoding::Identity);
    }

    #[test]
    fn every_encoding_decodes_to_the_same_body() {
        use std::io::Read;
        let body = br#"{"seats":[{"id":"A-1-1","status":"available"}]}"#.repeat(200);
        let p = Prepared::new("r1".into(), "application/json", body.clone()).expect("prepared");
        let mut gunzipped = Vec::new();
        flate2::read::GzDecoder::new(&p.gzip[..]).read_to_end(&mut gunzipped).expect("gzip");
        assert_eq!(gunzipped, body);
        let mut unbrotlied = Vec::new();
        brotli::Decompressor::new(&p.brotli[..], 4096).read_to_end(&mut unbrotlied).expect("brotli");
        assert_eq!(unbrotlied, body);
        assert!(p.brotli.len() < body.len() / 10);
    }

    #[test]
    fn a_matching_if_none_match_is_not_modified() {
        let p = Prepared::new("r1".into(), "application/json", b"{}".to_vec()).expect("prepared");
        assert_eq!(p.respond(&headers(&[("if-none-match", "\"r1\"")])).status(), StatusCode::NOT_MODIFIED);
        assert_eq!(p.respond(&headers(&[("if-none-match", "\"r0\", W/\"r1\"")])).status(), StatusCode::NOT_MODIFIED);
        assert_eq!(p.respond(&headers(&[("if-none-match", "\"r1-br\"")])).status(), StatusCode::NOT_MODIFIED);
        let tags: Vec<_> =
            ["identity", "gzip", "br"].into_iter().map(|e| p.respond(&headers(&[("accept-encoding", e)])).headers()[ETAG].clone()).collect();
        assert!(tags[0] != tags[1] && tags[1] != tags[2] && tags[0] != tags[2], "different bytes, different tags: {tags:?}");
        assert_eq!(p.respond(&headers(&[("if-none-match", "\"r0\"")])).status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_revision_renders_once_and_a_new_one_renders_again() {
        let cache = PreparedCache::new(Duration::ZERO);
        let renders = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let render = |rev: &'static str| {
            let renders = renders.clone();
            move || {
                renders.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Prepared::new(rev.into(), "application/json", b"{}".to_vec())
            }
        };
        cache.get("map", "r1", render("r1")).await.expect("r1");
        cache.get("map", "r1", render("r1")).await.expect("r1 again");
        assert_eq!(renders.load(std::sync::atomic::Ordering::SeqCst), 1);
        let p = cache.get("map", "r2", render("r2")).await.expect("r2");
        assert_eq!(p.revision, "r2");
        assert_eq!(renders.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
