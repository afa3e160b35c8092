//! Signed-out viewers' event pages, rendered once per short while.
//!
//! Before and during an on-sale much of the crowd looks at the map without
//! being signed in, and every such viewer of one address gets the same page
//! but for two things: the nonce of its inline scripts and the server clock
//! its countdowns start from. Such a page is rendered by the app at most
//! once per `keep` (`FRONTROW_SIGNED_OUT_PAGE_MS`) and each viewer gets it
//! with a nonce of their own and the clock of their request put in.
//! Concurrent viewers of a page being rendered wait for that one render.
//!
//! Only pages the app rendered (they name their nonce) answered 200 to a
//! browser's request without a session are kept; anything else (a fan's
//! own page, a redirect to the waiting room, a 404) is rendered per request.
//! A kept page whose map has since been drawn anew is rendered again.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use frontrow_app::seatmap::{DrawnMap, MapSlot};
use frontrow_app::server::PageClock;
use frontrow_model::{AppError, EventId};
use tower_sessions::Session;

use crate::gates::headers::PageNonce;

/// Addresses kept at once: every section and block of a few big events
/// (a page without its map is some kilobytes).
const KEPT_PAGES: u64 = 1024;

/// The signed-out pages, by address.
pub struct SignedOutPages {
    pages: moka::future::Cache<String, Arc<Entry>>,
}

/// One address's page: rendered by the first viewer, `None` when that
/// render was not one to keep (the others then render their own).
#[derive(Default)]
struct Entry {
    page: tokio::sync::OnceCell<Option<Arc<KeptPage>>>,
}

/// A rendered page and where in it the per-request parts go.
struct KeptPage {
    headers: HeaderMap,
    body: Bytes,
    /// In order, not overlapping.
    holes: Vec<(Range<usize>, Hole)>,
    /// The drawing in the page.
    map: Option<DrawnMap>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Hole {
    Nonce,
    Clock,
}

impl SignedOutPages {
    /// Pages kept at most `keep`; `None` when that is zero (every page
    /// rendered for its request).
    pub fn new(keep: Duration) -> Option<Self> {
        (!keep.is_zero()).then(|| Self { pages: moka::future::Cache::builder().max_capacity(KEPT_PAGES).time_to_live(keep).build() })
    }
}

/// The key a request's page is kept under, if it may be: a browser's plain
/// GET of an event's page without a session, the address in one spelling
/// (the event's id as the app writes it, plain path segments, only the
/// queries the pages read), so made-up variants cannot fill the cache.
fn key_of(request: &Request) -> Option<String> {
    let uri = request.uri();
    let browser = request.headers().get(ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/html"));
    let signed_out = request.extensions().get::<Session>().is_some_and(|s| s.id().is_none());
    if request.method() != Method::GET || !browser || !signed_out {
        return None;
    }
    let mut segments = uri.path().strip_prefix("/events/")?.split('/');
    let event_id: EventId = segments.next()?.parse().ok()?;
    let mut key = format!("/events/{event_id}");
    for (n, segment) in segments.enumerate() {
        let plain = !segment.is_empty() && segment.len() <= 64 && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if n >= 4 || !plain {
            return None;
        }
        key.push('/');
        key.push_str(segment);
    }
    match uri.query() {
        None | Some("") => {}
        Some("view=whole") => key.push_str("?view=whole"),
        Some(q) => {
            let block: u16 = q.strip_prefix("block=")?.parse().ok()?;
            key.push_str(&format!("?block={block}"));
        }
    }
    Some(key)
}

/// Answers a signed-out viewer's event page from the page kept for its
/// address, rendering it when there is none.
pub async fn signed_out_pages(State(pages): State<Option<Arc<SignedOutPages>>>, request: Request, next: Next) -> Response {
    let (Some(pages), Some(key)) = (pages, key_of(&request)) else { return next.run(request).await };
    let entry = pages.pages.get_with(key.clone(), async { Arc::new(Entry::default()) }).await;
    let (mut request, mut next, mut rendered) = (Some(request), Some(next), None);
    let (own_request, own_next, own_answer) = (&mut request, &mut next, &mut rendered);
    let kept = entry
        .page
        .get_or_init(|| async move {
            // Only the first caller gets here, and renders for its own request.
            let (Some(request), Some(next)) = (own_request.take(), own_next.take()) else { return None };
            let (kept, response) = render_and_keep(request, next).await;
            *own_answer = Some(response);
            kept
        })
        .await
        .clone();
    if let Some(response) = rendered {
        count("rendered");
        return response;
    }
    let (Some(request), Some(next)) = (request, next) else { return AppError::internal().into_response() };
    if let Some(kept) = kept {
        if let Some(response) = answer_from(&kept, &request) {
            count("kept");
            return response;
        }
        // Its map was drawn anew: the next viewer renders the page again
        // (unless another has already put a new entry in).
        pages
            .pages
            .entry(key)
            .and_compute_with(|found| async move {
                match found {
                    Some(found) if Arc::ptr_eq(found.value(), &entry) => moka::ops::compute::Op::Remove,
                    _ => moka::ops::compute::Op::Nop,
                }
            })
            .await;
    }
    count("rendered");
    next.run(request).await
}

fn count(outcome: &'static str) {
    metrics::counter!("frontrow_signed_out_pages_total", "outcome" => outcome).increment(1);
}

/// Renders the page for its own request and keeps it if it is one to keep.
async fn render_and_keep(mut request: Request, next: Next) -> (Option<Arc<KeptPage>>, Response) {
    let clock = PageClock::default();
    request.extensions_mut().insert(clock.clone());
    let extensions = request.extensions();
    let (nonce, map, session) = (extensions.get::<PageNonce>().cloned(), extensions.get::<MapSlot>().cloned(), extensions.get::<Session>().cloned());
    let response = next.run(request).await;
    let Some(nonce) = nonce.and_then(|n| n.get()) else { return (None, response) };
    let headers = response.headers();
    let keepable = response.status() == StatusCode::OK
        // A redirect to a browser that did not ask for HTML comes as 200.
        && !headers.contains_key(LOCATION)
        && !headers.contains_key("serverfnredirect")
        && !headers.contains_key(SET_COOKIE)
        && !headers.contains_key(CONTENT_SECURITY_POLICY)
        && !session.is_some_and(|s| s.is_modified())
        && headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("text/html"));
    if !keepable {
        return (None, response);
    }
    let (parts, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, crate::map_page::LARGEST_PAGE).await {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(error = %e, "reading a page to keep it");
            return (None, AppError::internal().into_response());
        }
    };
    // The drawing stays in the slot for this request's answer.
    let map = map.and_then(|slot| slot.peek());
    let holes = holes_in(&body, &nonce, clock.get());
    let mut headers = parts.headers.clone();
    headers.remove(CONTENT_LENGTH);
    let kept = Arc::new(KeptPage { headers, body: body.clone(), holes, map });
    (Some(kept), Response::from_parts(parts, Body::from(body)))
}

/// Where the nonce and the clock are in a rendered page: every place the
/// nonce appears, and the clock's digits just after `server_now_ms`.
fn holes_in(body: &[u8], nonce: &str, clock_ms: Option<i64>) -> Vec<(Range<usize>, Hole)> {
    let mut holes: Vec<(Range<usize>, Hole)> = if nonce.is_empty() {
        Vec::new()
    } else {
        memchr::memmem::find_iter(body, nonce.as_bytes()).map(|at| (at..at + nonce.len(), Hole::Nonce)).collect()
    };
    if let Some(ms) = clock_ms {
        let digits = ms.to_string();
        const NAME: &[u8] = b"server_now_ms";
        for at in memchr::memmem::find_iter(body, NAME) {
            let after = at + NAME.len();
            // Between the name and the value only quoting and a colon
            // (`":` in JSON, `&quot;:` in an attribute).
            let window = &body[after..body.len().min(after + 12 + digits.len())];
            if let Some(gap) = memchr::memmem::find(window, digits.as_bytes()) {
                let between = &window[..gap];
                let start = after + gap;
                let end = start + digits.len();
                let digit_follows = body.get(end).is_some_and(u8::is_ascii_digit);
                if between.iter().all(|b| matches!(b, b'"' | b':' | b'&' | b';' | b' ') || b.is_ascii_lowercase()) && !digit_follows {
                    holes.push((start..end, Hole::Clock));
                }
            }
        }
    }
    holes.sort_by_key(|(range, _)| range.start);
    holes
}

/// The kept page for one request: its own nonce (for the policy too), its
/// own clock, the drawing in its map slot; `None` when it has been drawn anew.
fn answer_from(kept: &KeptPage, request: &Request) -> Option<Response> {
    if kept.map.as_ref().is_some_and(|map| !map.is_current()) {
        return None;
    }
    let nonce = crate::gates::headers::nonce();
    let now_ms = chrono::Utc::now().timestamp_millis().to_string();
    let mut body = Vec::with_capacity(kept.body.len() + 64);
    let mut at = 0;
    for (range, hole) in &kept.holes {
        body.extend_from_slice(&kept.body[at..range.start]);
        body.extend_from_slice(match hole {
            Hole::Nonce => nonce.as_bytes(),
            Hole::Clock => now_ms.as_bytes(),
        });
        at = range.end;
    }
    body.extend_from_slice(&kept.body[at..]);
    if let Some(slot) = request.extensions().get::<PageNonce>() {
        slot.set(nonce);
    }
    if let (Some(slot), Some(map)) = (request.extensions().get::<MapSlot>(), &kept.map) {
        slot.put(map.clone());
    }
    let mut response = Response::new(Body::from(body));
    *response.headers_mut() = kept.headers.clone();
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A browser's GET, with a session (`Some`) or without.
    fn get(uri: &str, session: Option<&str>) -> Request {
        let mut request = axum::http::Request::builder().uri(uri).header(ACCEPT, "text/html,application/xhtml+xml").body(Body::empty()).expect("a request");
        let id = session.map(|s| s.parse().expect("a session id"));
        request.extensions_mut().insert(Session::new(id, Arc::new(tower_sessions::MemoryStore::default()), None));
        request
    }

    #[test]
    fn only_browsers_signed_out_gets_of_event_pages_in_one_spelling_are_kept() {
        let id = "/events/8d1e1c43-5f3a-4a43-9d0c-6f1c6f0d2a11";
        assert_eq!(key_of(&get(id, None)).as_deref(), Some(id));
        assert_eq!(key_of(&get("/events/8D1E1C435F3A4A439D0C6F1C6F0D2A11", None)).as_deref(), Some(id), "one key per event");
        assert_eq!(key_of(&get(&format!("{id}?view=whole"), None)), Some(format!("{id}?view=whole")));
        assert_eq!(key_of(&get(&format!("{id}/sections/A?block=02"), None)), Some(format!("{id}/sections/A?block=2")));
        assert!(key_of(&get(&format!("{id}/sections/A/rows/1"), None)).is_some());
        for made_up in ["?x=1", "?block=99999", "/sections/%41", "/sections//rows", "/a/b/c/d/e"] {
            assert!(key_of(&get(&format!("{id}{made_up}"), None)).is_none(), "{made_up} is rendered, not kept");
        }
        assert!(key_of(&get("/account", None)).is_none());
        assert!(key_of(&get("/events/not-an-id", None)).is_none());
        let session = "AAAAAAAAAAAAAAAAAAAAAA";
        assert!(key_of(&get(id, Some(session))).is_none(), "a session's page is its own");
        let mut head = get(id, None);
        *head.method_mut() = Method::HEAD;
        assert!(key_of(&head).is_none());
        let mut not_a_browser = get(id, None);
        not_a_browser.headers_mut().insert(ACCEPT, "*/*".parse().expect("a header"));
        assert!(key_of(&not_a_browser).is_none(), "redirects come as 200 to those");
    }

    #[test]
    fn the_nonce_everywhere_and_the_clock_after_its_name_are_the_holes() {
        let body = br#"<script nonce="n0nce">x</script><i data-props="{&quot;seq&quot;:1700000000000,&quot;server_now_ms&quot;:1700000000000}"></i><link nonce="n0nce">{"server_now_ms":1700000000000}"#;
        let holes = holes_in(body, "n0nce", Some(1_700_000_000_000));
        let found: Vec<(&[u8], Hole)> = holes.iter().map(|(r, h)| (&body[r.clone()], *h)).collect();
        assert_eq!(
            found,
            vec![
                (&b"n0nce"[..], Hole::Nonce),
                (&b"1700000000000"[..], Hole::Clock),
                (&b"n0nce"[..], Hole::Nonce),
                (&b"1700000000000"[..], Hole::Clock)
            ],
            "the same digits elsewhere are left alone"
        );
        assert!(holes_in(br#"server_now_ms":17000000000001"#, "", Some(1_700_000_000_000)).is_empty(), "only the whole number");
    }
}
