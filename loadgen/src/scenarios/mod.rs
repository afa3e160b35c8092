//! The bench scenarios, one module each (the on-sale, the hot seat, the F5
//! storm, the database restart, the capacity runs for the ratios). Each
//! returns a JSON report and a Markdown section; the helpers they share are
//! here.

mod capacity;
mod hot_seat;
mod onsale;
mod restart;
mod storm;

pub use capacity::{capacity, CapacityArgs};
pub use hot_seat::{hot_seat, HotSeatArgs};
pub use onsale::{onsale, OnsaleArgs};
pub use restart::{restart, RestartArgs};
pub use storm::{storm, StormArgs};

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
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
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
    a["oversold_seats"].as_i64() == Some(0)
        && a["sold_mismatched"].as_i64().unwrap_or(0) == 0
        && a["held_without_live_hold"].as_i64().unwrap_or(0) == 0
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
