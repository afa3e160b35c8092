//! The seat-map page in gzip without compressing its map per request.
//!
//! A fan's page is the map (the same bytes for every fan until the board
//! moves on, over a megabyte of SVG at 10,000 seats) wrapped in a few
//! kilobytes that are the fan's own (session, tokens, nonce). Compressing
//! the whole page per request was the page's main cost. A DEFLATE stream
//! may be cut into pieces, each ended on a byte boundary by a sync flush and
//! made by its own compressor, so the map is deflated once per drawing and
//! each page deflates only its own parts around it; the gzip trailer's CRC
//! is combined from the pieces' CRCs. The answer is one ordinary gzip
//! member, the same bytes any decoder would get from compressing the page
//! whole.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, VARY};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use frontrow_model::AppError;

/// The markup that opens a drawn map (a whole venue, a section, or the
/// overview); each drawing is one `<svg>` with no other inside it.
const MAP_STARTS: [&[u8]; 2] = [b"<svg id=\"seat-map\"", b"<svg id=\"venue-overview\""];
const MAP_END: &[u8] = b"</svg>";
/// Below this a map is not worth a piece of its own.
const SMALLEST_MAP: usize = 16 * 1024;
/// The fan's own parts, compressed per page (the level the rest of the
/// site's answers get).
const PAGE_LEVEL: u32 = 4;
/// The map, compressed once per drawing.
const MAP_LEVEL: u32 = 6;
/// Drawings kept: a few views of each event on sale.
const KEPT: usize = 64;
/// A page bigger than this is passed on as it is.
const LARGEST_PAGE: usize = 64 * 1024 * 1024;

/// A drawn map and its deflated form.
struct MapPiece {
    svg: Bytes,
    deflated: Bytes,
    crc: Crc,
    used: Mutex<Instant>,
}

/// The deflated maps, found again by a fingerprint of their bytes and then
/// compared byte for byte (a fingerprint alone could match another map).
#[derive(Default)]
pub struct MapPieces {
    pieces: Mutex<HashMap<u64, Arc<MapPiece>>>,
}

impl MapPieces {
    fn piece(&self, svg: &[u8]) -> std::io::Result<Arc<MapPiece>> {
        let key = fingerprint(svg);
        let found = self.pieces.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some(piece) = found.filter(|p| p.svg.as_ref() == svg) {
            *piece.used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            return Ok(piece);
        }
        let mut crc = Crc::new();
        crc.update(svg);
        let piece = Arc::new(MapPiece {
            svg: Bytes::copy_from_slice(svg),
            deflated: Bytes::from(deflate(svg, MAP_LEVEL, FlushCompress::Sync)?),
            crc,
            used: Mutex::new(Instant::now()),
        });
        let mut pieces = self.pieces.lock().unwrap_or_else(|e| e.into_inner());
        if pieces.len() >= KEPT && !pieces.contains_key(&key) {
            let oldest = pieces.iter().min_by_key(|(_, p)| *p.used.lock().unwrap_or_else(|e| e.into_inner())).map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                pieces.remove(&oldest);
            }
        }
        pieces.insert(key, piece.clone());
        Ok(piece)
    }

    /// `page` in gzip, its map deflated once; `None` when it has no map
    /// worth it (the caller compresses it the usual way).
    pub fn gzip(&self, page: &[u8]) -> std::io::Result<Option<Vec<u8>>> {
        let Some((start, end)) = find_map(page) else { return Ok(None) };
        let (before, after) = (&page[..start], &page[end..]);
        let piece = self.piece(&page[start..end])?;
        let mut out = Vec::with_capacity(piece.deflated.len() + (before.len() + after.len()) / 4 + 64);
        // The gzip header: deflate, no name, no time, unknown system.
        out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
        out.extend_from_slice(&deflate(before, PAGE_LEVEL, FlushCompress::Sync)?);
        out.extend_from_slice(&piece.deflated);
        out.extend_from_slice(&deflate(after, PAGE_LEVEL, FlushCompress::Finish)?);
        let mut crc = Crc::new();
        crc.update(before);
        crc.combine(&piece.crc);
        let mut rest = Crc::new();
        rest.update(after);
        crc.combine(&rest);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        Ok(Some(out))
    }
}

/// Where the map's bytes are in the page.
fn find_map(page: &[u8]) -> Option<(usize, usize)> {
    let start = MAP_STARTS.iter().filter_map(|opening| memchr::memmem::find(page, opening)).min()?;
    let end = start + memchr::memmem::find(&page[start..], MAP_END)? + MAP_END.len();
    (end - start >= SMALLEST_MAP).then_some((start, end))
}

fn fingerprint(svg: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    svg.len().hash(&mut hasher);
    svg[..svg.len().min(512)].hash(&mut hasher);
    svg[svg.len().saturating_sub(512)..].hash(&mut hasher);
    hasher.finish()
}

/// Raw DEFLATE of `data` by a compressor of its own, ended by `flush`: a
/// sync flush ends on a byte boundary with the stream still open, so the
/// next piece can follow; `Finish` ends the stream.
fn deflate(data: &[u8], level: u32, flush: FlushCompress) -> std::io::Result<Vec<u8>> {
    let mut compressor = Compress::new(Compression::new(level), false);
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

/// Answers an event's page in gzip with its map's piece deflated once.
/// Other answers, and clients that take no gzip, pass on to the usual
/// compression.
pub async fn gzip_map_pages(State(pieces): State<Arc<MapPieces>>, request: Request, next: Next) -> Response {
    let wanted = request.method() == Method::GET && request.uri().path().starts_with("/events/") && crate::prepared::accepts(request.headers(), "gzip");
    let response = next.run(request).await;
    let is_html = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("text/html"));
    if !wanted || response.status() != StatusCode::OK || !is_html || response.headers().contains_key(CONTENT_ENCODING) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let page = match axum::body::to_bytes(body, LARGEST_PAGE).await {
        Ok(page) => page,
        Err(e) => {
            tracing::error!(error = %e, "reading a page to compress it");
            return AppError::internal().into_response();
        }
    };
    match pieces.gzip(&page) {
        Ok(Some(gzip)) => {
            parts.headers.remove(CONTENT_LENGTH);
            parts.headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            parts.headers.append(VARY, HeaderValue::from_static("accept-encoding"));
            Response::from_parts(parts, Body::from(gzip))
        }
        Ok(None) => Response::from_parts(parts, Body::from(page)),
        Err(e) => {
            tracing::error!(error = %e, "compressing a page");
            Response::from_parts(parts, Body::from(page))
        }
    }
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
        format!(r#"<!DOCTYPE html><html><head><meta name="fan" content="{fan}"></head><body><div id="map-viewport">{svg}</div><script>{fan}</script></body></html>"#)
    }

    #[test]
    fn a_page_decodes_to_itself_and_its_map_is_deflated_once() {
        let pieces = MapPieces::default();
        let svg = map(2_000, 7);
        for fan in ["ada", "grace", "linus"] {
            let page = page(fan, &svg);
            let gzip = pieces.gzip(page.as_bytes()).expect("compressed").expect("the page has a map");
            assert_eq!(gunzip(&gzip), page.as_bytes());
            assert!(gzip.len() < page.len() / 5, "compressed to {} of {}", gzip.len(), page.len());
        }
        assert_eq!(pieces.pieces.lock().unwrap().len(), 1, "one drawing, one piece");
        // A new drawing of the same size is a new piece, never the old bytes.
        let changed = page("ada", &map(2_000, 8));
        assert_eq!(changed.len(), page("ada", &svg).len());
        assert_eq!(gunzip(&pieces.gzip(changed.as_bytes()).unwrap().unwrap()), changed.as_bytes());
    }

    #[test]
    fn pages_without_a_big_map_are_left_to_the_usual_compression() {
        let pieces = MapPieces::default();
        assert!(pieces.gzip(b"<html><body>no map</body></html>").unwrap().is_none());
        assert!(pieces.gzip(page("ada", &map(3, 0)).as_bytes()).unwrap().is_none());
        // An opening without its end.
        assert!(pieces.gzip(b"<svg id=\"seat-map\" ...").unwrap().is_none());
    }

    #[test]
    fn empty_parts_around_the_map_still_make_a_valid_stream() {
        let pieces = MapPieces::default();
        let svg = map(1_000, 1);
        assert_eq!(gunzip(&pieces.gzip(svg.as_bytes()).unwrap().unwrap()), svg.as_bytes());
    }

    #[test]
    fn only_clients_that_take_gzip_get_it() {
        use crate::prepared::accepts;
        use axum::http::{header::ACCEPT_ENCODING, HeaderMap};
        let with = |v: &str| HeaderMap::from_iter([(ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap())]);
        assert!(accepts(&with("gzip, deflate, br"), "gzip"));
        assert!(accepts(&with("br;q=1.0, GZIP;q=0.5"), "gzip"));
        assert!(!accepts(&with("gzip;q=0, br"), "gzip"));
        assert!(!accepts(&with("identity"), "gzip"));
        assert!(!accepts(&HeaderMap::new(), "gzip"));
    }
}
