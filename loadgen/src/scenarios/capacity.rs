//! Capacity runs for the ratios against pgbench.

use super::*;
use crate::conn::Conn;

#[derive(clap::Args)]
pub struct CapacityArgs {
    /// healthz (fixed bytes), seats (the seat-map JSON), page (the
    /// server-rendered seat-map page, in gzip as browsers take it, signed
    /// out), fan-page (the same signed in, each fan's own), holds, cycles
    /// (each caller holds a seat of its own and releases it, again and
    /// again: one cycle is two writes), purchases (hold a seat, then pay for
    /// it with a good card), joins.
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
        "seats" | "page" | "fan-page" | "holds" | "cycles" | "purchases" => {
            create_event(api, &ctx.staff, &event_body(&format!("Capacity {}", rand::random::<u32>()), args.seats, 600, 50, false)).await?
        }
        "joins" => create_event(api, &ctx.staff, &event_body(&format!("Joins {}", rand::random::<u32>()), 100, 600, 4, true)).await?,
        other => bail!("unknown --what {other}: healthz, seats, page, fan-page, holds, cycles, purchases or joins"),
    };
    if matches!(args.what.as_str(), "fan-page" | "holds" | "cycles" | "purchases" | "joins") {
        need_fans(ctx, args.concurrency)?;
    }
    let rec = Arc::new(Recorder::default());
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu_now(&ctx.server_pids);
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(args.secs);
    let rows = args.seats / PER_ROW;
    // The writes, compared with pgbench, are sent each on its caller's own
    // connection (see `Conn`); the reads, compared with the same server's
    // fixed bytes, through the shared client as before.
    let conns = (0..args.concurrency).map(|_| Conn::new(&api.base)).collect::<Result<Vec<_>>>()?;
    // Closed loop on purpose: this measures the most the server answers.
    let workers = conns.into_iter().enumerate().map(|(w, mut conn)| {
        let (api, rec, next, ev, fans, what) = (api.clone(), rec.clone(), next.clone(), event_id.clone(), ctx.fans.clone(), args.what.clone());
        async move {
            while Instant::now() < until {
                let t = Instant::now();
                let ok = match what.as_str() {
                    "healthz" => timed(&rec, "GET /healthz", t, api.get("/healthz", None)).await.is_some_and(|r| r.status == 200),
                    "seats" => timed(&rec, "GET seat map JSON", t, api.read(&format!("/api/v1/events/{ev}/seats"), None))
                        .await
                        .is_some_and(|r| r.status == 200),
                    "page" => timed(&rec, "GET seat-map page", t, api.page(&format!("/events/{ev}"), None)).await.is_some_and(|r| r.status == 200),
                    "fan-page" => {
                        let fan = &fans[next.fetch_add(1, Ordering::Relaxed) % fans.len()];
                        timed(&rec, "GET seat-map page, signed in", t, api.page(&format!("/events/{ev}"), Some(&fan.session)))
                            .await
                            .is_some_and(|r| r.status == 200)
                    }
                    "holds" => {
                        // Seats in order, so holds never conflict: the bare rate.
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= rows * PER_ROW {
                            break;
                        }
                        let fan = &fans[(n * 31 + w) % fans.len()];
                        let seat = seat_id(n / PER_ROW + 1, n % PER_ROW + 1);
                        timed(
                            &rec,
                            "hold one seat",
                            t,
                            conn.call(Method::POST, &format!("/api/v1/events/{ev}/holds"), &fan.session, &[], Some(&json!({ "seat_ids": [seat] }))),
                        )
                        .await
                        .is_some_and(|r| r.status == 201)
                    }
                    "cycles" => {
                        // Each caller its own fan and seat: no conflicts, no
                        // per-fan limit; a cycle counts once both writes are done.
                        let fan = &fans[w % fans.len()];
                        let seat = seat_id(w / PER_ROW + 1, w % PER_ROW + 1);
                        let held = timed(
                            &rec,
                            "hold one seat",
                            t,
                            conn.call(Method::POST, &format!("/api/v1/events/{ev}/holds"), &fan.session, &[], Some(&json!({ "seat_ids": [seat] }))),
                        )
                        .await;
                        match held.as_ref().filter(|r| r.status == 201).and_then(|r| r.str("hold_id").zip(r.str("hold_token"))) {
                            Some((id, token)) => {
                                let (path, token_header) = (format!("/api/v1/holds/{id}"), [("x-hold-token", token)]);
                                let released = conn.call(Method::DELETE, &path, &fan.session, &token_header, None);
                                let released = timed(&rec, "release it", Instant::now(), released).await;
                                rec.latency("hold + release", t);
                                released.is_some_and(|r| r.status == 204)
                            }
                            None => false,
                        }
                    }
                    "purchases" => {
                        // Seats in order, as for holds; a purchase counts once
                        // the booking is confirmed.
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= rows * PER_ROW {
                            break;
                        }
                        let fan = &fans[(n * 31 + w) % fans.len()];
                        let seat = seat_id(n / PER_ROW + 1, n % PER_ROW + 1);
                        let held = timed(
                            &rec,
                            "hold one seat",
                            t,
                            conn.call(Method::POST, &format!("/api/v1/events/{ev}/holds"), &fan.session, &[], Some(&json!({ "seat_ids": [seat] }))),
                        )
                        .await;
                        match held.as_ref().filter(|r| r.status == 201).and_then(|r| r.str("hold_id").zip(r.str("hold_token"))) {
                            Some((id, token)) => {
                                let key = format!("capacity-{ev}-{n}");
                                let (path, headers) = (format!("/api/v1/holds/{id}/checkout"), [("idempotency-key", key.as_str())]);
                                let body = json!({ "hold_token": token, "payment_token": "tok_visa" });
                                let paid =
                                    timed(&rec, "check out", Instant::now(), conn.call(Method::POST, &path, &fan.session, &headers, Some(&body)))
                                        .await;
                                rec.latency("hold + checkout", t);
                                paid.is_some_and(|r| r.status == 201)
                            }
                            None => false,
                        }
                    }
                    _ => {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let Some(fan) = fans.get(n) else { break };
                        timed(
                            &rec,
                            "queue join",
                            t,
                            conn.call(Method::POST, &format!("/api/v1/events/{ev}/queue"), &fan.session, &[], Some(&json!({}))),
                        )
                        .await
                        .is_some_and(|r| r.status == 201)
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
    // The one operation timed (for cycles and purchases, the whole of it).
    let timed_op = match args.what.as_str() {
        "cycles" => phase.op("hold + release"),
        "purchases" => phase.op("hold + checkout"),
        _ => phase.ops.first(),
    };
    let p99 = timed_op.map_or(0.0, |op| op.p99_ms);
    let json = json!({ "scenario": "capacity", "what": args.what, "concurrency": args.concurrency, "ok": ok, "failed": rec.counter("failed"),
        "ok_per_second": per_second, "p99_ms": p99, "phase": phase, "passed": true });
    let md = format!(
        "capacity {}: {} ok ({} failed) in {:.1} s with {} concurrent callers = **{:.0}/s**, p99 {:.1} ms, server CPU {:.3} ms/request\n",
        args.what,
        ok,
        rec.counter("failed"),
        elapsed.as_secs_f64(),
        args.concurrency,
        per_second,
        p99,
        phase.server_cpu_ms_per_request
    );
    Ok(Report { json, markdown: md, passed: true })
}
