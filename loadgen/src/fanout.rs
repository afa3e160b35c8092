//! Live fan-out: many viewers on one event's live socket while fans hold
//! seats, measuring how long each change takes to reach every viewer who
//! shows it and what each viewer costs the server in memory. Viewers watch
//! the whole map, or (`--view sections`, as a stadium's fans do) one
//! section each, and get only that section's changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::StreamExt;
use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::Message;

use crate::api::{create_event, event_body};
use crate::board::Stop;
use crate::scenarios::{audit, audit_md, audit_ok, need_fans, open_arrivals, progress, timed, Report, PER_ROW};
use crate::stats::{cpu_now, ops_table, Phase, Recorder};
use crate::Ctx;

#[derive(clap::Args)]
pub struct FanoutArgs {
    #[arg(long, default_value_t = 1000)]
    seats: usize,
    /// Viewers on the event's live socket.
    #[arg(long, default_value_t = 1000)]
    viewers: usize,
    /// One-seat holds per second while they watch (open model).
    #[arg(long, default_value_t = 10.0)]
    hold_rate: f64,
    #[arg(long, default_value_t = 10.0)]
    secs: f64,
    /// What each viewer watches: the whole map, or one section each.
    #[arg(long, value_enum, default_value_t = ViewKind::Whole)]
    view: ViewKind,
    /// Watch this event (a stadium, say) instead of making one of `seats`.
    #[arg(long)]
    event_id: Option<String>,
    /// Loopback source addresses to spread the viewers' sockets over
    /// (127.0.0.1 up): one address has ports for about 28,000.
    #[arg(long, default_value_t = 1)]
    local_addresses: u8,
    /// Section numbering of the report (6 by default).
    #[arg(long, default_value = "6")]
    report_section: String,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ViewKind {
    Whole,
    Sections,
}

/// A seat the holds may take, and the section whose viewers see it.
#[derive(Deserialize)]
struct ListedSeat {
    seat_id: String,
    section: String,
    status: String,
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct SeatList {
    seats: Vec<ListedSeat>,
}

/// Opens a viewer's socket from `local` (a loopback address of its own, so
/// tens of thousands of sockets do not run out of ports).
async fn connect(url: &str, local: std::net::IpAddr) -> Result<tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let request = url.into_client_request()?;
    let host = request.uri().host().unwrap_or("127.0.0.1").to_owned();
    let port = request.uri().port_u16().unwrap_or(80);
    let server: std::net::SocketAddr = format!("{host}:{port}").parse()?;
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(std::net::SocketAddr::new(local, 0))?;
    let stream = socket.connect(server).await?;
    let (ws, _) = tokio_tungstenite::client_async_with_config(request, stream, Some(crate::api::socket_config())).await?;
    Ok(ws)
}

/// The part of a diff frame a viewer needs.
#[derive(Deserialize)]
struct Diff {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    changes: Vec<Change>,
}

#[derive(Deserialize)]
struct Change {
    seat_id: String,
    status: String,
}

/// When each hold was sent, by seat: a viewer's delay counts from there.
type Sent = Arc<Mutex<HashMap<String, Instant>>>;

/// By seat: when its hold was answered, and when the first and the last
/// viewer had the change.
#[derive(Default)]
struct Reach {
    answered: HashMap<String, Instant>,
    seen: HashMap<String, (Instant, Instant)>,
    /// The section of each hold granted.
    granted_in: Vec<String>,
}

/// What one viewer saw.
struct Seen {
    delays: Histogram<u64>,
    frames: u64,
    /// Whole maps sent again after the first (a viewer too slow for the
    /// diffs is resynchronised rather than fed every change).
    resyncs: u64,
    /// The socket closed before the end.
    dropped: bool,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds")
}

/// Resident memory of the server processes, in KiB.
fn rss_kib(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|s| s.lines().find_map(|l| l.strip_prefix("VmRSS:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())))
        .sum()
}

#[allow(clippy::too_many_arguments)]
async fn view(
    url: String,
    local: std::net::IpAddr,
    sent: Sent,
    reach: Arc<Mutex<Reach>>,
    connected: Arc<AtomicU64>,
    connecting: Arc<Semaphore>,
    stop: Stop,
) -> Seen {
    let mut seen = Seen { delays: histogram(), frames: 0, resyncs: 0, dropped: false };
    let socket = {
        let Ok(_turn) = connecting.acquire().await else { return seen };
        connect(&url, local).await
    };
    let Ok(mut socket) = socket else {
        seen.dropped = true;
        return seen;
    };
    let mut counted = false;
    loop {
        let next = tokio::select! {
            next = socket.next() => next,
            _ = stop.wait() => break,
        };
        let Some(Ok(message)) = next else {
            seen.dropped = true;
            break;
        };
        let Message::Text(text) = message else { continue };
        let received = Instant::now();
        seen.frames += 1;
        if !counted {
            // The first frame is the snapshot: this viewer is watching.
            counted = true;
            connected.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let Ok(diff) = serde_json::from_str::<Diff>(text.as_str()) else { continue };
        if diff.kind == "snapshot" {
            seen.resyncs += 1;
        }
        if diff.kind != "diff" {
            continue;
        }
        let sent = sent.lock().unwrap_or_else(|p| p.into_inner());
        let mut reach = reach.lock().unwrap_or_else(|p| p.into_inner());
        for change in diff.changes.iter().filter(|c| c.status == "held") {
            if let Some(at) = sent.get(&change.seat_id) {
                let micros = received.saturating_duration_since(*at).as_micros() as u64;
                seen.delays.saturating_record(micros.max(1));
                let span = reach.seen.entry(change.seat_id.clone()).or_insert((received, received));
                span.0 = span.0.min(received);
                span.1 = span.1.max(received);
            }
        }
    }
    seen
}

pub async fn fanout(ctx: &Ctx, args: FanoutArgs) -> Result<Report> {
    need_fans(ctx, 20)?;
    let api = &ctx.api;
    let event_id = match &args.event_id {
        Some(id) => id.clone(),
        None => {
            let seats = args.seats.max((args.hold_rate * args.secs * 2.0) as usize).max(PER_ROW * 2);
            create_event(api, &ctx.staff, &event_body(&format!("Fan-out {}", rand::random::<u32>()), seats, 600, 50, false)).await?
        }
    };
    // The seats to hold: free seated ones (not standing places), shuffled.
    let listed: SeatList = serde_json::from_value(api.get(&format!("/api/v1/events/{event_id}/seats"), None).await?.body)?;
    let mut free: Vec<(String, String)> = listed
        .seats
        .into_iter()
        .filter(|s| s.status == "available" && s.kind.as_deref() != Some("standing"))
        .map(|s| (s.seat_id, s.section))
        .collect();
    let seats = free.len();
    {
        use rand::seq::SliceRandom;
        free.shuffle(&mut rand::thread_rng());
    }
    let mut sections: Vec<String> = free.iter().map(|(_, s)| s.clone()).collect();
    sections.sort();
    sections.dedup();
    // Viewer k watches the whole map, or section k (round the sections).
    let base = format!("{}/api/v1/events/{event_id}/live", api.ws_base());
    let watches = |k: usize| match args.view {
        ViewKind::Whole => None,
        ViewKind::Sections => Some(sections[k % sections.len()].clone()),
    };
    let mut viewers_of: HashMap<Option<String>, u64> = HashMap::new();
    for k in 0..args.viewers {
        *viewers_of.entry(watches(k)).or_default() += 1;
    }

    // The viewers connect a few hundred at a time, as a page's crowd does.
    let rss_before = rss_kib(&ctx.server_pids);
    let sent: Sent = Arc::default();
    let reach: Arc<Mutex<Reach>> = Arc::default();
    let connected = Arc::new(AtomicU64::new(0));
    let connecting = Arc::new(Semaphore::new(200));
    let stop = Stop::new();
    let connect_started = Instant::now();
    // Each viewer resumes from where its view stands now, as a page does
    // (its server-rendered map is that recent): the first frame is small.
    let mut resume = HashMap::new();
    for view in viewers_of.keys() {
        let query = view.as_ref().map(|s| format!("?section={s}")).unwrap_or_default();
        let frame = api.get(&format!("/api/v1/events/{event_id}/live{query}"), None).await?.body;
        let (epoch, seq) = (frame["epoch"].as_u64().unwrap_or(0), frame["seq"].as_u64().unwrap_or(0));
        let at = format!("{}epoch={epoch}&since={seq}", if query.is_empty() { "?" } else { "&" });
        resume.insert(view.clone(), format!("{query}{at}"));
    }
    let viewers: Vec<_> = (0..args.viewers)
        .map(|k| {
            let url = format!("{base}{}", resume.get(&watches(k)).cloned().unwrap_or_default());
            let local = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1 + (k % usize::from(args.local_addresses.max(1))) as u8));
            tokio::spawn(view(url, local, sent.clone(), reach.clone(), connected.clone(), connecting.clone(), stop.clone()))
        })
        .collect();
    let bar = progress(args.viewers as u64, "viewers connecting");
    let deadline = Instant::now() + Duration::from_secs(60 + args.viewers as u64 / 500);
    while connected.load(Ordering::Relaxed) < args.viewers as u64 && Instant::now() < deadline {
        bar.set_position(connected.load(Ordering::Relaxed));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bar.finish_and_clear();
    let connect_secs = connect_started.elapsed().as_secs_f64();
    let watching = connected.load(Ordering::Relaxed);
    // Let the connection work settle before reading memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_watching = rss_kib(&ctx.server_pids);

    // Holds of one seat each, distinct seats, not released: one change each.
    let rec = Arc::new(Recorder::default());
    let granted = Arc::new(AtomicU64::new(0));
    let cpu_before = cpu_now(&ctx.server_pids);
    let started = Instant::now();
    let bar = progress((args.hold_rate * args.secs) as u64, "holds while watched");
    let fans = ctx.fans.clone();
    let (api2, ev, sent2, reach2, granted2, bar2, rec2) =
        (api.clone(), event_id.clone(), sent.clone(), reach.clone(), granted.clone(), bar.clone(), rec.clone());
    let free = Arc::new(free);
    let holds = ((args.hold_rate * args.secs) as u64).min(seats as u64);
    open_arrivals(args.hold_rate, Some(holds), Some(started + Duration::from_secs_f64(args.secs)), move |i, intended| {
        let (api, ev, sent, reach, granted, bar, rec) =
            (api2.clone(), ev.clone(), sent2.clone(), reach2.clone(), granted2.clone(), bar2.clone(), rec2.clone());
        let fan = fans[i as usize % fans.len()].clone();
        // A different free seat each time.
        let (seat, section) = free[i as usize % free.len()].clone();
        async move {
            sent.lock().unwrap_or_else(|p| p.into_inner()).insert(seat.clone(), Instant::now());
            let body = json!({ "seat_ids": [seat] });
            if let Some(r) = timed(&rec, "hold", intended, api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &[], &body)).await {
                if r.status == 201 {
                    granted.fetch_add(1, Ordering::Relaxed);
                    let mut reach = reach.lock().unwrap_or_else(|p| p.into_inner());
                    reach.answered.insert(seat.clone(), Instant::now());
                    reach.granted_in.push(section);
                }
            }
            bar.inc(1);
        }
    })
    .await;
    bar.finish_and_clear();
    // The last changes reach the last viewers.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let phase = Phase::new("holds while watched", &rec, started.elapsed(), cpu_now(&ctx.server_pids).since(cpu_before));
    stop.fire();

    let mut delays = histogram();
    let (mut frames, mut resyncs, mut dropped) = (0u64, 0u64, 0u64);
    for viewer in viewers {
        if let Ok(seen) = viewer.await {
            let _ = delays.add(&seen.delays);
            frames += seen.frames;
            resyncs += seen.resyncs;
            dropped += u64::from(seen.dropped);
        }
    }
    // How long after each hold's answer its change reached the last viewer
    // (0 when every viewer had it before the fan had the answer), and how
    // far apart the first and the last viewer got it.
    let (mut to_last, mut spread) = (histogram(), histogram());
    {
        let reach = reach.lock().unwrap_or_else(|p| p.into_inner());
        for (seat, (first, last)) in &reach.seen {
            spread.saturating_record((last.saturating_duration_since(*first).as_micros() as u64).max(1));
            if let Some(answered) = reach.answered.get(seat) {
                to_last.saturating_record((last.saturating_duration_since(*answered).as_micros() as u64).max(1));
            }
        }
    }
    let q = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let granted = granted.load(Ordering::Relaxed);
    // Each change is owed to the viewers who show its seat.
    let expected: u64 = {
        let reach = reach.lock().unwrap_or_else(|p| p.into_inner());
        reach
            .granted_in
            .iter()
            .map(|section| match args.view {
                ViewKind::Whole => watching,
                ViewKind::Sections => viewers_of.get(&Some(section.clone())).copied().unwrap_or(0),
            })
            .sum()
    };
    let delivered = delays.len();
    let ms = |q: f64| delays.value_at_quantile(q) as f64 / 1000.0;
    let kib_per_viewer = rss_watching.saturating_sub(rss_before) as f64 / watching.max(1) as f64;
    let a = audit(ctx, &event_id).await;
    // Every change reaches every viewer, as a diff or inside a resent map.
    let passed = watching == args.viewers as u64 && (delivered == expected || resyncs > 0) && dropped == 0 && audit_ok(&a);

    let view = match args.view {
        ViewKind::Whole => "whole map",
        ViewKind::Sections => "one section each",
    };
    let json = json!({
        "scenario": "live fan-out", "event_id": event_id, "viewers": args.viewers, "watching": watching, "view": view,
        "sections": sections.len(),
        "connect_seconds": connect_secs, "server_rss_kib_before": rss_before, "server_rss_kib_watching": rss_watching,
        "server_kib_per_viewer": kib_per_viewer, "holds_granted": granted, "changes_expected": expected,
        "changes_delivered": delivered, "frames": frames, "resyncs": resyncs, "viewers_dropped": dropped,
        "delay_p50_ms": ms(0.5), "delay_p99_ms": ms(0.99), "delay_p999_ms": ms(0.999), "delay_max_ms": delays.max() as f64 / 1000.0,
        "answer_to_last_viewer_p50_ms": q(&to_last, 0.5), "answer_to_last_viewer_p99_ms": q(&to_last, 0.99),
        "first_to_last_viewer_p50_ms": q(&spread, 0.5), "first_to_last_viewer_p99_ms": q(&spread, 0.99),
        "phase": phase, "audit": a, "passed": passed,
    });
    let mut md = format!("## {}. Live fan-out ({view})\n\n", args.report_section);
    let watched = match args.view {
        ViewKind::Whole => "the whole map".to_owned(),
        ViewKind::Sections => format!("one of its {} sections each, as a stadium's fans do (only that section's changes)", sections.len()),
    };
    md += &format!(
        "{} viewers on one event's live socket ({seats} free seats), watching {watched}; then one-seat holds at {:.0}/s for {:.0} s, each change pushed to every viewer who shows it. The delay counts from the moment the hold was sent to the moment a viewer had the frame (so it includes the hold itself).\n\n",
        args.viewers, args.hold_rate, args.secs
    );
    md += &format!(
        "- viewers watching: **{watching}** of {} (connected in {connect_secs:.1} s), dropped: {dropped}\n\
         - server memory: {:.0} MiB before, {:.0} MiB with the viewers: **{kib_per_viewer:.0} KiB per viewer**\n\
         - changes delivered as diffs: **{delivered}** of {expected} owed ({granted} holds, each to the viewers who show it); whole maps resent to slow viewers: {resyncs}\n\
         - hold sent → change at a viewer: p50 **{:.1} ms**, p99 **{:.1} ms**, p99.9 {:.1} ms, max {:.1} ms\n\
         - hold answered → the last viewer has it: p50 **{:.1} ms**, p99 **{:.1} ms** (goal: p99 under 100 ms); first viewer → last viewer: p50 {:.1} ms, p99 {:.1} ms\n\n",
        args.viewers,
        rss_before as f64 / 1024.0,
        rss_watching as f64 / 1024.0,
        ms(0.5),
        ms(0.99),
        ms(0.999),
        delays.max() as f64 / 1000.0,
        q(&to_last, 0.5),
        q(&to_last, 0.99),
        q(&spread, 0.5),
        q(&spread, 0.99),
    );
    md += &ops_table(&phase);
    md += "\n";
    md += &audit_md(&a);
    Ok(Report { json, markdown: md, passed })
}
