//! One fan's journey through the on-sale, and the answer it ends with.

use super::OnsaleArgs;
use crate::scenarios::*;

/// A fan's definitive answer.
#[derive(Clone, Copy)]
pub(super) enum Outcome {
    Booked,
    Abandoned,
    SoldOutInQueue,
    SoldOut,
    GaveUp,
    PaymentFailed,
    HoldExpired,
    Refused,
    /// Not definitive: still waiting for admission when the scenario ended.
    StillQueued,
    Error,
}

impl Outcome {
    pub(super) fn key(self) -> &'static str {
        match self {
            Outcome::Booked => "booked",
            Outcome::Abandoned => "abandoned (hold left to expire)",
            Outcome::SoldOutInQueue => "told sold out in the queue",
            Outcome::SoldOut => "sold out after admission",
            Outcome::GaveUp => "conflict, then gave up",
            Outcome::PaymentFailed => "payment failed",
            Outcome::HoldExpired => "hold expired before payment",
            Outcome::Refused => "refused (4xx)",
            Outcome::StillQueued => "still in the queue at the cap (no answer)",
            Outcome::Error => "error (no answer)",
        }
    }
}

pub(super) struct Sale {
    pub(super) api: Api,
    pub(super) event_id: String,
    pub(super) board: SharedBoard,
    pub(super) rec: Recorder,
    pub(super) args: OnsaleArgs,
    pub(super) patience: Duration,
    pub(super) stop: Stop,
    pub(super) finished: AtomicU64,
    pub(super) booked: AtomicU64,
    pub(super) holds_granted: AtomicU64,
}

impl Sale {
    pub(super) fn done(&self, o: Outcome) {
        self.rec.count(&format!("outcome.{}", o.key()));
        self.finished.fetch_add(1, Ordering::Relaxed);
        if matches!(o, Outcome::Booked) {
            self.booked.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(super) fn all_sold(&self) -> bool {
        let b = self.board.read().unwrap_or_else(|p| p.into_inner());
        b.sold_out_at.is_some()
            || (b.loaded() && {
                let c = b.counts();
                c.available == 0 && c.held == 0
            })
    }

    /// Calls until the server does not turn the call away (503: overloaded,
    /// nothing done, or the database briefly away), waiting as told
    /// and up to a second more between tries, like the waiting room's page
    /// and the checkout; each try's answer is timed. Stops trying when the
    /// scenario ends.
    pub(super) async fn patiently<F, Fut>(&self, op: &str, intended: Instant, mut call: F) -> Option<Reply>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Reply>>,
    {
        let mut intended = intended;
        loop {
            match timed(&self.rec, op, intended, call()).await {
                Some(r) if r.status == 503 && matches!(r.error_code(), "overloaded" | "unavailable") && !self.stop.stopped() => {
                    self.rec.count(&format!("turned away, then tried again: {op}"));
                    let wait = Duration::from_secs(r.body["retry_after"].as_u64().unwrap_or(2));
                    tokio::time::sleep(wait + jitter(0, 1000)).await;
                    intended = Instant::now();
                }
                other => return other,
            }
        }
    }

    pub(super) fn available(&self) -> usize {
        self.board.read().unwrap_or_else(|p| p.into_inner()).counts().available
    }

    pub(super) async fn journey(self: Arc<Self>, fan: Fan, intended: Instant) {
        let o = self.clone().journey_inner(&fan, intended).await;
        self.done(o);
    }

    pub(super) async fn journey_inner(self: Arc<Self>, fan: &Fan, intended: Instant) -> Outcome {
        let (api, rec, ev) = (&self.api, &self.rec, &self.event_id);
        let s = Some(fan.session.as_str());
        let (join_path, no_body) = (format!("/api/v1/events/{ev}/queue"), json!({}));
        let Some(join) = self.patiently("queue join", intended, || api.post(&join_path, s, &[], &no_body)).await else {
            return Outcome::Error;
        };
        if join.status != 201 {
            return if join.status < 500 { Outcome::Refused } else { Outcome::Error };
        }
        // What the fan lives through: from their arrival to a place, every
        // try turned away with `Retry-After` and the wait after it included.
        rec.record("queue join (arrival to a place, retries included)", intended.elapsed());
        let Some(token) = join.str("queue_token").map(str::to_owned) else { return Outcome::Error };
        let joined = Instant::now();
        let admission = match self.wait_admission(fan, &token).await {
            Ok(Some(a)) => a,
            Ok(None) => return Outcome::SoldOutInQueue,
            Err(_) if self.stop.stopped() => return Outcome::StillQueued,
            Err(_) => return Outcome::Error,
        };
        rec.record("queue wait (join answered to admitted)", joined.elapsed());

        // The seat map the admitted fan lands on.
        let t = Instant::now();
        timed(rec, "seat-map page", t, api.page(&format!("/events/{ev}"), s)).await;

        let hold = match self.hold_with_retries(fan, &admission).await {
            Ok(h) => h,
            Err(o) => return o,
        };
        self.holds_granted.fetch_add(1, Ordering::Relaxed);
        if rand::thread_rng().gen_bool((1.0 - self.args.pay_share).clamp(0.0, 1.0)) {
            return Outcome::Abandoned;
        }
        tokio::time::sleep(jitter(200, 1000)).await;
        self.pay(fan, &hold).await
    }

    /// The admission token, or None when the queue says sold out.
    pub(super) async fn wait_admission(&self, fan: &Fan, token: &str) -> Result<Option<String>> {
        let ev = &self.event_id;
        let mut socket = match self.api.socket(&format!("/api/v1/events/{ev}/queue/{token}/live"), &fan.session).await {
            Ok(s) => Some(s),
            Err(_) => {
                // The page falls back to polling every two seconds or so.
                self.rec.count("queue socket refused, polling instead");
                None
            }
        };
        // With a live socket the page polls only as a safety net.
        const SAFETY_POLL: Duration = Duration::from_secs(20);
        let mut poll_at = Instant::now() + SAFETY_POLL;
        let mut told_sold_out: Option<Instant> = None;
        loop {
            if self.stop.stopped() {
                if told_sold_out.is_some() {
                    return Ok(None);
                }
                bail!("the scenario ended first");
            }
            let mut state = None;
            match socket.as_mut() {
                Some(ws) => {
                    enum Next<T> {
                        Frame(Option<T>),
                        PollDue,
                        Stopped,
                    }
                    let next = tokio::select! {
                        f = ws.next() => Next::Frame(f),
                        _ = tokio::time::sleep_until(poll_at.into()) => Next::PollDue,
                        _ = self.stop.wait() => Next::Stopped,
                    };
                    match next {
                        Next::Frame(Some(Ok(Message::Text(text)))) => {
                            poll_at = Instant::now() + SAFETY_POLL;
                            let v: Value = serde_json::from_str(text.as_str()).unwrap_or(Value::Null);
                            state = v["state"].as_str().map(str::to_owned);
                        }
                        Next::Frame(Some(Ok(_))) | Next::Stopped => {}
                        // A quiet socket still gets a poll now and then, in case
                        // a frame was missed.
                        Next::PollDue => {
                            poll_at = Instant::now() + SAFETY_POLL;
                            state = Some("poll".into());
                        }
                        Next::Frame(_) => {
                            self.rec.count("queue socket closed, polling instead");
                            socket = None;
                        }
                    }
                }
                None => {
                    tokio::time::sleep(jitter(1500, 2500)).await;
                    state = Some("poll".into());
                }
            }
            match state.as_deref() {
                // "Sold out" while seats are only held may turn back into a
                // place in the queue: the fan stays on the page a while.
                Some("sold_out") => {
                    let since = *told_sold_out.get_or_insert_with(Instant::now);
                    if self.all_sold() || since.elapsed() >= self.patience {
                        return Ok(None);
                    }
                }
                Some("admitted") | Some("poll") => {
                    // Turned away, the page asks again after `Retry-After`.
                    let status_path = format!("/api/v1/events/{ev}/queue/{token}");
                    let r = self.patiently("queue status", Instant::now(), || self.api.get(&status_path, Some(&fan.session))).await;
                    if let Some(r) = r.filter(|r| r.status == 200) {
                        match (r.str("state"), r.str("admission_token")) {
                            (Some("admitted"), Some(a)) => return Ok(Some(a.to_owned())),
                            (Some("sold_out"), _) => {
                                let since = *told_sold_out.get_or_insert_with(Instant::now);
                                if self.all_sold() || since.elapsed() >= self.patience {
                                    return Ok(None);
                                }
                            }
                            (Some("expired"), _) => bail!("the admission expired"),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }

    pub(super) async fn hold_with_retries(&self, fan: &Fan, admission: &str) -> std::result::Result<Reply, Outcome> {
        let (api, rec, ev) = (&self.api, &self.rec, &self.event_id);
        let headers = [("x-admission-token", admission)];
        let deadline = Instant::now() + self.patience;
        loop {
            let (roll, n): (f64, usize) = {
                let mut r = rand::thread_rng();
                (r.gen(), r.gen_range(1..=4))
            };
            let t = Instant::now();
            let reply = if roll < self.args.hot_share {
                // The front row's first seats: everyone's favourite.
                let k = rand::thread_rng().gen_range(1..=5);
                timed(
                    rec,
                    "hold (hot seats)",
                    t,
                    api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &headers, &json!({ "seat_ids": [seat_id(1, k)] })),
                )
                .await
            } else if roll < 0.55 {
                let mut picked = Vec::new();
                {
                    let b = self.board.read().unwrap_or_else(|p| p.into_inner());
                    for _ in 0..n {
                        if let Some(s) = b.random_available(&picked) {
                            picked.push(s);
                        }
                    }
                }
                if picked.is_empty() {
                    picked.push(seat_id(1, 1));
                }
                timed(
                    rec,
                    "hold (chosen seats)",
                    t,
                    api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &headers, &json!({ "seat_ids": picked })),
                )
                .await
            } else {
                let tier = if rand::thread_rng().gen_bool(0.1) { "Front" } else { "Standard" };
                timed(
                    rec,
                    "hold (best available)",
                    t,
                    api.post(&format!("/api/v1/events/{ev}/holds/best"), Some(&fan.session), &headers, &json!({ "count": n, "tier": tier })),
                )
                .await
            };
            match reply {
                Some(r) if r.status == 201 || r.status == 200 => {
                    rec.add("seats held", r.body["seat_ids"].as_array().map_or(0, |a| a.len() as u64));
                    return Ok(r);
                }
                Some(r) if r.status == 409 => rec.count(&format!("hold conflict: {}", r.error_code())),
                Some(r) if (400..500).contains(&r.status) && r.status != 429 => {
                    rec.count(&format!("hold refused: {} {}", r.status, r.error_code()));
                    return Err(Outcome::Refused);
                }
                // 429, 5xx (a database away answers 503) or no answer: try again.
                _ => {}
            }
            // Retry on conflict, as a fan watching the live map would: only
            // when something is free, until sold out or out of patience.
            loop {
                if self.all_sold() {
                    return Err(Outcome::SoldOut);
                }
                if Instant::now() >= deadline || self.stop.stopped() {
                    return Err(Outcome::GaveUp);
                }
                tokio::time::sleep(jitter(300, 1200)).await;
                if self.available() > 0 {
                    break;
                }
            }
            rec.count("hold retries");
        }
    }

    pub(super) async fn pay(&self, fan: &Fan, hold: &Reply) -> Outcome {
        let (api, rec) = (&self.api, &self.rec);
        let (Some(hold_id), Some(hold_token)) = (hold.str("hold_id"), hold.str("hold_token")) else { return Outcome::Error };
        let roll: f64 = rand::thread_rng().gen();
        // 80% approve, 10% decline then pay with another card, 10% slow.
        let cards: &[&str] = if roll < 0.8 {
            &["tok_visa"]
        } else if roll < 0.9 {
            &["tok_chargeDeclined", "tok_visa"]
        } else {
            &["tok_slow"]
        };
        for card in cards {
            rec.count(&format!("card {card}"));
            let key = random_key();
            let body = json!({ "hold_token": hold_token, "payment_token": card });
            let (path, headers) = (format!("/api/v1/holds/{hold_id}/checkout"), [("idempotency-key", key.as_str())]);
            let checkout = || api.post(&path, Some(&fan.session), &headers, &body);
            let Some(r) = self.patiently("checkout", Instant::now(), checkout).await else {
                return Outcome::Error;
            };
            match r.status {
                201 => return Outcome::Booked,
                202 => return self.follow_pending(fan, r.str("checkout_id").unwrap_or_default()).await,
                402 => continue,
                410 => return Outcome::HoldExpired,
                s if s < 500 => return Outcome::Refused,
                _ => return Outcome::Error,
            }
        }
        Outcome::PaymentFailed
    }

    pub(super) async fn follow_pending(&self, fan: &Fan, checkout_id: &str) -> Outcome {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(90) && !self.stop.stopped() {
            tokio::time::sleep(jitter(800, 1200)).await;
            if let Some(r) =
                timed(&self.rec, "checkout status", Instant::now(), self.api.get(&format!("/api/v1/checkouts/{checkout_id}"), Some(&fan.session)))
                    .await
            {
                match r.str("status") {
                    Some("confirmed") => {
                        self.rec.record("slow payment settled", started.elapsed());
                        return Outcome::Booked;
                    }
                    Some("failed") | Some("refunded") => return Outcome::PaymentFailed,
                    _ => {}
                }
            }
        }
        Outcome::Error
    }
}
