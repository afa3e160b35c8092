//! Load shedding at the door. Buying seats and the waiting room each have a
//! bounded number of requests in flight per instance; a request that cannot
//! start within a short wait is answered at once with 503 `overloaded` and
//! `Retry-After`, and nothing is done for it. Under overload every fan gets
//! a definite answer in bounded time instead of queueing in the server (and
//! in front of the database pool) until their client gives up.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

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

/// How many requests of each kind may be worked on at once, and how long
/// one waits for a turn before it is turned away.
pub struct InFlight {
    sale: Arc<Semaphore>,
    queue: Arc<Semaphore>,
    wait: Duration,
}

impl InFlight {
    pub fn new(per_kind: usize, wait: Duration) -> Self {
        let per_kind = per_kind.max(1);
        Self { sale: Arc::new(Semaphore::new(per_kind)), queue: Arc::new(Semaphore::new(per_kind)), wait }
    }

    fn permits(&self, work: Work) -> Arc<Semaphore> {
        match work {
            Work::Sale => self.sale.clone(),
            Work::Queue => self.queue.clone(),
        }
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
    let permits = in_flight.permits(work);
    let permit = match permits.clone().try_acquire_owned() {
        Ok(permit) => permit,
        Err(_) => match tokio::time::timeout(in_flight.wait, permits.acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            _ => {
                metrics::counter!("frontrow_shed_total", "work" => work.label()).increment(1);
                return AppError::overloaded(RETRY_AFTER_SECS).into_response();
            }
        },
    };
    let response = next.run(request).await;
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
}
