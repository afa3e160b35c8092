//! The seat-map page around a map drawn, and compressed, once per drawing.
//!
//! A fan's page is the map (the same bytes for every fan until the board
//! moves on, over a megabyte of SVG at 10,000 seats) wrapped in a few
//! kilobytes that are the fan's own (session, tokens, nonce). The page is
//! rendered with a marker where the map goes and the drawing left in the
//! request's [`MapSlot`]; this layer answers with the page's own parts
//! around the drawing's bytes, which are never copied per request.
//!
//! In gzip the map is deflated once per drawing: a DEFLATE stream may be cut
//! into pieces, each ended on a byte boundary by a sync flush and made by
//! its own compressor, so each page deflates only its own parts around the
//! map's piece, and the gzip trailer's CRC is combined from the pieces'
//! CRCs. The answer is one ordinary gzip member.

use std::cell::RefCell;
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, VARY};
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use frontrow_app::seatmap::MapSlot;
use frontrow_model::AppError;

/// The fan's own parts, compressed per page (the level the rest of the
/// site's answers get).
const PAGE_LEVEL: u32 = 4;
/// The map, compressed once per drawing.
const MAP_LEVEL: u32 = 6;
/// The drawings kept with their pieces, in bytes: a few views of each event
/// on sale (a 10,000-seat map is about a megabyte).
const KEPT_BYTES: u64 = 64 * 1024 * 1024;
/// A smaller map (a section's block, a small hall) is deflated with its
/// page rather than kept.
const SMALLEST_MAP: usize = 16 * 1024;
/// A page bigger than this is passed on as it is (the page without its map
/// is some kilobytes).
pub(crate) const LARGEST_PAGE: usize = 16 * 1024 * 1024;

/// A drawing's bytes as a body chunk, shared, not copied.
struct Drawing(Arc<str>);

impl AsRef<[u8]> for Drawing {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// A drawing deflated, ready to go between a page's parts.
struct Deflated {
    bytes: Bytes,
    crc: Crc,
}

impl Deflated {
    fn new(svg: &str, compress: impl FnOnce(&[u8]) -> std::io::Result<Vec<u8>>) -> std::io::Result<Self> {
        let mut crc = Crc::new();
        crc.update(svg.as_bytes());
        Ok(Deflated { bytes: Bytes::from(compress(svg.as_bytes())?), crc })
    }
}

/// A kept drawing with its piece. It holds the drawing, so the drawing's
/// address, its key, is not reused while it is kept.
struct MapPiece {
    drawing: Arc<str>,
    deflated: Deflated,
}

impl MapPiece {
    /// What keeping it costs: the drawing may be kept by nothing else.
    fn bytes(&self) -> usize {
        self.drawing.len() + self.deflated.bytes.len()
    }
}

/// The drawings' pieces, found by the drawing's own allocation and bounded
/// by the bytes they keep. A new drawing is deflated once, by the first
/// request that needs it; the others wait for that one.
pub struct MapPieces {
    pieces: moka::future::Cache<usize, Arc<MapPiece>>,
}

impl Default for MapPieces {
    fn default() -> Self {
        Self::keeping(KEPT_BYTES)
    }
}

impl MapPieces {
    fn keeping(bytes: u64) -> Self {
        let pieces = moka::future::Cache::builder()
            .max_capacity(bytes)
            .weigher(|_, piece: &Arc<MapPiece>| u32::try_from(piece.bytes()).unwrap_or(u32::MAX))
            .eviction_policy(moka::policy::EvictionPolicy::lru())
            .build();
        Self { pieces }
    }

    async fn piece(&self, svg: Arc<str>) -> std::io::Result<Arc<MapPiece>> {
        let key = Arc::as_ptr(&svg).cast::<u8>() as usize;
        self.pieces
            .try_get_with(key, async move {
                // Deflating a big map takes a while: off the async workers.
                tokio::task::spawn_blocking(move || {
                    let deflated = Deflated::new(&svg, |map| deflate(map, MAP_LEVEL, FlushCompress::Sync))?;
                    Ok(Arc::new(MapPiece { drawing: svg, deflated }))
                })
                .await
                .map_err(std::io::Error::other)?
            })
            .await
            .map_err(|e: Arc<std::io::Error>| std::io::Error::new(e.kind(), e.to_string()))
    }

    /// The page with `svg` in place of `at`'s marker, as body chunks: in
    /// gzip (one member) or plain.
    async fn page_with_map(&self, page: &Bytes, at: usize, svg: Arc<str>, gzip: bool) -> std::io::Result<Vec<Bytes>> {
        let (before, after) = (page.slice(..at), page.slice(at + MapSlot::MARKER.len()..));
        if !gzip {
            return Ok(vec![before, Bytes::from_owner(Drawing(svg)), after]);
        }
        if svg.len() < SMALLEST_MAP {
            let map = Deflated::new(&svg, |map| deflate_page_part(map, FlushCompress::Sync))?;
            return gzip_around(&before, &map, &after);
        }
        let piece = self.piece(svg).await?;
        gzip_around(&before, &piece.deflated, &after)
    }
}

/// One gzip member: the page's part before the map, the map's deflated
/// piece and the part after it, with the CRC combined from the three.
fn gzip_around(before: &[u8], map: &Deflated, after: &[u8]) -> std::io::Result<Vec<Bytes>> {
    // The gzip header: deflate, no name, no time, unknown system.
    let mut head = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    head.extend_from_slice(&deflate_page_part(before, FlushCompress::Sync)?);
    let mut tail = deflate_page_part(after, FlushCompress::Finish)?;
    let mut crc = Crc::new();
    crc.update(before);
    crc.combine(&map.crc);
    let mut rest = Crc::new();
    rest.update(after);
    crc.combine(&rest);
    tail.extend_from_slice(&crc.sum().to_le_bytes());
    tail.extend_from_slice(&crc.amount().to_le_bytes());
    Ok(vec![Bytes::from(head), map.bytes.clone(), Bytes::from(tail)])
}

thread_local! {
    /// The page parts' compressor, one per worker thread and reset for each
    /// part: making one allocates some hundred kilobytes of tables, which
    /// cost more than compressing a page's own few kilobytes.
    static PAGE_COMPRESSOR: RefCell<Compress> = RefCell::new(Compress::new(Compression::new(PAGE_LEVEL), false));
}

/// Raw DEFLATE of a page's own part (see [`deflate_with`]).
fn deflate_page_part(data: &[u8], flush: FlushCompress) -> std::io::Result<Vec<u8>> {
    PAGE_COMPRESSOR.with_borrow_mut(|compressor| deflate_with(compressor, data, flush))
}

/// Raw DEFLATE of `data` by a compressor of its own, ended by `flush` (see
/// [`deflate_with`]).
fn deflate(data: &[u8], level: u32, flush: FlushCompress) -> std::io::Result<Vec<u8>> {
    deflate_with(&mut Compress::new(Compression::new(level), false), data, flush)
}

/// Raw DEFLATE of `data` as a stream of its own (the compressor is reset
/// first, so nothing refers back to data before it), ended by `flush`: a
/// sync flush ends on a byte boundary with the stream still open, so the
/// next piece can follow; `Finish` ends the stream.
fn deflate_with(compressor: &mut Compress, data: &[u8], flush: FlushCompress) -> std::io::Result<Vec<u8>> {
    compressor.reset();
    let mut out = Vec::with_capacity(data.len() / 4 + 64);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(16 * 1024));
        }
        let read = usize::try_from(compressor.total_in()).map_err(std::io::Error::other)?;
        let status = compressor.compress_vec(&data[read..], &mut out, flush).map_err(std::io::Error::other)?;
        let all_read = usize::try_from(compressor.total_in()).map_err(std::io::Error::other)? == data.len();
        // A flush is complete when it left room in the output (zlib's rule).
        let done = match flush {
            FlushCompress::Finish => status == Status::StreamEnd,
            _ => all_read && out.len() < out.capacity(),
        };
        if done {
            return Ok(out);
        }
    }
}

/// Gives an event page's request a slot for its map and answers with the
/// page around the drawing: in gzip when the client takes it (the map's
/// piece deflated once), else plain for the usual compression to handle.
pub async fn put_in_maps(State(pieces): State<Arc<MapPieces>>, mut request: Request, next: Next) -> Response {
    if request.method() != Method::GET || !request.uri().path().starts_with("/events/") {
        return next.run(request).await;
    }
    let gzip = crate::prepared::accepts(request.headers(), "gzip");
    let slot = MapSlot::default();
    request.extensions_mut().insert(slot.clone());
    let response = next.run(request).await;
    let is_html = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("text/html"));
    if !is_html {
        return response;
    }
    // The whole page first: a page that streamed would fill the slot only
    // as its body is made.
    let (mut parts, body) = response.into_parts();
    let page = match axum::body::to_bytes(body, LARGEST_PAGE).await {
        Ok(page) => page,
        Err(e) => {
            tracing::error!(error = %e, "reading a page to put its map in");
            return AppError::internal().into_response();
        }
    };
    let marker = memchr::memmem::find(&page, MapSlot::MARKER.as_bytes());
    let (at, svg) = match (marker, slot.take()) {
        (Some(at), Some(map)) => (at, map.svg),
        // A page that drew no map, or rendered none (a fan sent to the
        // waiting room), goes as it is.
        (None, _) => return Response::from_parts(parts, Body::from(page)),
        (Some(_), None) => {
            tracing::error!("a page marks a seat map but left none to put in");
            return AppError::internal().into_response();
        }
    };
    let gzip = gzip && !parts.headers.contains_key(CONTENT_ENCODING);
    let chunks = match pieces.page_with_map(&page, at, svg, gzip).await {
        Ok(chunks) => chunks,
        Err(e) => {
            tracing::error!(error = %e, "compressing a page");
            return AppError::internal().into_response();
        }
    };
    let length: usize = chunks.iter().map(Bytes::len).sum();
    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    if gzip {
        parts.headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        parts.headers.append(VARY, HeaderValue::from_static("accept-encoding"));
    }
    let body = Body::from_stream(futures_util::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>)));
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).expect("a valid gzip member");
        out
    }

    fn map(seats: usize, taken: usize) -> String {
        let mut svg = String::from(r#"<svg id="seat-map" class="seat-map" viewBox="0 0 10 10">"#);
        for n in 0..seats {
            let class = if n == taken { "sd" } else { "av" };
            svg.push_str(&format!(r#"<circle class="{class}" cx="{}" cy="{}" r="4" data-seat="{n}"/>"#, n % 100, n / 100));
        }
        svg.push_str("</svg>");
        svg
    }

    fn page(fan: &str, svg: &str) -> String {
        format!(
            r#"<!DOCTYPE html><html><head><meta name="fan" content="{fan}"></head><body><div id="map-viewport">{svg}</div><script>{fan}</script></body></html>"#
        )
    }

    /// The page as rendered (the marker in the map's place) and as sent.
    fn rendered(fan: &str) -> Bytes {
        Bytes::from(page(fan, MapSlot::MARKER))
    }

    async fn sent(pieces: &MapPieces, fan: &str, svg: &Arc<str>, gzip: bool) -> Vec<u8> {
        let page = rendered(fan);
        let at = memchr::memmem::find(&page, MapSlot::MARKER.as_bytes()).expect("the marker");
        pieces.page_with_map(&page, at, svg.clone(), gzip).await.expect("the page").concat()
    }

    #[tokio::test]
    async fn a_page_decodes_to_itself_with_its_map_and_the_map_is_deflated_once() {
        let pieces = MapPieces::default();
        let svg: Arc<str> = map(2_000, 7).into();
        for fan in ["ada", "grace", "linus"] {
            let whole = page(fan, &svg);
            let gzip = sent(&pieces, fan, &svg, true).await;
            assert_eq!(gunzip(&gzip), whole.as_bytes());
            assert!(gzip.len() < whole.len() / 5, "compressed to {} of {}", gzip.len(), whole.len());
            assert_eq!(sent(&pieces, fan, &svg, false).await, whole.as_bytes(), "plain");
        }
        pieces.pieces.run_pending_tasks().await;
        assert_eq!(pieces.pieces.entry_count(), 1, "one drawing, one piece");
        // A new drawing, even of the same size, is a new piece, never the old bytes.
        let redrawn: Arc<str> = map(2_000, 8).into();
        assert_eq!(gunzip(&sent(&pieces, "ada", &redrawn, true).await), page("ada", &redrawn).as_bytes());
        pieces.pieces.run_pending_tasks().await;
        assert_eq!(pieces.pieces.entry_count(), 2);
    }

    #[tokio::test]
    async fn a_map_alone_or_a_small_one_still_makes_a_valid_stream_and_only_big_ones_are_kept() {
        let pieces = MapPieces::default();
        for svg in [map(1_000, 1), map(10, 0), map(1, 0), String::new()] {
            let svg: Arc<str> = svg.into();
            let page = Bytes::from_static(MapSlot::MARKER.as_bytes());
            let gzip = pieces.page_with_map(&page, 0, svg.clone(), true).await.unwrap().concat();
            assert_eq!(gunzip(&gzip), svg.as_bytes());
            assert_eq!(gunzip(&sent(&pieces, "ada", &svg, true).await), page_of("ada", &svg));
        }
        pieces.pieces.run_pending_tasks().await;
        assert_eq!(pieces.pieces.entry_count(), 1, "only the map over {SMALLEST_MAP} bytes is kept");
    }

    fn page_of(fan: &str, svg: &str) -> Vec<u8> {
        page(fan, svg).into_bytes()
    }

    #[tokio::test]
    async fn the_least_recently_used_drawing_goes_when_the_bytes_kept_are_full() {
        let first: Arc<str> = map(300, 0).into();
        assert!(first.len() >= SMALLEST_MAP);
        let piece_bytes = (first.len() + deflate(first.as_bytes(), MAP_LEVEL, FlushCompress::Sync).unwrap().len()) as u64;
        // Room for three pieces (of slightly different sizes), not four.
        let pieces = MapPieces::keeping(piece_bytes * 7 / 2);
        let later: Vec<Arc<str>> = (1..=3).map(|n| map(300, n).into()).collect();
        // The cache settles its books between requests, as a server's does.
        for svg in [&first, &later[0], &first, &later[1], &later[2]] {
            sent(&pieces, "ada", svg, true).await;
            pieces.pieces.run_pending_tasks().await;
        }
        let key = |svg: &Arc<str>| Arc::as_ptr(svg).cast::<u8>() as usize;
        assert_eq!(pieces.pieces.entry_count(), 3);
        assert!(pieces.pieces.contains_key(&key(&first)), "used again, so kept");
        assert!(!pieces.pieces.contains_key(&key(&later[0])), "the least recently used goes");
    }

    #[test]
    fn only_clients_that_take_gzip_get_it() {
        use crate::prepared::accepts;
        use axum::http::{header::ACCEPT_ENCODING, HeaderMap};
        let with = |v: &str| HeaderMap::from_iter([(ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap())]);
        assert!(accepts(&with("gzip, deflate, br"), "gzip"));
        assert!(accepts(&with("br;q=1.0, GZIP;q=0.5"), "gzip"));
        assert!(!accepts(&with("gzip;q=0, br"), "gzip"));
        assert!(!accepts(&with("gzip; Q=0.0"), "gzip"));
        assert!(!accepts(&with("identity"), "gzip"));
        assert!(accepts(&with("x-gzip"), "gzip"));
        assert!(!accepts(&with("x-gzip;q=0"), "gzip"));
        assert!(!accepts(&with("x-gzip"), "br"));
        assert!(!accepts(&HeaderMap::new(), "gzip"));
    }
}
