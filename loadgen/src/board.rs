//! A live seat map kept from `GET /api/v1/events/{id}/live`, as a fan's page
//! keeps one: fans pick seats from it and the on-sale knows when it sold out.
//! One watcher per server instance lets the two-instance run compare maps.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::Rng;
use serde_json::Value;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;

#[derive(Default)]
pub struct Board {
    /// Seat id -> (status, version of the change that set it).
    seats: HashMap<String, (String, i64)>,
    ids: Vec<String>,
    pub snapshots: u64,
    pub diffs: u64,
    pub reconnects: u64,
    /// When the map first showed every seat sold.
    pub sold_out_at: Option<Instant>,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Counts {
    pub available: usize,
    pub held: usize,
    pub sold: usize,
}

impl Board {
    fn apply(&mut self, seats: &[Value], frame_version: i64, snapshot: bool) {
        for s in seats {
            let (Some(id), Some(status)) = (s["seat_id"].as_str(), s["status"].as_str()) else { continue };
            let version = s["version"].as_i64().unwrap_or(frame_version);
            match self.seats.get_mut(id) {
                // Changes may arrive out of order; the newest version wins.
                Some(entry) if snapshot || version >= entry.1 => *entry = (status.to_owned(), version),
                Some(_) => {}
                None => {
                    self.ids.push(id.to_owned());
                    self.seats.insert(id.to_owned(), (status.to_owned(), version));
                }
            }
        }
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for (status, _) in self.seats.values() {
            match status.as_str() {
                "available" => c.available += 1,
                "held" => c.held += 1,
                _ => c.sold += 1,
            }
        }
        c
    }

    pub fn loaded(&self) -> bool {
        !self.seats.is_empty()
    }

    pub fn status_of(&self, seat: &str) -> Option<&str> {
        self.seats.get(seat).map(|(s, _)| s.as_str())
    }

    /// A random available seat, other than those in `avoid`.
    pub fn random_available(&self, avoid: &[String]) -> Option<String> {
        if self.ids.is_empty() {
            return None;
        }
        let mut rng = rand::thread_rng();
        for _ in 0..32 {
            let id = &self.ids[rng.gen_range(0..self.ids.len())];
            if self.status_of(id) == Some("available") && !avoid.contains(id) {
                return Some(id.clone());
            }
        }
        let start = rng.gen_range(0..self.ids.len());
        self.ids.iter().cycle().skip(start).take(self.ids.len()).find(|id| self.status_of(id) == Some("available") && !avoid.contains(id)).cloned()
    }

    /// Seat id -> status, for comparing two instances' maps.
    pub fn statuses(&self) -> HashMap<String, String> {
        self.seats.iter().map(|(k, (s, _))| (k.clone(), s.clone())).collect()
    }
}

pub type SharedBoard = Arc<RwLock<Board>>;

/// Keeps `board` up to date from the live feed until `stop` fires,
/// reconnecting with jittered back-off (a database restart or a dropped
/// laggard closes the socket).
pub fn watch(ws_base: String, event_id: String, stop: Stop) -> SharedBoard {
    let board: SharedBoard = Arc::default();
    let shared = board.clone();
    tokio::spawn(async move {
        let url = format!("{ws_base}/api/v1/events/{event_id}/live");
        let mut backoff = Duration::from_millis(200);
        while !stop.stopped() {
            if let Ok((mut socket, _)) = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(crate::api::socket_config()), false).await {
                backoff = Duration::from_millis(200);
                loop {
                    let next = tokio::select! {
                        next = socket.next() => next,
                        _ = stop.wait() => return,
                    };
                    let Some(Ok(message)) = next else { break };
                    let Message::Text(text) = message else { continue };
                    let Ok(frame) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                    let version = frame["version"].as_i64().unwrap_or(0);
                    let mut b = shared.write().unwrap_or_else(|p| p.into_inner());
                    match frame["type"].as_str() {
                        Some("snapshot") => {
                            b.snapshots += 1;
                            b.apply(frame["seats"].as_array().map(Vec::as_slice).unwrap_or(&[]), version, true);
                        }
                        Some("diff") => {
                            b.diffs += 1;
                            b.apply(frame["changes"].as_array().map(Vec::as_slice).unwrap_or(&[]), version, false);
                        }
                        _ => {}
                    }
                    if b.sold_out_at.is_none() && b.loaded() {
                        let c = b.counts();
                        if c.available == 0 && c.held == 0 {
                            b.sold_out_at = Some(Instant::now());
                        }
                    }
                }
            }
            shared.write().unwrap_or_else(|p| p.into_inner()).reconnects += 1;
            let jitter = rand::thread_rng().gen_range(0..=backoff.as_millis() as u64 / 2);
            tokio::time::sleep(backoff + Duration::from_millis(jitter)).await;
            backoff = (backoff * 2).min(Duration::from_secs(3));
        }
    });
    board
}

/// A one-shot stop signal shared by background tasks.
#[derive(Clone)]
pub struct Stop(Arc<watch::Sender<bool>>, watch::Receiver<bool>);

impl Stop {
    pub fn new() -> Stop {
        let (tx, rx) = watch::channel(false);
        Stop(Arc::new(tx), rx)
    }
    pub fn fire(&self) {
        let _ = self.0.send(true);
    }
    pub fn stopped(&self) -> bool {
        *self.1.borrow()
    }
    pub async fn wait(&self) {
        let mut rx = self.1.clone();
        let _ = rx.wait_for(|v| *v).await;
    }
}
