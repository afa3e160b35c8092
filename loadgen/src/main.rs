//! Drives a running frontrow server over HTTP and prints what it measured.
//!
//! Phase 1, throughput: `--fans` signed-in fans, each in its own task, hold
//! 1 to 4 random adjacent seats and release them again, for `--seconds`.
//! Phase 2, hot seat: every fan tries to hold the same seat at once; exactly
//! one must win. Send traffic only to a server on this machine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use rand::Rng;
use serde_json::{json, Value};

#[derive(Parser)]
struct Args {
    /// Base URL of the server (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:3000")]
    url: String,
    #[arg(long, default_value = "staff@frontrow.test")]
    staff_email: String,
    #[arg(long, default_value = "frontrow-demo")]
    staff_password: String,
    /// Concurrent fans.
    #[arg(long, default_value_t = 64)]
    fans: usize,
    /// Length of the throughput phase.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
}

fn client() -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder().cookie_store(true).timeout(Duration::from_secs(30)).build()?)
}

async fn post(c: &reqwest::Client, url: String, body: Value) -> Result<(u16, Value)> {
    let r = c.post(url).json(&body).send().await?;
    let status = r.status().as_u16();
    Ok((status, r.json().await.unwrap_or(Value::Null)))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let host = args.url.split("://").nth(1).unwrap_or_default();
    if !(host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")) {
        bail!("refusing to load anything but a server on this machine: {}", args.url);
    }
    const ROWS: usize = 50;
    const SEATS: usize = 40;

    let staff = client()?;
    let (s, _) = post(&staff, format!("{}/api/v1/auth/login", args.url), json!({"email": args.staff_email, "password": args.staff_password})).await?;
    if s != 200 {
        bail!("staff login failed ({s}); run `frontrow seed-demo` first");
    }
    let rows: Vec<Value> = (1..=ROWS).map(|r| json!({"row": r.to_string(), "seats": SEATS, "tier": "Standard"})).collect();
    let (s, created) = post(
        &staff,
        format!("{}/api/v1/admin/events", args.url),
        json!({"name": format!("Load test {}", rand::random::<u32>()), "kind": "benchmark", "venue": "Loopback",
               "starts_at": "2035-01-01T20:00:00Z", "sale_opens_at": "2020-01-01T00:00:00Z",
               "hold_ttl_seconds": 60, "max_seats_per_order": 8,
               "tiers": [{"tier": "Standard", "price_cents": 5000}], "sections": [{"section": "L", "rows": rows}]}),
    )
    .await?;
    if s != 201 {
        bail!("creating the load-test event failed ({s}): {created}");
    }
    let event = created["event_id"].as_str().context("event_id")?.to_owned();

    println!("signing up {} fans...", args.fans);
    let mut fans = Vec::with_capacity(args.fans);
    for i in 0..args.fans {
        let c = client()?;
        let email = format!("load-{}-{i}@example.test", rand::random::<u32>());
        let (s, body) = post(&c, format!("{}/api/v1/auth/signup", args.url), json!({"email": email, "password": "load-test-pw", "name": "Load"})).await?;
        if s != 201 {
            bail!("signup failed ({s}): {body} (is FRONTROW_RATE_LIMITS=off?)");
        }
        fans.push(c);
    }

    // Phase 1: hold + release loop.
    let held = Arc::new(AtomicU64::new(0));
    let conflicts = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let tasks: Vec<_> = fans
        .iter()
        .cloned()
        .map(|c| {
            let (url, event, held, conflicts, errors) = (args.url.clone(), event.clone(), held.clone(), conflicts.clone(), errors.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let (row, len) = { let mut r = rand::thread_rng(); (r.gen_range(1..=ROWS), r.gen_range(1..=4usize)) };
                    let start = rand::thread_rng().gen_range(1..=SEATS - len + 1);
                    let seats: Vec<String> = (start..start + len).map(|n| format!("L-{row}-{n}")).collect();
                    let t = Instant::now();
                    match post(&c, format!("{url}/api/v1/events/{event}/holds"), json!({"seat_ids": seats})).await {
                        Ok((201, hold)) => {
                            latencies.push(t.elapsed());
                            held.fetch_add(1, Ordering::Relaxed);
                            let id = hold["hold_id"].as_str().unwrap_or_default();
                            let token = hold["hold_token"].as_str().unwrap_or_default();
                            let _ = c.delete(format!("{url}/api/v1/holds/{id}")).header("x-hold-token", token).send().await;
                        }
                        Ok((409, _)) => {
                            latencies.push(t.elapsed());
                            conflicts.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = Vec::new();
    for t in futures::future::join_all(tasks).await {
        latencies.extend(t?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let (h, c, e) = (held.load(Ordering::Relaxed), conflicts.load(Ordering::Relaxed), errors.load(Ordering::Relaxed));
    println!("throughput: {} fans, {:.1} s", args.fans, elapsed);
    println!("  holds granted   {h} ({:.0}/s), each followed by a release", h as f64 / elapsed);
    println!("  hold attempts   {} ({:.0}/s), conflicts {c}, errors {e}", h + c, (h + c) as f64 / elapsed);
    println!(
        "  hold latency    p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );

    // Phase 2: everyone at once for one seat.
    let hot = format!("L-1-{}", SEATS / 2);
    let t = Instant::now();
    let replies = futures::future::join_all(fans.iter().map(|c| {
        post(c, format!("{}/api/v1/events/{event}/holds", args.url), json!({"seat_ids": [hot]}))
    }))
    .await;
    let winners = replies.iter().filter(|r| matches!(r, Ok((201, _)))).count();
    let losers = replies.iter().filter(|r| matches!(r, Ok((409, _)))).count();
    println!("hot seat: {} fans at once -> {winners} winner, {losers} conflicts in {:.0} ms", fans.len(), t.elapsed().as_secs_f64() * 1e3);
    if winners != 1 {
        bail!("hot seat had {winners} winners");
    }
    println!("event {event}: check it with `frontrow audit --event {event}`");
    Ok(())
}
