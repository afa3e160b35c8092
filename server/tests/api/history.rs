//! A recorded history, checked against the final state. Fans hold seats
//! (retrying with their keys), release some, pay for others with every kind
//! of card, and staff refund bookings, while PostgreSQL is stopped and
//! started again and the server is killed with SIGKILL and restarted. Every
//! request and its answer is written down; afterwards the history must
//! agree with the database: no acknowledged write lost, no booking or charge
//! nobody asked for, one answer per key, no seat held or sold twice.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;
use crate::crash::{client_for, free_port, start_server_on};
use frontrow_server::pgcluster::PrivateCluster;

async fn cluster() -> PrivateCluster {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/history-pg");
    PrivateCluster::ensure(&dir, 54339).await.expect("the history test's own PostgreSQL")
}

/// What one request got: a definite answer, or none (the connection broke,
/// or the server could not say: 5xx).
#[derive(Debug, Clone)]
enum Answer {
    Definite(u16, Value),
    Unknown(String),
}

impl Answer {
    async fn of(r: Result<reqwest::Response, reqwest::Error>) -> Answer {
        match r {
            Err(e) => Answer::Unknown(e.to_string()),
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r.json::<Value>().await.unwrap_or(Value::Null);
                if status >= 500 {
                    Answer::Unknown(format!("{status} {body}"))
                } else {
                    Answer::Definite(status, body)
                }
            }
        }
    }

    fn ok(&self) -> Option<&Value> {
        match self {
            Answer::Definite(200..=201, body) => Some(body),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Hold { seats: Vec<String> },
    Release { hold_id: String },
    Checkout { hold_id: String, card: &'static str },
    Refund { booking_id: String },
}

#[derive(Debug, Clone)]
struct Entry {
    who: usize,
    key: String,
    op: Op,
    answer: Answer,
}

#[derive(Clone, Default)]
struct History(Arc<Mutex<Vec<Entry>>>);

impl History {
    fn record(&self, who: usize, key: &str, op: Op, answer: Answer) -> Answer {
        self.0.lock().expect("history").push(Entry { who, key: key.to_owned(), op, answer: answer.clone() });
        answer
    }
    fn entries(&self) -> Vec<Entry> {
        self.0.lock().expect("history").clone()
    }
}

const CARDS: [&str; 4] = ["tok_visa", "tok_visa", "tok_chargeDeclined", "tok_lost"];

async fn hold(fan: &Client, event: Uuid, seats: &[String], key: &str) -> Answer {
    let request =
        fan.http.post(format!("{}/api/v1/events/{event}/holds", fan.base)).header("idempotency-key", key).json(&json!({ "seat_ids": seats }));
    Answer::of(request.timeout(Duration::from_secs(15)).send().await).await
}

async fn release(fan: &Client, hold_id: &str, token: &str) -> Answer {
    let request = fan.http.delete(format!("{}/api/v1/holds/{hold_id}", fan.base)).header("x-hold-token", token);
    Answer::of(request.timeout(Duration::from_secs(15)).send().await).await
}

async fn checkout(fan: &Client, hold_id: &str, token: &str, card: &str, key: &str) -> Answer {
    let request = fan
        .http
        .post(format!("{}/api/v1/holds/{hold_id}/checkout", fan.base))
        .header("idempotency-key", key)
        .json(&json!({ "hold_token": token, "payment_token": card }));
    Answer::of(request.timeout(Duration::from_secs(15)).send().await).await
}

async fn refund(staff: &Client, booking_id: &str, key: &str) -> Answer {
    let request = staff
        .http
        .post(format!("{}/api/v1/admin/bookings/{booking_id}/refund", staff.base))
        .header("idempotency-key", key)
        .json(&json!({ "reason": "history test" }));
    Answer::of(request.timeout(Duration::from_secs(15)).send().await).await
}

/// A checkout's answer is final when it is definite and not "still working
/// on it" (202 processing, 409 key in use).
fn settled(answer: &Answer) -> bool {
    match answer {
        Answer::Definite(202, _) => false,
        Answer::Definite(409, body) => body["error"] != "idempotency_key_in_use" && body["error"] != "checkout_in_progress",
        Answer::Definite(..) => true,
        Answer::Unknown(_) => false,
    }
}

/// One fan's session: hold, then release or pay, again and again.
async fn fan_loop(who: usize, fan: Client, event: Uuid, seats: Arc<Vec<String>>, history: History, until: Instant) {
    let mut round = 0;
    while Instant::now() < until {
        round += 1;
        let picked: Vec<String> = {
            let mut rng = rand::thread_rng();
            let n = rng.gen_range(1..=2);
            seats.choose_multiple(&mut rng, n).cloned().collect()
        };
        let key = format!("hold-{who}-{round}");
        let mut answer = history.record(who, &key, Op::Hold { seats: picked.clone() }, hold(&fan, event, &picked, &key).await);
        // A hold with no answer is retried with its key (the picker does).
        for _ in 0..3 {
            if !matches!(answer, Answer::Unknown(_)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            answer = history.record(who, &key, Op::Hold { seats: picked.clone() }, hold(&fan, event, &picked, &key).await);
        }
        let Some(held) = answer.ok() else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let (hold_id, token) = (held["hold_id"].as_str().unwrap_or_default().to_owned(), held["hold_token"].as_str().unwrap_or_default().to_owned());
        if rand::thread_rng().gen_ratio(1, 4) {
            let key = format!("release-{who}-{round}");
            history.record(who, &key, Op::Release { hold_id: hold_id.clone() }, release(&fan, &hold_id, &token).await);
            continue;
        }
        let card = *CARDS.choose(&mut rand::thread_rng()).unwrap_or(&"tok_visa");
        let key = format!("checkout-{who}-{round}");
        let op = || Op::Checkout { hold_id: hold_id.clone(), card };
        let mut answer = history.record(who, &key, op(), checkout(&fan, &hold_id, &token, card, &key).await);
        // Retried with the same key until it is answered for good (the
        // last retries run after the faults, in `settle`).
        let deadline = Instant::now() + Duration::from_secs(10);
        while !settled(&answer) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(500)).await;
            answer = history.record(who, &key, op(), checkout(&fan, &hold_id, &token, card, &key).await);
        }
    }
}

/// Staff refund bookings the history shows were made.
async fn refund_loop(staff: Client, history: History, until: Instant) {
    let mut refunded = HashSet::new();
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let booked: Vec<String> = history
            .entries()
            .iter()
            .filter_map(|e| e.answer.ok().and_then(|b| b["booking_id"].as_str()).map(str::to_owned))
            .filter(|b| !refunded.contains(b))
            .collect();
        let Some(booking_id) = booked.choose(&mut rand::thread_rng()).cloned() else { continue };
        let key = format!("refund-{booking_id}");
        let answer = history.record(usize::MAX, &key, Op::Refund { booking_id: booking_id.clone() }, refund(&staff, &booking_id, &key).await);
        if matches!(answer, Answer::Definite(..)) {
            refunded.insert(booking_id);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_history_under_faults_agrees_with_the_final_state() {
    let pg = cluster().await;
    let database = format!("history_{}", Uuid::new_v4().simple());
    pg.create_database(&database).await.expect("database");
    let database_url = pg.url(&database);
    let pool = frontrow_server::startup::connect(&database_url, 4).await.expect("pool");
    frontrow_server::startup::migrate(&pool).await.expect("migrations");
    let engine = frontrow_server::startup::engine(&test_settings(), pool.clone()).expect("engine");
    let staff_account =
        frontrow_engine::accounts::NewUser { email: "history-staff@example.test", password: PASSWORD, name: "S", role: frontrow_model::Role::Staff };
    engine.create_user(staff_account).await.expect("staff");

    let port = free_port();
    let mut server = start_server_on(&database_url, port, None).await;
    let base = server.base.clone();
    let staff = client_for(&base);
    assert_eq!(staff.post("/api/v1/auth/login", json!({ "email": "history-staff@example.test", "password": PASSWORD })).await.status, 200);
    let created = staff
        .post(
            "/api/v1/admin/events",
            json!({ "name": "History Night", "kind": "concert", "venue": "Hall", "starts_at": "2030-01-01T20:00:00Z",
                    "sale_opens_at": "2020-01-01T10:00:00Z", "hold_ttl_seconds": 600, "max_seats_per_order": 10,
                    "tiers": [{ "tier": "Standard", "price_cents": 5000 }],
                    "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 20, "tier": "Standard" }, { "row": "2", "seats": 20, "tier": "Standard" }] }] }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event: Uuid = created.body["event_id"].as_str().expect("event id").parse().expect("uuid");
    let seats: Arc<Vec<String>> = Arc::new((1..=2).flat_map(|row| (1..=20).map(move |n| format!("A-{row}-{n}"))).collect());

    let mut fans = Vec::new();
    for n in 0..10 {
        let c = client_for(&base);
        let r = c
            .post(
                "/api/v1/auth/signup",
                json!({ "email": format!("history-{n}-{}@example.test", Uuid::new_v4().simple()), "password": PASSWORD, "name": "Fan" }),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        fans.push(c);
    }

    let history = History::default();
    let until = Instant::now() + Duration::from_secs(14);
    let mut workers = tokio::task::JoinSet::new();
    for (who, fan) in fans.iter().cloned().enumerate() {
        workers.spawn(fan_loop(who, fan, event, seats.clone(), history.clone(), until));
    }
    workers.spawn(refund_loop(staff.clone(), history.clone(), until));

    // The faults: the database goes away and comes back, then the server
    // is killed outright and started again on the same address.
    tokio::time::sleep(Duration::from_secs(3)).await;
    pg.stop().await.expect("stopping PostgreSQL");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pg = cluster().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.child.start_kill().expect("SIGKILL");
    let _ = server.child.wait().await;
    server = start_server_on(&database_url, port, None).await;
    while workers.join_next().await.is_some() {}

    // Every checkout left without a final answer is asked again with its key.
    let entries = history.entries();
    let mut last: HashMap<(usize, String), Entry> = HashMap::new();
    for e in &entries {
        last.insert((e.who, e.key.clone()), e.clone());
    }
    let tokens: HashMap<String, String> = entries
        .iter()
        .filter_map(|e| e.answer.ok().filter(|_| matches!(e.op, Op::Hold { .. })))
        .filter_map(|b| Some((b["hold_id"].as_str()?.to_owned(), b["hold_token"].as_str()?.to_owned())))
        .collect();
    for ((who, key), e) in &last {
        let Op::Checkout { hold_id, card } = &e.op else { continue };
        if settled(&e.answer) {
            continue;
        }
        let token = tokens.get(hold_id).cloned().unwrap_or_default();
        let answer = eventually(90, &format!("a final answer for checkout {key}"), || async {
            let a = checkout(&fans[*who], hold_id, &token, card, key).await;
            settled(&a).then_some(a)
        })
        .await;
        history.record(*who, key, e.op.clone(), answer);
    }
    // Payments in doubt are settled by reconciliation; wait for a clean audit.
    let report = eventually(90, "reconciliation to settle every payment", || async {
        let report = engine.audit(Some(event.into())).await.ok()?;
        report.violations().is_empty().then_some(report)
    })
    .await;
    let entries = history.entries();
    check(&entries, &pool, event).await;
    let unanswered: Vec<&str> = entries
        .iter()
        .filter_map(|e| match &e.answer {
            Answer::Unknown(why) => Some(why.as_str()),
            Answer::Definite(..) => None,
        })
        .collect();
    println!(
        "history: {} requests ({} without an answer, e.g. {:?}), {} seats sold and {} held at the end",
        entries.len(),
        unanswered.len(),
        unanswered.iter().take(2).collect::<Vec<_>>(),
        report.seats_sold,
        report.seats_held
    );
    drop(server);
    pool.close().await;
    let _ = pg;
}

/// The history against the database.
async fn check(entries: &[Entry], pool: &sqlx::PgPool, event: Uuid) {
    // One answer per key: every definite answer to the same request agrees.
    let mut answers: HashMap<(usize, &str), (u16, Option<String>)> = HashMap::new();
    for e in entries {
        let Answer::Definite(status, body) = &e.answer else { continue };
        let named = match e.op {
            Op::Hold { .. } => body["hold_id"].as_str(),
            Op::Checkout { .. } => body["booking_id"].as_str(),
            _ => continue,
        };
        if matches!(e.op, Op::Checkout { .. }) && !settled(&e.answer) {
            continue;
        }
        let this = (*status, named.map(str::to_owned));
        let first = answers.entry((e.who, &e.key)).or_insert_with(|| this.clone());
        let same = match e.op {
            // A hold's retry answers the same hold (200 or 201), or a refusal.
            Op::Hold { .. } => first.1 == this.1 || first.1.is_none() || this.1.is_none(),
            _ => *first == this,
        };
        assert!(same, "key {} of {} answered {first:?} and then {this:?}", e.key, e.who);
    }

    let holds: HashMap<String, (String, Vec<String>)> =
        sqlx::query_as::<_, (Uuid, String, Vec<String>)>("SELECT hold_id, state::text, seat_ids FROM holds WHERE event_id = $1")
            .bind(event)
            .fetch_all(pool)
            .await
            .expect("holds")
            .into_iter()
            .map(|(id, state, seats)| (id.to_string(), (state, seats)))
            .collect();
    let bookings: HashMap<String, (String, String, Option<String>)> = sqlx::query_as::<_, (Uuid, Uuid, String, Option<String>)>(
        "SELECT b.booking_id, b.hold_id, b.status::text, c.idempotency_key FROM bookings b LEFT JOIN checkouts c ON c.booking_id = b.booking_id WHERE b.event_id = $1",
    )
    .bind(event)
    .fetch_all(pool)
    .await
    .expect("bookings")
    .into_iter()
    .map(|(b, h, status, key)| (b.to_string(), (h.to_string(), status, key)))
    .collect();

    let acknowledged_holds: HashMap<String, Vec<String>> = entries
        .iter()
        .filter_map(|e| match (&e.op, e.answer.ok()) {
            (Op::Hold { seats }, Some(body)) => Some((body["hold_id"].as_str()?.to_owned(), seats.clone())),
            _ => None,
        })
        .collect();
    // Acknowledged holds are there, on the seats asked for.
    for (hold_id, seats) in &acknowledged_holds {
        let (_, stored) = holds.get(hold_id).unwrap_or_else(|| panic!("acknowledged hold {hold_id} is missing"));
        let (mut a, mut b) = (seats.clone(), stored.clone());
        a.sort();
        b.sort();
        assert_eq!(a, b, "hold {hold_id} is on other seats");
    }
    // Acknowledged releases stand: the hold let go and nothing booked on it.
    let booked_holds: HashSet<&String> = bookings.values().map(|(h, ..)| h).collect();
    for e in entries {
        if let (Op::Release { hold_id }, Some(_)) = (&e.op, e.answer.ok()) {
            let (state, _) = &holds[hold_id];
            assert_ne!(state, "active", "released hold {hold_id} is active again");
            assert!(!booked_holds.contains(hold_id), "released hold {hold_id} was booked");
        }
    }
    // Acknowledged bookings are there; refused checkouts booked nothing.
    let refunded: HashSet<&str> = entries
        .iter()
        .filter_map(|e| match (&e.op, &e.answer) {
            (Op::Refund { booking_id }, Answer::Definite(200, _)) => Some(booking_id.as_str()),
            _ => None,
        })
        .collect();
    for e in entries {
        let Op::Checkout { hold_id, .. } = &e.op else { continue };
        match &e.answer {
            Answer::Definite(201, body) => {
                let booking_id = body["booking_id"].as_str().expect("booking id");
                let (on_hold, status, _) = bookings.get(booking_id).unwrap_or_else(|| panic!("acknowledged booking {booking_id} is missing"));
                assert_eq!(on_hold, hold_id);
                if refunded.contains(booking_id) {
                    assert_eq!(status, "refunded", "refunded booking {booking_id}");
                }
            }
            Answer::Definite(402, _) => assert!(!booked_holds.contains(hold_id), "declined checkout on hold {hold_id} booked it"),
            _ => {}
        }
    }
    // No booking nobody asked for: each is on an acknowledged hold and came
    // from a checkout key the history sent.
    let sent_keys: HashSet<&str> = entries.iter().filter(|e| matches!(e.op, Op::Checkout { .. })).map(|e| e.key.as_str()).collect();
    for (booking_id, (hold_id, _, key)) in &bookings {
        assert!(acknowledged_holds.contains_key(hold_id), "booking {booking_id} is on hold {hold_id}, which nobody was given");
        let key = key.as_deref().unwrap_or_default();
        assert!(sent_keys.contains(key), "booking {booking_id} came from checkout key {key:?}, never sent");
    }
    // No seat sold twice: the live bookings' seats are disjoint.
    let mut sold = HashSet::new();
    for (booking_id, (hold_id, status, _)) in &bookings {
        if status != "confirmed" {
            continue;
        }
        for seat in &holds[hold_id].1 {
            assert!(sold.insert(seat.clone()), "seat {seat} sold twice (booking {booking_id})");
        }
    }
    // Every charge the provider took is booked or refunded.
    let stray: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payment_intents p JOIN checkouts c USING (checkout_id)
          WHERE c.event_id = $1 AND p.status = 'succeeded'
            AND NOT EXISTS (SELECT 1 FROM bookings b WHERE b.booking_id = c.booking_id)
            AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.payment_id AND r.status = 'succeeded')",
    )
    .bind(event)
    .fetch_one(pool)
    .await
    .expect("charges");
    assert_eq!(stray, 0, "charges with neither a booking nor a refund");
}
