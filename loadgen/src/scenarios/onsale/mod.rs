//! The on-sale (and the same across two instances): fans arrive at a set
//! rate, wait in the queue, hold, pay or abandon, until the seats are gone;
//! every fan must end with an answer.

use super::*;

mod fan;

use fan::{Outcome, Sale};

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

pub async fn onsale(ctx: &Ctx, args: OnsaleArgs) -> Result<Report> {
    need_fans(ctx, args.fans)?;
    let api = &ctx.api;
    let event_id =
        create_event(api, &ctx.staff, &event_body(&format!("{} {}", args.title, rand::random::<u32>()), args.seats, args.hold_ttl, 4, true)).await?;
    let stop = Stop::new();
    let board = board::watch(api.ws_base(), event_id.clone(), stop.clone());
    let mut others = Vec::new();
    for url in &args.watch_urls {
        let other = Api::new(url)?;
        others.push((url.clone(), other.clone(), board::watch(other.ws_base(), event_id.clone(), stop.clone())));
    }
    wait_loaded(&board).await?;
    let patience =
        if args.patience_secs > 0.0 { Duration::from_secs_f64(args.patience_secs) } else { Duration::from_secs(8 * args.hold_ttl as u64 + 10) };
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
                bar.set_message(format!(
                    "booked {} | seats avail {} held {} sold {}",
                    sale.booked.load(Ordering::Relaxed),
                    c.available,
                    c.held,
                    c.sold
                ));
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
        let (active, target, available) =
            (last["active"].as_f64().unwrap_or(0.0), last["target"].as_f64().unwrap_or(0.0), last["remaining"].as_u64().unwrap_or(0));
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
            s["t"].as_f64().unwrap_or(0.0),
            s["waiting"],
            s["active"],
            s["target"],
            s["admitted_total"],
            s["remaining"],
            s["held"],
            s["sold"]
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
