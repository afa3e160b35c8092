//! Load shedding at the door. Buying seats and the waiting room each have a
//! bounded number of requests in flight per instance; a request that cannot
//! start within a short wait, or that finds as many already waiting as are
//! worked on, is answered with 503 `overloaded` and `Retry-After`, and
//! nothing is done for it. Under overload every fan gets
//! a definite answer in bounded time instead of queueing in the server (and
//! in front of the database pool) until their client gives up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::api::error::AppError;

/// The kinds of work that are bounded, each on its own: a flood of queue
/// joins does not starve the checkouts of fans already admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Holds, releases and checkouts.
    Sale,
    /// Joining the waiting room and asking for one's place.
    Queue,
}

impl Work {
    fn label(self) -> &'static str {
        match self {
            Work::Sale => "sale",
            Work::Queue => "queue",
        }
    }

    /// The bounded work a request is, from the JSON API's route or a
    /// server function's path.
    pub fn of(method: &Method, route: Option<&str>, path: &str) -> Option<Work> {
        match (method, route) {
            (&Method::POST, Some("/api/v1/events/{event_id}/holds" | "/api/v1/events/{event_id}/holds/best"))
            | (&Method::POST, Some("/api/v1/events/{event_id}/holds/standing" | "/api/v1/holds/{hold_id}/checkout"))
            | (&Method::DELETE, Some("/api/v1/holds/{hold_id}")) => Some(Work::Sale),
            (&Method::POST, Some("/api/v1/events/{event_id}/queue")) | (&Method::GET, Some("/api/v1/events/{event_id}/queue/{queue_token}")) => {
                Some(Work::Queue)
            }
            _ if frontrow_app::actions::sale_paths().contains(&path) => Some(Work::Sale),
            _ if frontrow_app::actions::queue_paths().contains(&path) => Some(Work::Queue),
            _ => None,
        }
    }
}

/// How many requests of each kind may be worked on at once, how many more
/// may wait in line for a turn, and how long one waits before it is turned
/// away.
pub struct InFlight {
    sale: Bound,
    queue: Bound,
    wait: Duration,
}

/// One kind's turns and its line.
struct Bound {
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    /// The longest line: as many as are worked on at once. A request that
    /// finds the line full would not get a turn within the wait anyway, so
    /// it is told at once rather than after the wait (and the line stays
    /// short enough that those in it are served in good time).
    max_waiting: usize,
}

/// One place in a line, given up however the wait ends.
struct InLine<'a>(&'a AtomicUsize);

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Requests of each kind worked on at once unless configured: 128 for each
/// core the process may use. What is in flight waits on the same cores, so
/// a fixed number kept each turn waiting longer on a smaller machine; on
/// one core 256 put the queue join's p99 per try at 1.2-1.7 s, 128 at
/// 0.55-0.84 s (more tries were turned away at once instead).
pub fn default_bound() -> usize {
    128 * std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

impl InFlight {
    pub fn new(per_kind: usize, wait: Duration) -> Self {
        let per_kind = per_kind.max(1);
        let bound = || Bound { permits: Arc::new(Semaphore::new(per_kind)), waiting: AtomicUsize::new(0), max_waiting: per_kind };
        Self { sale: bound(), queue: bound(), wait }
    }

    /// A turn for `work`: at once if one is free, else after waiting in line
    /// for up to the wait; `None` when the line is full or the wait ran out.
    pub async fn turn(&self, work: Work) -> Option<OwnedSemaphorePermit> {
        let bound = match work {
            Work::Sale => &self.sale,
            Work::Queue => &self.queue,
        };
        if let Ok(permit) = bound.permits.clone().try_acquire_owned() {
            return Some(permit);
        }
        if bound.waiting.fetch_add(1, Ordering::AcqRel) >= bound.max_waiting {
            bound.waiting.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let _in_line = InLine(&bound.waiting);
        tokio::time::timeout(self.wait, bound.permits.clone().acquire_owned()).await.ok()?.ok()
    }
}

/// Seconds a turned-away client is asked to wait; the waiting room's page
/// and the load generator's fans retry after it.
const RETRY_AFTER_SECS: u64 = 2;

pub async fn shed_load(State(in_flight): State<Arc<InFlight>>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map(MatchedPath::as_str);
    let Some(work) = Work::of(request.method(), route, request.uri().path()) else {
        return next.run(request).await;
    };
    let arrived = std::time::Instant::now();
    let Some(permit) = in_flight.turn(work).await else {
        metrics::counter!("frontrow_shed_total", "work" => work.label()).increment(1);
        return AppError::overloaded(RETRY_AFTER_SECS).into_response();
    };
    // How long the line and the work each take under load: the first is
    // bounded here, the second is what the line's length should follow.
    metrics::histogram!("frontrow_turn_wait_seconds", "work" => work.label()).record(arrived.elapsed().as_secs_f64());
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    metrics::histogram!("frontrow_turn_work_seconds", "work" => work.label()).record(started.elapsed().as_secs_f64());
    drop(permit);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_routes_and_server_functions_of_a_sale_and_the_queue_are_bounded() {
        let of = |m: Method, route: Option<&str>, path: &str| Work::of(&m, route, path);
        assert_eq!(of(Method::POST, Some("/api/v1/events/{event_id}/holds"), "/api/v1/events/x/holds"), Some(Work::Sale));
        assert_eq!(of(Method::DELETE, Some("/api/v1/holds/{hold_id}"), "/api/v1/holds/x"), Some(Work::Sale));
        assert_eq!(of(Method::GET, Some("/api/v1/holds/{hold_id}"), "/api/v1/holds/x"), None);
        assert_eq!(of(Method::POST, Some("/api/v1/events/{event_id}/queue"), "/api/v1/events/x/queue"), Some(Work::Queue));
        assert_eq!(of(Method::POST, None, frontrow_app::actions::sale_paths()[0]), Some(Work::Sale));
        assert_eq!(of(Method::POST, None, frontrow_app::actions::queue_paths()[0]), Some(Work::Queue));
        assert_eq!(of(Method::GET, Some("/api/v1/events"), "/api/v1/events"), None);
    }

    #[tokio::test]
    async fn a_full_line_is_turned_away_at_once_and_those_in_it_get_the_next_turns() {
        let in_flight = Arc::new(InFlight::new(1, Duration::from_secs(30)));
        let working = in_flight.turn(Work::Sale).await.expect("a free turn");
        let in_line = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.turn(Work::Sale).await.is_some() }
        });
        while in_flight.sale.waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        let started = std::time::Instant::now();
        assert!(in_flight.turn(Work::Sale).await.is_none(), "the line is full");
        assert!(started.elapsed() < Duration::from_secs(1), "told at once, not after the wait");
        assert!(in_flight.turn(Work::Queue).await.is_some(), "the other kind has its own bound");
        drop(working);
        assert!(in_line.await.expect("waiter"), "the one in line gets the freed turn");
        assert_eq!(in_flight.sale.waiting.load(Ordering::Acquire), 0, "the line is empty again");
    }
}
