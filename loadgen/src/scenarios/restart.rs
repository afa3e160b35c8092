//! The database restarted mid-sale: every acknowledged booking must be found.

use super::*;

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
        let (api, ev, rec, fans, bar, acked, timeline, board) =
            (api.clone(), event_id.clone(), rec.clone(), ctx.fans.clone(), bar.clone(), acked.clone(), timeline.clone(), board.clone());
        open_arrivals(args.rate, None, Some(started + Duration::from_secs_f64(args.secs)), move |i, intended| {
            let idx = i as usize % fans.len();
            let (api, ev, rec, fan, bar, acked, timeline, board) =
                (api.clone(), ev.clone(), rec.clone(), fans[idx].clone(), bar.clone(), acked.clone(), timeline.clone(), board.clone());
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
                let hold = timed(
                    &rec,
                    "hold",
                    intended,
                    api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &[], &json!({ "seat_ids": picked })),
                )
                .await;
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
                        let Some(r) = timed(&rec, "checkout", t, api.post(&path, Some(&fan.session), &[("idempotency-key", &key)], &body)).await
                        else {
                            break;
                        };
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
