//! Live seat maps: changes made through one instance reach WebSocket viewers
//! of another; each instance serves seat maps from memory, loading an event
//! once however many requests arrive at the same moment.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;

pub(crate) type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn viewer(app: &TestApp, event_id: Uuid, query: &str) -> (Socket, Value) {
    let url = format!("ws://{}/api/v1/events/{event_id}/live{query}", app.addr);
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connects");
    let first = next_frame(&mut socket).await;
    assert_eq!(first["type"], "snapshot", "first frame is a snapshot: {first}");
    (socket, first)
}

pub(crate) async fn next_frame(socket: &mut Socket) -> Value {
    loop {
        let message =
            tokio::time::timeout(Duration::from_secs(10), socket.next()).await.expect("a frame within 10 s").expect("socket open").expect("frame");
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).expect("JSON frame");
        }
    }
}

/// Reads frames until one reports `seat` with `status`.
async fn await_status(socket: &mut Socket, seat: &str, status: &str) -> Value {
    loop {
        let frame = next_frame(socket).await;
        let entries = frame.get("changes").or_else(|| frame.get("seats")).and_then(Value::as_array).cloned().unwrap_or_default();
        if entries.iter().any(|c| c["seat_id"] == seat && c["status"] == status) {
            return frame;
        }
    }
}

fn statuses(reply: &Reply) -> std::collections::HashMap<String, String> {
    reply.body["seats"]
        .as_array()
        .expect("seats")
        .iter()
        .map(|s| (s["seat_id"].as_str().unwrap_or_default().to_owned(), s["status"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// The live map follows the seat change log: a change made by hand (no
/// instance tells the others) arrives, and so does one whose transaction
/// began before a change that committed first (the log's cursor passes a
/// row only once every older transaction has ended, so none is skipped),
/// while the newer change is not held back by the older transaction.
#[tokio::test]
async fn every_committed_seat_change_reaches_the_map_even_by_hand_and_from_an_older_transaction() {
    let app = spawn_app().await;
    let event_id = app.event(2, 4, 300, 6).await;
    let client = app.client();
    let path = format!("/api/v1/events/{event_id}/seats");
    assert_eq!(statuses(&client.get(&path).await)["A-1-1"], "available");

    let mut older = app.pool.begin().await.expect("begin");
    sqlx::query("SELECT pg_current_xact_id()").execute(&mut *older).await.expect("an id for the older transaction");
    let fan = app.fan().await;
    assert_eq!(fan.hold(event_id, &["A-1-2"]).await.status, 201);
    // An older transaction still open does not hold the newer change back.
    eventually(5, "the hold while an older transaction is open", || async { (statuses(&client.get(&path).await)["A-1-2"] == "held").then_some(()) })
        .await;
    sqlx::query("UPDATE seats SET state = 'blocked', blocked_reason = 'by hand', version = nextval('seat_version_seq') WHERE event_id = $1 AND seat_id = 'A-1-1'")
        .bind(event_id)
        .execute(&mut *older)
        .await
        .expect("block by hand");
    older.commit().await.expect("commit");

    eventually(5, "both changes in the map", || async {
        let now = statuses(&client.get(&path).await);
        (now["A-1-1"] != "available" && now["A-1-2"] == "held").then_some(())
    })
    .await;
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn changes_through_one_instance_reach_viewers_of_another() {
    let database = fresh_database().await;
    let a = spawn_app_on(&database, |_| {}).await;
    let b = spawn_app_on(&database, |_| {}).await;
    let event_id = a.event(2, 5, 300, 6).await;

    let (mut socket, snapshot) = viewer(&b, event_id, "").await;
    let seats = snapshot["seats"].as_array().expect("seats");
    assert_eq!(seats.len(), 10);
    assert!(seats.iter().all(|s| s["status"] == "available"));
    let version = snapshot["version"].as_i64().expect("version");

    let fan = a.fan().await;
    let hold = fan.hold(event_id, &["A-1-1", "A-1-2"]).await;
    assert_eq!(hold.status, 201);
    let diff = await_status(&mut socket, "A-1-1", "held").await;
    assert_eq!(diff["type"], "diff");
    assert!(diff["version"].as_i64().expect("version") > version, "versions only grow: {diff}");

    let (hold_id, token) = (hold.body["hold_id"].as_str().unwrap_or_default(), hold.body["hold_token"].as_str().unwrap_or_default());
    assert_eq!(fan.release(hold_id, token).await.status, 204);
    await_status(&mut socket, "A-1-2", "available").await;

    let hold = fan.hold(event_id, &["A-2-3"]).await;
    let paid =
        fan.checkout(hold.body["hold_id"].as_str().unwrap_or_default(), hold.body["hold_token"].as_str().unwrap_or_default(), "tok_visa", "k1").await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    await_status(&mut socket, "A-2-3", "sold").await;

    // Instance B's memory agrees with the database, and B never re-read it.
    let seats = statuses(&b.client().get(&format!("/api/v1/events/{event_id}/seats")).await);
    assert_eq!(seats["A-2-3"], "sold");
    assert_eq!(seats["A-1-1"], "available");
    assert_eq!(b.engine.board().loads(), 1);
    a.assert_invariants().await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_lapsed_hold_is_free_at_once_and_announced_when_swept() {
    let database = fresh_database().await;
    let a = spawn_app_on(&database, |_| {}).await;
    let b = spawn_app_on(&database, |s| s.reaper_interval_ms = 60_000).await;
    let event_id = a.event(1, 4, 1, 4).await;
    let (mut socket, _) = viewer(&b, event_id, "").await;

    let fan = a.fan().await;
    assert_eq!(fan.hold(event_id, &["A-1-1"]).await.status, 201);
    await_status(&mut socket, "A-1-1", "held").await;
    // Lazy expiry: once the lease lapses the seat reads as available even
    // before any reaper touches the row.
    eventually(5, "the lapsed seat to read available", || async {
        let seats = statuses(&b.client().get(&format!("/api/v1/events/{event_id}/seats")).await);
        (seats["A-1-1"] == "available").then_some(())
    })
    .await;
    // A's reaper (100 ms) sweeps it; viewers hear about it.
    await_status(&mut socket, "A-1-1", "available").await;
    assert_eq!(seat_state(&a.pool, event_id, "A-1-1").await, "available");
    a.assert_invariants().await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_viewer_resuming_from_its_seq_gets_only_what_changed_since() {
    let app = spawn_app().await;
    let event_id = app.event(2, 10, 300, 6).await;
    let (_, snapshot) = viewer(&app, event_id, "").await;
    let (epoch, seq) = (snapshot["epoch"].as_u64().expect("epoch"), snapshot["seq"].as_u64().expect("seq"));
    let fan = app.fan().await;
    assert_eq!(fan.hold(event_id, &["A-2-7"]).await.status, 201);
    let (_, partial) = eventually(5, "the change to be in memory", || async {
        let (socket, partial) = viewer(&app, event_id, &format!("?epoch={epoch}&since={seq}")).await;
        (partial["seats"].as_array().map_or(0, Vec::len) == 1).then_some((socket, partial))
    })
    .await;
    assert_eq!(partial["seats"][0]["seat_id"], "A-2-7");
    assert_eq!(partial["seats"][0]["status"], "held");
    assert!(partial["seq"].as_u64().expect("seq") > seq);
    assert!(partial["version"].as_i64().expect("version") > snapshot["version"].as_i64().expect("version"));

    // A seq from another process (another epoch) means nothing here: the whole map.
    let (_, whole) = viewer(&app, event_id, &format!("?epoch={}&since={seq}", epoch as u32 ^ 1)).await;
    assert_eq!(whole["seats"].as_array().map_or(0, Vec::len), 20);
    app.stop().await;
}

#[tokio::test]
async fn unknown_events_are_refused_before_the_upgrade() {
    let app = spawn_app().await;
    let url = format!("ws://{}/api/v1/events/{}/live", app.addr, Uuid::new_v4());
    match tokio_tungstenite::connect_async(url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), 404),
        other => panic!("expected a 404, got {:?}", other.map(|(_, r)| r.status())),
    }
    let r = app.client().get("/api/v1/events/not-a-uuid/live").await;
    assert_eq!(r.status, 404);
    app.stop().await;
}

#[tokio::test]
async fn concurrent_first_reads_share_one_load_and_stay_in_memory() {
    let database = fresh_database().await;
    let a = spawn_app_on(&database, |_| {}).await;
    let event_id = a.event(10, 20, 300, 6).await;
    let b = spawn_app_on(&database, |_| {}).await;
    assert_eq!(b.engine.board().loads(), 0);
    // Once B follows the change log: a load that overlaps its start is
    // rightly done again (changes before the log's head were not read).
    eventually(10, "B's change listener", || async { (b.engine.board().resyncs() >= 1).then_some(()) }).await;

    let client = b.client();
    let reads = (0..64).map(|i| {
        let client = &client;
        async move {
            let path = if i % 2 == 0 { format!("/api/v1/events/{event_id}/seats") } else { format!("/api/v1/events/{event_id}") };
            client.get(&path).await
        }
    });
    let replies = futures::future::join_all(reads).await;
    assert!(replies.iter().all(|r| r.status == 200));
    assert!(replies.iter().step_by(2).all(|r| r.body["seats"].as_array().map_or(0, Vec::len) == 200));
    assert_eq!(b.engine.board().loads(), 1, "64 concurrent cold reads, one database load");

    // Writes through A arrive in B's memory; B still does not re-read.
    let fans = a.fans(20).await;
    let holds = fans.iter().enumerate().map(|(i, f)| {
        let seat = format!("A-{}-{}", i % 10 + 1, i % 3 + 1);
        async move { f.hold(event_id, &[seat.as_str()]).await }
    });
    futures::future::join_all(holds).await;
    let expected: std::collections::HashMap<String, String> = sqlx::query_as::<_, (String, String)>(
        "SELECT seat_id, CASE WHEN state = 'available' THEN 'available' WHEN state = 'sold' THEN 'sold' ELSE 'held' END
         FROM seats WHERE event_id = $1",
    )
    .bind(event_id)
    .fetch_all(&a.pool)
    .await
    .expect("seats")
    .into_iter()
    .collect();
    eventually(5, "B's seat map to match the database", || async {
        (statuses(&client.get(&format!("/api/v1/events/{event_id}/seats")).await) == expected).then_some(())
    })
    .await;
    assert_eq!(b.engine.board().loads(), 1);
    let detail = client.get(&format!("/api/v1/events/{event_id}")).await;
    let held = expected.values().filter(|s| *s == "held").count() as i64;
    assert_eq!(detail.body["seats_available"].as_i64(), Some(200 - held));
    a.assert_invariants().await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_that_falls_behind_is_dropped_to_reconnect_not_sent_maps() {
    use futures::SinkExt;
    let app = spawn_app().await;
    let event_id = app.event(20, 50, 300, 4).await;
    let staff = app.staff().await;
    // A viewer that reads nothing, through the smallest window the kernel allows.
    let tcp = tokio::net::TcpSocket::new_v4().unwrap();
    tcp.set_recv_buffer_size(2048).unwrap();
    let stream = tcp.connect(app.addr).await.unwrap();
    let url = format!("ws://{}/api/v1/events/{event_id}/live", app.addr);
    let (mut socket, _) = tokio_tungstenite::client_async(url, stream).await.expect("upgrade");
    // Many changes of many seats: far more than the feed keeps for a viewer
    // and the connection can buffer.
    let seats: Vec<String> = (1..=20).flat_map(|r| (1..=50).map(move |n| format!("A-{r}-{n}"))).collect();
    let blocks = format!("/api/v1/admin/events/{event_id}/blocks");
    for _ in 0..100 {
        assert_eq!(staff.post(&blocks, serde_json::json!({ "seat_ids": seats, "reason": "churn" })).await.status, 200);
        let r = staff.send(staff.http.delete(format!("{}{blocks}", staff.base)).json(&serde_json::json!({ "seat_ids": seats }))).await;
        assert_eq!(r.status, 200);
    }
    // Now it reads: what was already on its way, then the close that says
    // "reconnect and resume", and no full map after the first.
    let mut snapshots = 0;
    let mut frames = 0;
    let close = loop {
        // The end of the stream, or an error: the server dropped the
        // connection (see below).
        let Some(message) = tokio::time::timeout(Duration::from_secs(20), socket.next()).await.expect("the socket answers") else {
            break None;
        };
        match message {
            Ok(Message::Text(text)) => {
                frames += 1;
                let frame: Value = serde_json::from_str(&text).unwrap();
                snapshots += usize::from(frame["type"] == "snapshot");
            }
            Ok(Message::Close(close)) => break Some(close.expect("a close frame with a code")),
            Ok(_) => {}
            // On a slow machine the viewer's window can stay full for longer
            // than the server waits to deliver the close: then the server
            // drops the connection, which is as good.
            Err(_) => break None,
        }
    };
    if let Some(close) = close {
        assert_eq!(u16::from(close.code), 4000, "{close:?}");
    }
    assert_eq!(snapshots, 1, "only the first frame is a whole map");
    assert!(frames < 200 * 8, "{frames} frames: it was dropped, not fed everything");
    let _ = socket.close(None).await;
    let _ = socket.flush().await;
}

/// The seat list is prepared once per revision: compressed as asked, named
/// by a strong ETag, 304 to a reader who has it, and new after a change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seat_list_is_served_as_prepared_bytes_with_an_etag() {
    use std::io::Read;
    let app = spawn_app().await;
    let event_id = app.event(2, 10, 300, 4).await;
    let http = reqwest::Client::new();
    let url = app.url(&format!("/api/v1/events/{event_id}/seats"));
    let get = |encoding: &'static str, etag: Option<String>| {
        let mut request = http.get(&url).header("accept-encoding", encoding);
        if let Some(tag) = etag {
            request = request.header("if-none-match", tag);
        }
        async move { request.send().await.expect("seats") }
    };
    let decoded = |encoding: Option<&str>, bytes: &[u8]| -> Value {
        let mut text = Vec::new();
        match encoding {
            Some("br") => brotli::Decompressor::new(bytes, 4096).read_to_end(&mut text).map(|_| ()).expect("brotli"),
            Some("gzip") => flate2::read::GzDecoder::new(bytes).read_to_end(&mut text).map(|_| ()).expect("gzip"),
            _ => text.extend_from_slice(bytes),
        }
        serde_json::from_slice(&text).expect("json")
    };
    let mut maps = Vec::new();
    let mut etags = Vec::new();
    for encoding in ["br, gzip", "gzip", "identity"] {
        let r = get(encoding, None).await;
        assert_eq!(r.status(), 200);
        let content_encoding = r.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(
            content_encoding.as_deref(),
            match encoding {
                "br, gzip" => Some("br"),
                "gzip" => Some("gzip"),
                _ => None,
            }
        );
        etags.push(r.headers()["etag"].to_str().unwrap().to_owned());
        maps.push(decoded(content_encoding.as_deref(), &r.bytes().await.unwrap()));
    }
    assert!(maps.windows(2).all(|w| w[0] == w[1]), "every encoding carries the same map");
    assert!(etags.iter().all(|t| t.starts_with('"')), "{etags:?}");
    assert!(etags[0] != etags[1] && etags[1] != etags[2] && etags[0] != etags[2], "different bytes, different tags: {etags:?}");
    assert_eq!(maps[0]["seats"].as_array().unwrap().len(), 20);

    let again = get("br", Some(etags[0].clone())).await;
    assert_eq!(again.status(), 304, "the reader has it");
    assert_eq!(get("gzip", Some(etags[2].clone())).await.status(), 304, "in any encoding");
    assert!(again.bytes().await.unwrap().is_empty());

    let fan = app.fan().await;
    assert_eq!(fan.hold(event_id, &["A-1-1"]).await.status, 201);
    let changed = eventually(5, "the hold to reach the map", || async {
        let r = get("gzip", Some(etags[0].clone())).await;
        (r.status() == 200).then_some(r)
    })
    .await;
    assert_ne!(changed.headers()["etag"].to_str().unwrap(), etags[0]);
    let map = decoded(Some("gzip"), &changed.bytes().await.unwrap());
    let seat = map["seats"].as_array().unwrap().iter().find(|s| s["seat_id"] == "A-1-1").cloned().unwrap();
    assert_eq!(seat["status"], "held");
    app.assert_invariants().await;
}
