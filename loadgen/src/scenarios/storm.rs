//! The F5 storm: holds timed while a crowd reloads the seat map.

use super::*;

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
                        timed(&rec, "read: seat-map page", intended, api.page(&format!("/events/{ev}"), Some(&fan.session))).await;
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
                    if let Some(r) = timed(
                        &rec,
                        "hold",
                        intended,
                        api.post(&format!("/api/v1/events/{ev}/holds"), Some(&fan.session), &[], &json!({ "seat_ids": seats })),
                    )
                    .await
                    {
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
