//! The bench scenarios. Each returns a JSON report and a Markdown section.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use rand::Rng;
use reqwest::Method;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::api::{create_event, event_body, seat_id, Api, Fan, Reply};
use crate::board::{self, SharedBoard, Stop};
use crate::stats::{cpu_now, ops_table, phases_table, Phase, Recorder};
use crate::Ctx;

pub struct Report {
    pub json: Value,
    pub markdown: String,
    pub passed: bool,
}

// ---------------------------------------------------------------- helpers

/// Open-model arrivals: `count` jobs (or unbounded when None) at `rate` per
/// second, exponential gaps, each started in its own task at its intended
/// time whatever the earlier ones are doing. Stops at `until`. Waits for all
/// jobs. Returns how many were started.
pub(crate) async fn open_arrivals<F, Fut>(rate: f64, count: Option<u64>, until: Option<Instant>, job: F) -> u64
where
    F: Fn(u64, Instant) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut tasks = Vec::new();
    let mut intended = Instant::now();
    let mut i = 0u64;
    loop {
        if count.is_some_and(|c| i >= c) || until.is_some_and(|u| intended >= u) {
            break;
        }
        if intended > Instant::now() {
            tokio::time::sleep_until(intended.into()).await;
        }
        tasks.push(tokio::spawn(job(i, intended)));
        i += 1;
        let u: f64 = rand::thread_rng().gen_range(f64::EPSILON..1.0);
        intended += Duration::from_secs_f64(-u.ln() / rate);
    }
    for t in tasks {
        let _ = t.await;
    }
    i
}

pub(crate) fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template("{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()));
    bar.set_prefix(what.to_owned());
    bar
}

/// Counts the request, records its latency from `intended` under `op`, and
/// counts its status under `status.<op>.<code>`.
pub(crate) async fn timed(rec: &Recorder, op: &str, intended: Instant, call: impl Future<Output = Result<Reply>>) -> Option<Reply> {
    rec.count("requests");
    let r = call.await;
    rec.latency(op, intended);
    match r {
        Ok(reply) => {
            rec.count(&format!("status.{op}.{}", reply.status));
            Some(reply)
        }
        Err(_) => {
            rec.count(&format!("status.{op}.transport_error"));
            None
        }
    }
}

fn random_key() -> String {
    format!("lg-{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>())
}

fn jitter(lo_ms: u64, hi_ms: u64) -> Duration {
    Duration::from_millis(rand::thread_rng().gen_range(lo_ms..=hi_ms))
}

async fn wait_loaded(board: &SharedBoard) -> Result<()> {
    for _ in 0..200 {
        if board.read().unwrap_or_else(|p| p.into_inner()).loaded() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("the live seat map did not load within 10 s")
}

pub(crate) async fn audit(ctx: &Ctx, event_id: &str) -> Value {
    match ctx.api.get(&format!("/api/v1/admin/events/{event_id}/audit"), Some(&ctx.staff)).await {
        Ok(r) if r.status == 200 => r.body,
        Ok(r) => json!({ "error": format!("audit answered {}", r.status) }),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

pub(crate) fn audit_ok(a: &Value) -> bool {
    a["oversold_seats"].as_i64() == Some(0) && a["sold_mismatched"].as_i64().unwrap_or(0) == 0 && a["held_without_live_hold"].as_i64().unwrap_or(0) == 0
}

pub(crate) fn audit_md(a: &Value) -> String {
    format!("Audit (API): `{}` — {}\n", a, if audit_ok(a) { "no violation" } else { "VIOLATION" })
}

/// The phases' table, each phase's operations, then the audit.
fn phases_and_audit(phases: &[Phase], a: &Value) -> String {
    let mut md = phases_table(phases);
    for p in phases {
        md += &format!("\n{}:\n\n{}", p.name, ops_table(p));
    }
    md += "\n";
    md += &audit_md(a);
    md
}

fn counters_md(title: &str, counts: &std::collections::BTreeMap<String, u64>) -> String {
    let mut s = format!("| {title} | count |\n|---|---:|\n");
    for (k, v) in counts {
        s += &format!("| {k} | {v} |\n");
    }
    s
}

async fn release(api: &Api, rec: &Recorder, fan: &Fan, hold: &Reply) {
    let (Some(id), Some(token)) = (hold.str("hold_id"), hold.str("hold_token")) else { return };
    rec.count("requests");
    let t = Instant::now();
    let _ = api.call(Method::DELETE, &format!("/api/v1/holds/{id}"), Some(&fan.session), &[("x-hold-token", token)], None).await;
    rec.latency("release", t);
}

/// `n` seats in a random row (not the front row) starting at a random place.
fn random_block(rows: usize, per_row: usize, n: usize) -> Vec<String> {
    let mut rng = rand::thread_rng();
    let row = rng.gen_range(2..=rows.max(2));
    let start = rng.gen_range(1..=per_row - n + 1);
    (start..start + n).map(|k| seat_id(row, k)).collect()
}

pub(crate) const PER_ROW: usize = 50;

pub(crate) fn need_fans(ctx: &Ctx, n: usize) -> Result<()> {
    if ctx.fans.len() < n {
        bail!("this scenario needs {n} fans; --fans-file has {}", ctx.fans.len());
    }
    Ok(())
}

// ---------------------------------------------------------------- 1 (and 5): on-sale

#[derive(clap::Args, Clone)]
pub struct OnsaleArgs {
    #[arg(long, default_value_t = 1000)]
    seats: usize,
    #[arg(long, default_value_t = 10000)]
    fans: usize,
    /// Fans arrive over this many seconds.
    #[arg(long, default_value_t = 10.0)]
    arrival_secs: f64,
    #[arg(long, default_value_t = 8)]
    hold_ttl: u32,
    /// Share of holds paid for; the rest are abandoned and expire.
    #[arg(long, default_value_t = 0.7)]
    pay_share: f64,
    /// Share of hold attempts aiming at the hot seats of the front row.
    #[arg(long, default_value_t = 0.1)]
    hot_share: f64,
    /// How long an admitted fan keeps trying after conflicts, and a fan told
    /// "sold out" in the queue stays (0: 8 x TTL + 10 s, so abandoned holds
    /// coming back find takers).
    #[arg(long, default_value_t = 0.0)]
    patience_secs: f64,
    /// The scenario stops here even if fans are still trying.
    #[arg(long, default_value_t = 240.0)]
    max_secs: f64,
    /// Other instances' base URLs whose live maps must agree with the first.
    #[arg(long = "watch-url")]
    watch_urls: Vec<String>,
    /// A name for the report section.
    #[arg(long, default_value = "On-sale")]
    title: String,
}

/// A fan's definitive answer.
#[derive(Clone, Copy)]
enum Outcome {
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
    fn key(self) -> &'static str {
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

struct Sale {
    api: Api,
    event_id: String,
    board: SharedBoard,
    rec: Recorder,
    args: OnsaleArgs,
    patience: Duration,
    stop: Stop,
    finished: AtomicU64,
    booked: AtomicU64,
    holds_granted: AtomicU64,
}

impl Sale {
    fn done(&self, o: Outcome) {
        self.rec.count(&format!("outcome.{}", o.key()));
        self.finished.fetch_add(1, Ordering::Relaxed);
        if matches!(o, Outcome::Booked) {
            self.booked.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn all_sold(&self) -> bool {
        let b = self.board.read().unwrap_or_else(|p| p.into_inner());
        b.sold_out_at.is_some() || (b.loaded() && { let c = b.counts(); c.available == 0 && c.held == 0 })
    }

    /// Calls until the server does not turn the call away as overloaded
    /// (503 with a wait), waiting as told between tries like the waiting
    /// room's page; each try's answer is timed. Stops trying when the
    /// scenario ends.
    async fn patiently<F, Fut>(&self, op: &str, intended: Instant, mut call: F) -> Option<Reply>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Reply>>,
    {
        let mut intended = intended;
        loop {
            match timed(&self.rec, op, intended, call()).await {
                Some(r) if r.status == 503 && r.error_code() == "overloaded" && !self.stop.stopped() => {
                    self.rec.count(&format!("turned away, then tried again: {op}"));
                    let wait = Duration::from_secs(r.body["retry_after"].as_u64().unwrap_or(2));
                    tokio::time::sleep(wait + jitter(0, 1000)).await;
                    intended = Instant::now();
                }
                other => return other,
            }
        }
    }

    fn available(&self) -> usize {
        self.board.read().unwrap_or_else(|p| p.into_inner()).counts().available
    }

    async fn journey(self: Arc<Self>, fan: Fan, intended: Instant) {
        let o = self.clone().journey_inner(&fan, intended).await;
        self.done(o);
    }

    async fn journey_inner(self: Arc<Self>, fan: &Fan, intended: Instant) -> Outcome {
        let (api, rec, ev) = (&self.api, &self.rec, &self.event_id);
        let s = Some(fan.session.as_str());
        let (join_path, no_body) = (format!("/api/v1/events/{ev}/queue"), json!({}));
        let Some(join) = self.patiently("queue join", intended, || api.post(&join_path, s, &[], &no_body)).await else {
            return Outcome::Error;
        };
        if join.status != 201 {
            return if join.status < 500 { Outcome::Refused } else { Outcome::Error };
        }
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
        timed(rec, "seat-map page", t, api.read(&format!("/events/{ev}"), s)).await;

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
    async fn wait_admission(&self, fan: &Fan, token: &str) -> Result<Option<String>> {
        let ev = &self.event_id;
        let url = format!("{}/api/v1/events/{ev}/queue/{token}/live", self.api.ws_base());
        let mut socket = tokio_tungstenite::connect_async(url.as_str()).await.ok().map(|(s, _)| s);
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
                        Next::Frame(_) => socket = None,
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
                    let r = timed(&self.rec, "queue status", Instant::now(), self.api.get(&format!("/api/v1/events/{ev}/queue/{token}"), Some(&fan.session))).await;
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

    async fn hold_with_retries(&self, fan: &Fan, admission: &str) -> std::result::Result<Reply, Outcome> {
        let (api, rec, ev) = (&self.api, &self.rec, &self.event_id);
        let headers = [("x-admission-token", admission)];
        let deadline = Instant::now() + self.patience;
        loop {
            let (roll, n): (f64, usize) = { let mut r = rand::thread_rng(); (r.gen(), r.gen_range(1..=4)) };
            let t = Instant::now();
            let reply = if roll < self.args.hot_share {
                // The front row's first seats: everyone's favourite.
                let k = rand::thread_rng().gen_range(1..=5);
                timed(rec, "hold (hot seats)", t, api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &headers, &json!({ "seat_ids": [seat_id(1, k)] }))).await
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
                timed(rec, "hold (chosen seats)", t, api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &headers, &json!({ "seat_ids": picked }))).await
            } else {
                let tier = if rand::thread_rng().gen_bool(0.1) { "Front" } else { "Standard" };
                timed(rec, "hold (best available)", t, api.post(&format!("/api/v1/events/{ev}/holds/best"), Some(&fan.session), &headers, &json!({ "count": n, "tier": tier }))).await
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

    async fn pay(&self, fan: &Fan, hold: &Reply) -> Outcome {
        let (api, rec) = (&self.api, &self.rec);
        let (Some(hold_id), Some(hold_token)) = (hold.str("hold_id"), hold.str("hold_token")) else { return Outcome::Error };
        let roll: f64 = rand::thread_rng().gen();
        // 80% approve, 10% decline then pay with another card, 10% slow.
        let cards: &[&str] = if roll < 0.8 { &["tok_visa"] } else if roll < 0.9 { &["tok_chargeDeclined", "tok_visa"] } else { &["tok_slow"] };
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

    async fn follow_pending(&self, fan: &Fan, checkout_id: &str) -> Outcome {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(90) && !self.stop.stopped() {
            tokio::time::sleep(jitter(800, 1200)).await;
            if let Some(r) = timed(&self.rec, "checkout status", Instant::now(), self.api.get(&format!("/api/v1/checkouts/{checkout_id}"), Some(&fan.session))).await {
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

pub async fn onsale(ctx: &Ctx, args: OnsaleArgs) -> Result<Report> {
    need_fans(ctx, args.fans)?;
    let api = &ctx.api;
    let event_id = create_event(api, &ctx.staff, &event_body(&format!("{} {}", args.title, rand::random::<u32>()), args.seats, args.hold_ttl, 4, true)).await?;
    let stop = Stop::new();
    let board = board::watch(api.ws_base(), event_id.clone(), stop.clone());
    let mut others = Vec::new();
    for url in &args.watch_urls {
        let other = Api::new(url)?;
        others.push((url.clone(), other.clone(), board::watch(other.ws_base(), event_id.clone(), stop.clone())));
    }
    wait_loaded(&board).await?;
    let patience = if args.patience_secs > 0.0 { Duration::from_secs_f64(args.patience_secs) } else { Duration::from_secs(8 * args.hold_ttl as u64 + 10) };
    let sale = Arc::new(Sale {
        api: api.clone(),
        event_id: event_id.clone(),
        board: board.clone(),
        rec: Recorder::default(),
        args: args.clone(),
        patience,
        stop: stop.clone(),
        finished: AtomicU64::new(0),
        booked: AtomicU64::new(0),
        holds_granted: AtomicU64::new(0),
    });

    let cpu_before = cpu_now(&ctx.server_pids);
    let started = Instant::now();
    // The admission curve: the waiting room's figures once a second.
    let curve = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let sampler = {
        let (api, staff, ev, board, curve, stop) = (api.clone(), ctx.staff.clone(), event_id.clone(), board.clone(), curve.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.stopped() {
                if let Ok(r) = api.get(&format!("/api/v1/admin/events/{ev}/waiting-room"), Some(&staff)).await {
                    let c = board.read().unwrap_or_else(|p| p.into_inner()).counts();
                    let k = r.body["admission_factor"].as_f64().unwrap_or(1.5);
                    let max_active = r.body["max_active"].as_f64().unwrap_or(f64::MAX);
                    let remaining = c.available as f64;
                    curve.lock().unwrap_or_else(|p| p.into_inner()).push(json!({
                        "t": started.elapsed().as_secs_f64(), "active": r.body["active_shoppers"], "waiting": r.body["queue_length"],
                        "admitted_total": r.body["admitted_total"], "remaining": c.available, "held": c.held, "sold": c.sold,
                        "k": k, "target": (k * remaining).ceil().min(max_active),
                    }));
                }
                tokio::select! { _ = tokio::time::sleep(Duration::from_secs(1)) => {}, _ = stop.wait() => {} }
            }
        })
    };
    let bar = progress(args.fans as u64, "on-sale");
    let ticker = {
        let (sale, bar, board) = (sale.clone(), bar.clone(), board.clone());
        tokio::spawn(async move {
            loop {
                let c = board.read().unwrap_or_else(|p| p.into_inner()).counts();
                bar.set_position(sale.finished.load(Ordering::Relaxed));
                bar.set_message(format!("booked {} | seats avail {} held {} sold {}", sale.booked.load(Ordering::Relaxed), c.available, c.held, c.sold));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let rate = args.fans as f64 / args.arrival_secs;
    let fans = ctx.fans.clone();
    let run = {
        let sale = sale.clone();
        open_arrivals(rate, Some(args.fans as u64), None, move |i, intended| sale.clone().journey(fans[i as usize].clone(), intended))
    };
    let timed_out = tokio::time::timeout(Duration::from_secs_f64(args.max_secs), run).await.is_err();
    let elapsed = started.elapsed();
    let cpu = cpu_now(&ctx.server_pids).since(cpu_before);
    stop.fire();
    ticker.abort();
    bar.finish_and_clear();
    let _ = sampler.await;
    if timed_out {
        // Fans still at work see the stop and record how they were left.
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }

    let rec = &sale.rec;
    let outcomes = rec.counters_with("outcome.");
    let answered: u64 = outcomes.values().sum();
    let unanswered = args.fans as u64 - answered.min(args.fans as u64);
    let no_answer = unanswered + [Outcome::Error, Outcome::StillQueued].iter().map(|o| outcomes.get(o.key()).copied().unwrap_or(0)).sum::<u64>();
    let sold_out_secs = board.read().unwrap_or_else(|p| p.into_inner()).sold_out_at.map(|t| t.saturating_duration_since(started).as_secs_f64());
    let holds = sale.holds_granted.load(Ordering::Relaxed);
    let holds_per_seat = holds as f64 / args.seats as f64;
    let seat_holds_per_seat = rec.counter("seats held") as f64 / args.seats as f64;
    let phase = Phase::new(&args.title, rec, elapsed, cpu);
    let wait = rec.summary("queue wait (join answered to admitted)", elapsed);
    let a = audit(ctx, &event_id).await;

    // Two instances: their live maps, once quiet, must agree with each other
    // and with each instance's own seat list.
    let mut map_check = Vec::new();
    if !others.is_empty() {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let first = board.read().unwrap_or_else(|p| p.into_inner()).statuses();
        for (url, other_api, other) in &others {
            let theirs = other.read().unwrap_or_else(|p| p.into_inner()).statuses();
            let differ = first.iter().filter(|(k, v)| theirs.get(*k) != Some(v)).count();
            let listed = other_api.get(&format!("/api/v1/events/{event_id}/seats"), None).await.ok();
            let list_differ = listed.map(|r| {
                r.body["seats"].as_array().map_or(usize::MAX, |seats| {
                    seats.iter().filter(|s| first.get(s["seat_id"].as_str().unwrap_or_default()).map(String::as_str) != s["status"].as_str()).count()
                })
            });
            map_check.push(json!({ "instance": url, "live_map_seats_differing": differ, "seat_list_seats_differing": list_differ }));
        }
    }
    let maps_agree = map_check.iter().all(|m| m["live_map_seats_differing"] == 0);
    let passed = audit_ok(&a) && no_answer == 0 && maps_agree;

    let curve = curve.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let json = json!({
        "scenario": args.title, "event_id": event_id, "seats": args.seats, "fans": args.fans, "arrival_secs": args.arrival_secs,
        "hold_ttl_seconds": args.hold_ttl, "pay_share": args.pay_share, "timed_out": timed_out,
        "time_to_sell_out_seconds": sold_out_secs, "holds_granted": holds, "holds_per_seat": holds_per_seat, "seat_holds_per_seat": seat_holds_per_seat,
        "outcomes": outcomes, "fans_without_answer": no_answer, "phase": phase, "counters": rec.counters(),
        "admission_curve": curve, "maps": map_check, "audit": a, "passed": passed,
    });
    let mut md = format!("## {}\n\n", args.title);
    md += &format!(
        "{} seats, {} fans arriving over {:.0} s (open model, {:.0}/s), waiting room on, hold TTL {} s, {:.0}% of holds paid, the rest abandoned; event `{}`.\n\n",
        args.seats, args.fans, args.arrival_secs, rate, args.hold_ttl, args.pay_share * 100.0, event_id
    );
    md += &format!(
        "- time to sell out: **{}**\n- holds per seat: **{:.2}** ({} holds granted; {:.2} seat-holds per seat)\n- queue wait (join answered → admitted): p50 **{:.0} ms**, p99 **{:.0} ms**\n- fans without a definitive answer: **{}**{}\n\n",
        sold_out_secs.map_or("not sold out".into(), |s| format!("{s:.1} s")),
        holds_per_seat,
        holds,
        seat_holds_per_seat,
        wait.as_ref().map_or(0.0, |w| w.p50_ms),
        wait.as_ref().map_or(0.0, |w| w.p99_ms),
        no_answer,
        if timed_out { format!(" (stopped at the {:.0} s cap)", args.max_secs) } else { String::new() }
    );
    // Why a sale did not sell out, when the waiting room is the reason.
    if let Some(last) = curve.last().filter(|_| sold_out_secs.is_none()) {
        let (active, target, available) = (last["active"].as_f64().unwrap_or(0.0), last["target"].as_f64().unwrap_or(0.0), last["remaining"].as_u64().unwrap_or(0));
        if available > 0 && active >= target {
            md += &format!(
                "Not sold out: {available} seats came back (abandoned holds) but admission stayed shut, {active:.0} fans counted active (holding, paying, or choosing a seat) against a target of {target:.0}.\n\n"
            );
        }
    }
    md += &counters_md("fan outcome", &outcomes);
    md += "\n";
    md += &phases_table(std::slice::from_ref(&phase));
    md += "\n";
    md += &ops_table(&phase);
    md += "\nAdmission curve (active shoppers against k × remaining seats):\n\n| t s | waiting | active | k × remaining | admitted total | seats available / held / sold |\n|---:|---:|---:|---:|---:|---|\n";
    let step = (curve.len() / 15).max(1);
    for s in curve.iter().step_by(step) {
        md += &format!(
            "| {:.0} | {} | {} | {} | {} | {} / {} / {} |\n",
            s["t"].as_f64().unwrap_or(0.0), s["waiting"], s["active"], s["target"], s["admitted_total"], s["remaining"], s["held"], s["sold"]
        );
    }
    if !map_check.is_empty() {
        md += "\nMaps in step (after 3 s quiet, compared with the first instance's live map):\n\n| instance | live map seats differing | seat list seats differing |\n|---|---:|---:|\n";
        for m in &map_check {
            md += &format!("| {} | {} | {} |\n", m["instance"].as_str().unwrap_or(""), m["live_map_seats_differing"], m["seat_list_seats_differing"]);
        }
    }
    md += "\n";
    md += &audit_md(&a);
    Ok(Report { json, markdown: md, passed })
}

// ---------------------------------------------------------------- 2: hot seat

#[derive(clap::Args)]
pub struct HotSeatArgs {
    #[arg(long, default_value_t = 1000)]
    seats: usize,
    /// Hold attempts per second (open model).
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Length of each phase: without, then with the hot seat.
    #[arg(long, default_value_t = 10.0)]
    phase_secs: f64,
    #[arg(long, default_value_t = 0.25)]
    hot_share: f64,
}

pub async fn hot_seat(ctx: &Ctx, args: HotSeatArgs) -> Result<Report> {
    need_fans(ctx, 50)?;
    let api = &ctx.api;
    let event_id = create_event(api, &ctx.staff, &event_body(&format!("Hot seat {}", rand::random::<u32>()), args.seats.max(PER_ROW * 2), 600, 50, false)).await?;
    let rows = args.seats.max(PER_ROW * 2) / PER_ROW;
    let hot = seat_id(1, PER_ROW / 2);
    let mut phases = Vec::new();
    let winners = Arc::new(AtomicU64::new(0));
    // A short unrecorded warm-up first: connections and caches, not the seat.
    for (name, share) in [("warm-up", 0.0), ("without the hot seat", 0.0), ("a quarter at the hot seat", args.hot_share)] {
        let phase_secs = if name == "warm-up" { (args.phase_secs / 3.0).min(3.0) } else { args.phase_secs };
        let rec = Arc::new(Recorder::default());
        let cpu_before = cpu_now(&ctx.server_pids);
        let started = Instant::now();
        let until = started + Duration::from_secs_f64(phase_secs);
        let bar = progress((args.rate * phase_secs) as u64, name);
        let fans = ctx.fans.clone();
        let (api2, ev, hot2, winners2, bar2, rec2) = (api.clone(), event_id.clone(), hot.clone(), winners.clone(), bar.clone(), rec.clone());
        open_arrivals(args.rate, None, Some(until), move |i, intended| {
            let (api, ev, hot, winners, bar, rec) = (api2.clone(), ev.clone(), hot2.clone(), winners2.clone(), bar2.clone(), rec2.clone());
            let fan = fans[i as usize % fans.len()].clone();
            async move {
                let path = format!("/api/v1/events/{ev}/holds");
                if rand::thread_rng().gen_bool(share) {
                    if let Some(r) = timed(&rec, "hot seat attempt", intended, api.post(&path, Some(&fan.session), &[], &json!({ "seat_ids": [hot] }))).await {
                        match r.status {
                            201 => {
                                winners.fetch_add(1, Ordering::Relaxed);
                            }
                            409 => rec.record("hot seat conflict (409)", intended.elapsed()),
                            _ => {}
                        }
                    }
                } else {
                    let n = rand::thread_rng().gen_range(1..=2);
                    let seats = random_block(rows, PER_ROW, n);
                    if let Some(r) = timed(&rec, "other holds", intended, api.post(&path, Some(&fan.session), &[], &json!({ "seat_ids": seats }))).await {
                        if r.status == 201 {
                            release(&api, &rec, &fan, &r).await;
                        }
                    }
                }
                bar.inc(1);
            }
        })
        .await;
        bar.finish_and_clear();
        if name != "warm-up" {
            phases.push(Phase::new(name, &rec, started.elapsed(), cpu_now(&ctx.server_pids).since(cpu_before)));
        }
    }
    let a = audit(ctx, &event_id).await;
    let won = winners.load(Ordering::Relaxed);
    let hot_status = ctx.api.get(&format!("/api/v1/events/{event_id}/seats"), None).await.ok().and_then(|r| {
        r.body["seats"].as_array().and_then(|s| s.iter().find(|x| x["seat_id"].as_str() == Some(hot.as_str())).and_then(|x| x["status"].as_str().map(str::to_owned)))
    });
    let conflict = phases[1].op("hot seat conflict (409)").cloned();
    let (before, during) = (phases[0].op("other holds").cloned(), phases[1].op("other holds").cloned());
    let slowdown = match (&before, &during) {
        (Some(b), Some(d)) if b.p99_ms > 0.0 => d.p99_ms / b.p99_ms,
        _ => 0.0,
    };
    let passed = won == 1 && audit_ok(&a);
    let json = json!({ "scenario": "hot seat", "event_id": event_id, "hot_seat": hot, "winners": won, "hot_seat_status": hot_status,
        "conflict_p99_ms": conflict.as_ref().map(|c| c.p99_ms), "other_holds_p99_ratio": slowdown, "phases": phases, "audit": a, "passed": passed });
    let mut md = String::from("## 2. Hot seat\n\n");
    md += &format!(
        "{} seats, hold attempts at {:.0}/s (open model) for {:.0} s without, then {:.0} s with {:.0}% of them at seat `{hot}`; other attempts hold 1–2 seats and release them.\n\n",
        args.seats.max(PER_ROW * 2), args.rate, args.phase_secs, args.phase_secs, args.hot_share * 100.0
    );
    md += &format!(
        "- winners of the hot seat: **{won}** (seat now `{}`)\n- conflict latency p99: **{:.2} ms** (goal under 10 ms)\n- other fans' holds p99: {:.2} ms without → {:.2} ms with the hot seat (×{:.2})\n\n",
        hot_status.as_deref().unwrap_or("?"),
        conflict.as_ref().map_or(0.0, |c| c.p99_ms),
        before.as_ref().map_or(0.0, |b| b.p99_ms),
        during.as_ref().map_or(0.0, |d| d.p99_ms),
        slowdown
    );
    md += &phases_and_audit(&phases, &a);
    Ok(Report { json, markdown: md, passed })
}

// ---------------------------------------------------------------- 3: F5 storm

#[derive(clap::Args)]
pub struct StormArgs {
    #[arg(long, default_value_t = 1000)]
    seats: usize,
    /// Seat-map reads per second before and after the storm (doubled during it).
    #[arg(long, default_value_t = 50.0)]
    read_rate: f64,
    /// Hold attempts per second throughout.
    #[arg(long, default_value_t = 50.0)]
    hold_rate: f64,
    #[arg(long, default_value_t = 10.0)]
    phase_secs: f64,
}

pub async fn storm(ctx: &Ctx, args: StormArgs) -> Result<Report> {
    need_fans(ctx, 50)?;
    let api = &ctx.api;
    let seats = args.seats.max(PER_ROW * 2);
    let event_id = create_event(api, &ctx.staff, &event_body(&format!("F5 storm {}", rand::random::<u32>()), seats, 600, 50, false)).await?;
    let rows = seats / PER_ROW;
    let mut phases = Vec::new();
    for (name, factor) in [("calm", 1.0), ("F5 storm (reads ×2)", 2.0), ("after", 1.0)] {
        let rec = Arc::new(Recorder::default());
        let cpu_before = cpu_now(&ctx.server_pids);
        let started = Instant::now();
        let until = started + Duration::from_secs_f64(args.phase_secs);
        let bar = progress(((args.read_rate * factor + args.hold_rate) * args.phase_secs) as u64, name);
        let reads = {
            let (api, ev, rec, fans, bar) = (api.clone(), event_id.clone(), rec.clone(), ctx.fans.clone(), bar.clone());
            open_arrivals(args.read_rate * factor, None, Some(until), move |i, intended| {
                let (api, ev, rec, fan, bar) = (api.clone(), ev.clone(), rec.clone(), fans[i as usize % fans.len()].clone(), bar.clone());
                async move {
                    if i % 2 == 0 {
                        timed(&rec, "read: seat-map page", intended, api.read(&format!("/events/{ev}"), Some(&fan.session))).await;
                    } else {
                        timed(&rec, "read: seats JSON", intended, api.read(&format!("/api/v1/events/{ev}/seats"), Some(&fan.session))).await;
                    }
                    bar.inc(1);
                }
            })
        };
        let holds = {
            let (api, ev, rec, fans, bar) = (api.clone(), event_id.clone(), rec.clone(), ctx.fans.clone(), bar.clone());
            open_arrivals(args.hold_rate, None, Some(until), move |i, intended| {
                let (api, ev, rec, fan, bar) = (api.clone(), ev.clone(), rec.clone(), fans[(i as usize * 7 + 3) % fans.len()].clone(), bar.clone());
                async move {
                    let seats = random_block(rows, PER_ROW, rand::thread_rng().gen_range(1..=2));
                    if let Some(r) = timed(&rec, "hold", intended, api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &[], &json!({ "seat_ids": seats }))).await {
                        if r.status == 201 {
                            release(&api, &rec, &fan, &r).await;
                        }
                    }
                    bar.inc(1);
                }
            })
        };
        futures::join!(reads, holds);
        bar.finish_and_clear();
        phases.push(Phase::new(name, &rec, started.elapsed(), cpu_now(&ctx.server_pids).since(cpu_before)));
    }
    let a = audit(ctx, &event_id).await;
    let p99 = |i: usize, op: &str| phases[i].op(op).map_or(0.0, |o| o.p99_ms);
    let hold_ratio = if p99(0, "hold") > 0.0 { p99(1, "hold") / p99(0, "hold") } else { 0.0 };
    let passed = audit_ok(&a);
    let json = json!({ "scenario": "F5 storm", "event_id": event_id, "phases": phases, "hold_p99_storm_over_calm": hold_ratio, "audit": a, "passed": passed });
    let mut md = String::from("## 3. F5 storm\n\n");
    md += &format!(
        "{seats} seats; reads (half the server-rendered seat-map page, half `GET …/seats`) at {:.0}/s, doubled to {:.0}/s for the storm; holds (1–2 seats, released) at {:.0}/s throughout; {:.0} s per phase.\n\n",
        args.read_rate, args.read_rate * 2.0, args.hold_rate, args.phase_secs
    );
    md += &format!(
        "- read p99 calm / storm / after: page {:.1} / {:.1} / {:.1} ms, JSON {:.1} / {:.1} / {:.1} ms\n- hold p99 calm / storm / after: {:.2} / {:.2} / {:.2} ms (storm ÷ calm ×{:.2})\n\n",
        p99(0, "read: seat-map page"), p99(1, "read: seat-map page"), p99(2, "read: seat-map page"),
        p99(0, "read: seats JSON"), p99(1, "read: seats JSON"), p99(2, "read: seats JSON"),
        p99(0, "hold"), p99(1, "hold"), p99(2, "hold"), hold_ratio
    );
    md += &phases_and_audit(&phases, &a);
    Ok(Report { json, markdown: md, passed })
}

// ---------------------------------------------------------------- 4: database restart

#[derive(clap::Args)]
pub struct RestartArgs {
    #[arg(long, default_value_t = 2000)]
    seats: usize,
    /// Fans arriving per second, each holding 1–2 seats and paying.
    #[arg(long, default_value_t = 30.0)]
    rate: f64,
    #[arg(long, default_value_t = 30.0)]
    secs: f64,
    /// When (seconds into the run) the restart command runs.
    #[arg(long, default_value_t = 10.0)]
    restart_at: f64,
    /// Shell command that restarts the database.
    #[arg(long)]
    restart_cmd: String,
}

pub async fn restart(ctx: &Ctx, args: RestartArgs) -> Result<Report> {
    need_fans(ctx, 50)?;
    let api = &ctx.api;
    let event_id = create_event(api, &ctx.staff, &event_body(&format!("Restart {}", rand::random::<u32>()), args.seats, 120, 50, false)).await?;
    let stop = Stop::new();
    let board = board::watch(api.ws_base(), event_id.clone(), stop.clone());
    wait_loaded(&board).await?;
    let rec = Arc::new(Recorder::default());
    // (fan index, booking id) of every booking the server acknowledged.
    let acked = Arc::new(std::sync::Mutex::new(Vec::<(usize, String)>::new()));
    // Per attempt: (seconds since start, got a hold?) for the recovery time.
    let timeline = Arc::new(std::sync::Mutex::new(Vec::<(f64, bool)>::new()));
    let cpu_before = cpu_now(&ctx.server_pids);
    let started = Instant::now();
    let restart_task = {
        let cmd = args.restart_cmd.clone();
        let at = args.restart_at;
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs_f64(at)).await;
            let begun = started.elapsed().as_secs_f64();
            let out = tokio::process::Command::new("sh").arg("-c").arg(&cmd).output().await;
            (begun, started.elapsed().as_secs_f64(), out.map(|o| o.status.success()).unwrap_or(false))
        })
    };
    let bar = progress((args.rate * args.secs) as u64, "db restart");
    {
        let (api, ev, rec, fans, bar, acked, timeline, board) = (api.clone(), event_id.clone(), rec.clone(), ctx.fans.clone(), bar.clone(), acked.clone(), timeline.clone(), board.clone());
        open_arrivals(args.rate, None, Some(started + Duration::from_secs_f64(args.secs)), move |i, intended| {
            let idx = i as usize % fans.len();
            let (api, ev, rec, fan, bar, acked, timeline, board) = (api.clone(), ev.clone(), rec.clone(), fans[idx].clone(), bar.clone(), acked.clone(), timeline.clone(), board.clone());
            async move {
                let mut picked = Vec::new();
                {
                    let b = board.read().unwrap_or_else(|p| p.into_inner());
                    for _ in 0..rand::thread_rng().gen_range(1..=2) {
                        if let Some(s) = b.random_available(&picked) {
                            picked.push(s);
                        }
                    }
                }
                let hold = timed(&rec, "hold", intended, api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &[], &json!({ "seat_ids": picked }))).await;
                let ok = hold.as_ref().is_some_and(|h| h.status == 201);
                timeline.lock().unwrap_or_else(|p| p.into_inner()).push((intended.saturating_duration_since(started).as_secs_f64(), ok));
                if let Some(h) = hold.filter(|h| h.status == 201) {
                    let body = json!({ "hold_token": h.str("hold_token"), "payment_token": "tok_visa" });
                    let key = random_key();
                    let path = format!("/api/v1/holds/{}/checkout", h.str("hold_id").unwrap_or_default());
                    // A payment that fails while the database is away is retried
                    // with the same key, as the fan's page would.
                    for attempt in 0..5 {
                        let t = Instant::now();
                        let Some(r) = timed(&rec, "checkout", t, api.post(&path, Some(&fan.session), &[("idempotency-key", &key)], &body)).await else { break };
                        match r.status {
                            201 => {
                                if let Some(b) = r.str("booking_id") {
                                    acked.lock().unwrap_or_else(|p| p.into_inner()).push((idx, b.to_owned()));
                                }
                                break;
                            }
                            202 => {
                                rec.count("checkout pending");
                                break;
                            }
                            s if s >= 500 || s == 409 => tokio::time::sleep(Duration::from_millis(500 * (attempt + 1))).await,
                            _ => break,
                        }
                    }
                }
                bar.inc(1);
            }
        })
        .await;
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let cpu = cpu_now(&ctx.server_pids).since(cpu_before);
    let (restart_begun, restart_done, restart_ok) = restart_task.await.context("restart task")?;
    stop.fire();

    // Recovery: from the restart command's start to the first granted hold
    // attempted after the first failed one.
    let tl = timeline.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let first_failure = tl.iter().filter(|(t, ok)| *t >= restart_begun && !ok).map(|(t, _)| *t).fold(f64::MAX, f64::min);
    let recovered_at = tl.iter().filter(|(t, ok)| *t > first_failure && *ok).map(|(t, _)| *t).fold(f64::MAX, f64::min);
    let recovery = (recovered_at < f64::MAX).then(|| recovered_at - restart_begun);
    let failed_attempts = tl.iter().filter(|(_, ok)| !ok).count();

    // Nothing acknowledged lost: every confirmed booking is still there.
    let acked = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut lost = 0;
    for (idx, booking) in &acked {
        let r = api.get(&format!("/api/v1/bookings/{booking}"), Some(&ctx.fans[*idx].session)).await;
        if !r.is_ok_and(|r| r.status == 200 && r.str("status") != Some("cancelled")) {
            lost += 1;
        }
    }
    let a = audit(ctx, &event_id).await;
    let statuses = rec.counters_with("status.");
    let bad_5xx: u64 = statuses.iter().filter(|(k, _)| k.ends_with(".500") || k.ends_with(".502")).map(|(_, v)| v).sum();
    let phase = Phase::new("database restart", &rec, elapsed, cpu);
    let passed = lost == 0 && audit_ok(&a) && restart_ok && recovery.is_some();
    let json = json!({ "scenario": "database restart", "event_id": event_id, "restart": { "begun_s": restart_begun, "done_s": restart_done, "ok": restart_ok },
        "recovery_seconds": recovery, "failed_hold_attempts": failed_attempts, "bookings_acknowledged": acked.len(), "bookings_lost": lost,
        "responses": statuses, "internal_errors": bad_5xx, "phase": phase, "audit": a, "passed": passed });
    let mut md = String::from("## 4. Database restart mid-sale\n\n");
    md += &format!(
        "Fans arrive at {:.0}/s for {:.0} s, each holding 1–2 seats and paying (a failed payment is retried with the same key); at {:.1} s `pg_ctl restart -m fast` (done at {:.1} s, {}).\n\n",
        args.rate, args.secs, restart_begun, restart_done, if restart_ok { "succeeded" } else { "FAILED" }
    );
    md += &format!(
        "- failed closed: {failed_attempts} hold attempts refused while it was away; answers by status below ({bad_5xx} were 500/502)\n- recovered: first hold granted **{}** after the restart began\n- bookings acknowledged: {}; found afterwards: {}; **lost: {lost}**\n\n",
        recovery.map_or("never".into(), |r| format!("{r:.1} s")),
        acked.len(),
        acked.len() - lost
    );
    md += &counters_md("answer (operation.status)", &statuses);
    md += "\n";
    md += &phases_table(std::slice::from_ref(&phase));
    md += "\n";
    md += &ops_table(&phase);
    md += "\n";
    md += &audit_md(&a);
    Ok(Report { json, markdown: md, passed })
}

// ---------------------------------------------------------------- capacity (for the ratios)

#[derive(clap::Args)]
pub struct CapacityArgs {
    /// healthz (fixed bytes), seats (the seat-map JSON), holds, joins.
    #[arg(long)]
    what: String,
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    #[arg(long, default_value_t = 5.0)]
    secs: f64,
    /// Seats of the event used (seats, holds).
    #[arg(long, default_value_t = 10000)]
    seats: usize,
}

pub async fn capacity(ctx: &Ctx, args: CapacityArgs) -> Result<Report> {
    let api = &ctx.api;
    let event_id = match args.what.as_str() {
        "healthz" => String::new(),
        "seats" | "holds" => create_event(api, &ctx.staff, &event_body(&format!("Capacity {}", rand::random::<u32>()), args.seats, 600, 50, false)).await?,
        "joins" => create_event(api, &ctx.staff, &event_body(&format!("Joins {}", rand::random::<u32>()), 100, 600, 4, true)).await?,
        other => bail!("unknown --what {other}: healthz, seats, holds or joins"),
    };
    if matches!(args.what.as_str(), "holds" | "joins") {
        need_fans(ctx, args.concurrency)?;
    }
    let rec = Arc::new(Recorder::default());
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu_now(&ctx.server_pids);
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(args.secs);
    let rows = args.seats / PER_ROW;
    // Closed loop on purpose: this measures the most the server answers.
    let workers = (0..args.concurrency).map(|w| {
        let (api, rec, next, ev, fans, what) = (api.clone(), rec.clone(), next.clone(), event_id.clone(), ctx.fans.clone(), args.what.clone());
        async move {
            while Instant::now() < until {
                let t = Instant::now();
                let ok = match what.as_str() {
                    "healthz" => timed(&rec, "GET /healthz", t, api.get("/healthz", None)).await.is_some_and(|r| r.status == 200),
                    "seats" => timed(&rec, "GET seat map JSON", t, api.read(&format!("/api/v1/events/{ev}/seats"), None)).await.is_some_and(|r| r.status == 200),
                    "holds" => {
                        // Seats in order, so holds never conflict: the bare rate.
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= rows * PER_ROW {
                            break;
                        }
                        let fan = &fans[(n * 31 + w) % fans.len()];
                        let seat = seat_id(n / PER_ROW + 1, n % PER_ROW + 1);
                        timed(&rec, "hold one seat", t, api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &[], &json!({ "seat_ids": [seat] }))).await.is_some_and(|r| r.status == 201)
                    }
                    _ => {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let Some(fan) = fans.get(n) else { break };
                        timed(&rec, "queue join", t, api.post(&format!("/api/v1/events/{ev}/queue"), Some(&fan.session), &[], &json!({}))).await.is_some_and(|r| r.status == 201)
                    }
                };
                rec.count(if ok { "ok" } else { "failed" });
            }
        }
    });
    futures::future::join_all(workers).await;
    let elapsed = started.elapsed();
    let phase = Phase::new(&args.what, &rec, elapsed, cpu_now(&ctx.server_pids).since(cpu_before));
    let ok = rec.counter("ok");
    let per_second = ok as f64 / elapsed.as_secs_f64();
    let json = json!({ "scenario": "capacity", "what": args.what, "concurrency": args.concurrency, "ok": ok, "failed": rec.counter("failed"),
        "ok_per_second": per_second, "phase": phase, "passed": true });
    let md = format!(
        "capacity {}: {} ok ({} failed) in {:.1} s with {} concurrent callers = **{:.0}/s**, server CPU {:.3} ms/request\n",
        args.what, ok, rec.counter("failed"), elapsed.as_secs_f64(), args.concurrency, per_second, phase.server_cpu_ms_per_request
    );
    Ok(Report { json, markdown: md, passed: true })
}
