//! The hot seat: many fans at once on the same few seats.

use super::*;

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
    let event_id =
        create_event(api, &ctx.staff, &event_body(&format!("Hot seat {}", rand::random::<u32>()), args.seats.max(PER_ROW * 2), 600, 50, false))
            .await?;
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
                    if let Some(r) =
                        timed(&rec, "hot seat attempt", intended, api.post(&path, Some(&fan.session), &[], &json!({ "seat_ids": [hot] }))).await
                    {
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
                    if let Some(r) =
                        timed(&rec, "other holds", intended, api.post(&path, Some(&fan.session), &[], &json!({ "seat_ids": seats }))).await
                    {
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
        r.body["seats"]
            .as_array()
            .and_then(|s| s.iter().find(|x| x["seat_id"].as_str() == Some(hot.as_str())).and_then(|x| x["status"].as_str().map(str::to_owned)))
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
