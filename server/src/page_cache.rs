//! Event pages kept for a short while and shared by the viewers who would
//! get the same page.
//!
//! Before and during an on-sale most of the crowd looks at the map, and
//! every signed-out viewer of one address gets the same page but for two
//! things: the nonce of its inline scripts and the server clock its
//! countdowns start from. Every signed-in fan without a hold of this event
//! (nor a waiting room) gets that page too, but for a third: the header's
//! links with their name. Such a page is rendered by the app at most once
//! per `keep` (`FRONTROW_PAGE_KEEP_MS`) for each kind of viewer, and each
//! viewer gets it with a nonce of their own, the clock of their request and
//! (a fan) their own header links put in. Concurrent viewers of a page
//! being rendered wait for that one render.
//!
//! Only pages the app rendered as shared (it says so, see `RenderedPage`)
//! and answered 200 to a browser's GET are kept; anything else (a fan's
//! page with their hold, a redirect to the waiting room, a 404) is rendered
//! per request. A kept page whose map has since been drawn anew is rendered
//! again.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use frontrow_app::pages::{fan_sharing_the_page, viewer_links_html};
use frontrow_app::seatmap::{DrawnMap, MapSlot};
use frontrow_app::server::RenderedPage;
use frontrow_engine::Engine;
use frontrow_model::{AppError, EventId, User};
use tower_sessions::Session;

use crate::gates::headers::PageNonce;

/// Addresses kept at once: every section and block of a few big events
/// (a page without its map is some kilobytes).
const KEPT_PAGES: u64 = 1024;

/// The kept pages, by address and kind of viewer.
pub struct KeptPages {
    pages: moka::future::Cache<String, Arc<Entry>>,
    engine: Engine,
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
    /// The header's links for the signed-in fan.
    FanLinks,
}

/// Who a page is kept for.
enum Viewer {
    SignedOut,
    /// A signed-in fan whose page is every such fan's (see
    /// [`fan_sharing_the_page`]).
    Fan(User),
}

impl KeptPages {
    /// Pages kept at most `keep`; `None` when that is zero (every page
    /// rendered for its request).
    pub fn new(keep: Duration, engine: Engine) -> Option<Self> {
        (!keep.is_zero()).then(|| Self { pages: moka::future::Cache::builder().max_capacity(KEPT_PAGES).time_to_live(keep).build(), engine })
    }

    /// Who this request's viewer is, if their page may be a kept one.
    async fn viewer(&self, session: Option<Session>, event_id: EventId) -> Option<Viewer> {
        let session = session?;
        if session.id().is_none() {
            return Some(Viewer::SignedOut);
        }
        // A failure here is the render's to report.
        fan_sharing_the_page(&self.engine, &session, event_id).await.ok().flatten().map(Viewer::Fan)
    }
}

/// The address a request's page is kept under, if it may be: a browser's
/// plain GET of an event's page, in one spelling (the event's id as the
/// app writes it, plain path segments, only the queries the pages read),
/// so made-up variants cannot fill the cache.
fn address_of(request: &Request) -> Option<(String, EventId)> {
    let uri = request.uri();
    let browser = request.headers().get(ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/html"));
    if request.method() != Method::GET || !browser {
        return None;
    }
    let mut segments = uri.path().strip_prefix("/events/")?.split('/');
    let event_id: EventId = segments.next()?.parse().ok()?;
    let mut address = format!("/events/{event_id}");
    for (n, segment) in segments.enumerate() {
        let plain = !segment.is_empty() && segment.len() <= 64 && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if n >= 4 || !plain {
            return None;
        }
        address.push('/');
        address.push_str(segment);
    }
    match uri.query() {
        None | Some("") => {}
        Some("view=whole") => address.push_str("?view=whole"),
        Some(q) => {
            let block: u16 = q.strip_prefix("block=")?.parse().ok()?;
            address.push_str(&format!("?block={block}"));
        }
    }
    Some((address, event_id))
}

/// Answers an event page from the page kept for its address and kind of
/// viewer, rendering it when there is none.
pub async fn kept_pages(State(pages): State<Option<Arc<KeptPages>>>, request: Request, next: Next) -> Response {
    let (Some(pages), Some((address, event_id))) = (pages, address_of(&request)) else { return next.run(request).await };
    let session = request.extensions().get::<Session>().cloned();
    let Some(viewer) = pages.viewer(session, event_id).await else { return next.run(request).await };
    let (key, kind) = match &viewer {
        Viewer::SignedOut => (address, "signed_out"),
        Viewer::Fan(_) => (format!("{address}#fan"), "fan"),
    };
    let entry = pages.pages.get_with(key.clone(), async { Arc::new(Entry::default()) }).await;
    let (mut request, mut next, mut rendered) = (Some(request), Some(next), None);
    let (own_request, own_next, own_answer, first_viewer) = (&mut request, &mut next, &mut rendered, &viewer);
    let kept = entry
        .page
        .get_or_init(|| async move {
            // Only the first caller gets here, and renders for its own request.
            let (Some(request), Some(next)) = (own_request.take(), own_next.take()) else { return None };
            let (kept, response) = render_and_keep(request, next, first_viewer).await;
            *own_answer = Some(response);
            kept
        })
        .await
        .clone();
    if let Some(response) = rendered {
        count(kind, "rendered");
        return response;
    }
    let (Some(request), Some(next)) = (request, next) else { return AppError::internal().into_response() };
    if let Some(kept) = kept {
        if let Some(response) = answer_from(&kept, &request, &viewer) {
            count(kind, "kept");
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
    count(kind, "rendered");
    next.run(request).await
}

fn count(viewer: &'static str, outcome: &'static str) {
    metrics::counter!("frontrow_kept_pages_total", "viewer" => viewer, "outcome" => outcome).increment(1);
}

/// Renders the page for its own request and keeps it if it is one to keep.
async fn render_and_keep(mut request: Request, next: Next, viewer: &Viewer) -> (Option<Arc<KeptPage>>, Response) {
    let rendered = RenderedPage::default();
    request.extensions_mut().insert(rendered.clone());
    let extensions = request.extensions();
    let (nonce, map, session) = (extensions.get::<PageNonce>().cloned(), extensions.get::<MapSlot>().cloned(), extensions.get::<Session>().cloned());
    let response = next.run(request).await;
    let (Some(nonce), Some(facts)) = (nonce.and_then(|n| n.get()), rendered.facts()) else { return (None, response) };
    let headers = response.headers();
    let keepable = facts.shared
        && response.status() == StatusCode::OK
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
    let mut holes = holes_in(&body, &nonce, facts.server_now_ms);
    if let Viewer::Fan(user) = viewer {
        // The links must be found as the app writes them, or the page
        // is not kept (another fan would see this one's name).
        match fan_links_in(&body, &viewer_links_html(Some(user))) {
            Some(range) if !holes.iter().any(|(hole, _)| hole.start < range.end && range.start < hole.end) => holes.push((range, Hole::FanLinks)),
            _ => {
                tracing::warn!("a fan's header links not found in their page: not kept");
                return (None, Response::from_parts(parts, Body::from(body)));
            }
        }
        holes.sort_by_key(|(range, _)| range.start);
    }
    // The drawing stays in the slot for this request's answer.
    let map = map.and_then(|slot| slot.peek());
    // Nothing of the viewer's is in these (cookies and a policy of the
    // render's own are refused above; the outer layers add theirs).
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
    let digits = clock_ms.map(|ms| ms.to_string()).unwrap_or_default();
    const NAME: &[u8] = b"server_now_ms";
    for at in memchr::memmem::find_iter(body, NAME).filter(|_| !digits.is_empty()) {
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
    holes.sort_by_key(|(range, _)| range.start);
    holes
}

/// Where the header's account links (`links`, as rendered) are: inside
/// the header's account navigation.
fn fan_links_in(body: &[u8], links: &str) -> Option<Range<usize>> {
    const NAV: &[u8] = br#"<nav aria-label="Account">"#;
    let nav = memchr::memmem::find(body, NAV)? + NAV.len();
    let end = nav + memchr::memmem::find(&body[nav..], b"</nav>")?;
    let at = nav + memchr::memmem::find(&body[nav..end], links.as_bytes())?;
    Some(at..at + links.len())
}

/// The kept page for one request: its own nonce (for the policy too), its
/// own clock, a fan's own links, the drawing in its map slot; `None` when
/// the map has been drawn anew since.
fn answer_from(kept: &KeptPage, request: &Request, viewer: &Viewer) -> Option<Response> {
    if kept.map.as_ref().is_some_and(|map| !map.is_current()) {
        return None;
    }
    let nonce = crate::gates::headers::nonce();
    let now_ms = chrono::Utc::now().timestamp_millis().to_string();
    let links = match viewer {
        Viewer::Fan(user) => viewer_links_html(Some(user)),
        Viewer::SignedOut => String::new(),
    };
    let mut body = Vec::with_capacity(kept.body.len() + 64 + links.len());
    let mut at = 0;
    for (range, hole) in &kept.holes {
        body.extend_from_slice(&kept.body[at..range.start]);
        body.extend_from_slice(match hole {
            Hole::Nonce => nonce.as_bytes(),
            Hole::Clock => now_ms.as_bytes(),
            Hole::FanLinks => links.as_bytes(),
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

    fn get(uri: &str) -> Request {
        axum::http::Request::builder().uri(uri).header(ACCEPT, "text/html,application/xhtml+xml").body(Body::empty()).expect("a request")
    }

    fn address(uri: &str) -> Option<String> {
        address_of(&get(uri)).map(|(address, _)| address)
    }

    #[test]
    fn only_browsers_gets_of_event_pages_in_one_spelling_are_kept() {
        let id = "/events/8d1e1c43-5f3a-4a43-9d0c-6f1c6f0d2a11";
        assert_eq!(address(id).as_deref(), Some(id));
        assert_eq!(address("/events/8D1E1C435F3A4A439D0C6F1C6F0D2A11").as_deref(), Some(id), "one address per event");
        assert_eq!(address(&format!("{id}?view=whole")), Some(format!("{id}?view=whole")));
        assert_eq!(address(&format!("{id}/sections/A?block=02")), Some(format!("{id}/sections/A?block=2")));
        assert!(address(&format!("{id}/sections/A/rows/1")).is_some());
        for made_up in ["?x=1", "?block=99999", "/sections/%41", "/sections//rows", "/a/b/c/d/e"] {
            assert!(address(&format!("{id}{made_up}")).is_none(), "{made_up} is rendered, not kept");
        }
        assert!(address("/account").is_none());
        assert!(address("/events/not-an-id").is_none());
        let mut head = get(id);
        *head.method_mut() = Method::HEAD;
        assert!(address_of(&head).is_none());
        let mut not_a_browser = get(id);
        not_a_browser.headers_mut().insert(ACCEPT, "*/*".parse().expect("a header"));
        assert!(address_of(&not_a_browser).is_none(), "redirects come as 200 to those");
    }

    #[test]
    fn a_fans_links_are_found_only_in_the_account_navigation() {
        let links = r#"<a href="/account">My bookings</a><span class="who">Ann</span>"#;
        let body = format!(r#"<p>{links}</p><nav aria-label="Account">{links}</nav><main>{links}</main>"#);
        let range = fan_links_in(body.as_bytes(), links).expect("found");
        assert_eq!(&body[range.clone()], links);
        assert_eq!(range.start, body.find(r#"<nav aria-label="Account">"#).expect("nav") + r#"<nav aria-label="Account">"#.len());
        assert!(fan_links_in(format!(r#"<nav aria-label="Account"></nav>{links}"#).as_bytes(), links).is_none(), "not after the navigation");
        assert!(fan_links_in(links.as_bytes(), links).is_none(), "not without it");
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
