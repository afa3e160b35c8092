//! Tickets in the inbox: every confirmed booking mails its buyer once, with
//! a PDF page per ticket and a calendar entry, through an outbox written in
//! the confirming transaction; refunds mail too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use futures::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

fn outbox_file() -> PathBuf {
    std::env::temp_dir().join(format!("frontrow-outbox-{}.jsonl", Uuid::new_v4().simple()))
}

/// The mails the file outbox holds for `to`, oldest first.
fn mails_to(outbox: &Path, to: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(outbox).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|m| m["to"] == json!(to)).collect()
}

fn attachment(mail: &Value, filename: &str) -> Vec<u8> {
    let file = mail["attachments"].as_array().and_then(|files| files.iter().find(|f| f["filename"] == json!(filename))).cloned();
    let content = file.as_ref().and_then(|f| f["content"].as_str()).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.decode(content).unwrap_or_default()
}

fn pdf_pages(pdf: &[u8]) -> usize {
    let text = String::from_utf8_lossy(pdf);
    text.matches("/Type /Page").count() - text.matches("/Type /Pages").count()
}

async fn email_of(fan: &Client) -> String {
    fan.get("/api/v1/me").await.body["email"].as_str().expect("an email").to_owned()
}

async fn post_key(c: &Client, path: &str, body: Value) -> Reply {
    c.send(c.http.post(format!("{}{path}", c.base)).header("idempotency-key", Uuid::new_v4().to_string()).json(&body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_booking_mails_its_tickets_once_though_the_server_stops_before_sending_and_two_senders_race() {
    let (database_url, _database) = owned_database().await;
    let outbox = outbox_file();
    // The first server confirms bookings but never gets round to sending.
    let first = {
        let outbox = outbox.clone();
        spawn_app_on(&database_url, move |s| {
            s.mail_outbox = Some(outbox);
            s.mail_interval_ms = 3_600_000;
        })
        .await
    };
    let event = first.event(2, 6, 300, 4).await;
    let fans = first.fans(5).await;
    let mut bought = Vec::new();
    for (n, fan) in fans.iter().enumerate() {
        let seats = [format!("A-1-{}", n + 1), format!("A-2-{}", n + 1)];
        let booking = buy(fan, event, &[&seats[0], &seats[1]]).await;
        bought.push((email_of(fan).await, booking));
    }
    // Give the first tick of its sender time to have passed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM mail_outbox WHERE state = 'queued' AND kind = 'tickets'")
        .fetch_one(&first.pool)
        .await
        .expect("count");
    assert_eq!(queued, 5, "each booking queued its mail in the transaction that confirmed it");
    assert!(bought.iter().all(|(to, _)| mails_to(&outbox, to).is_empty()), "nothing sent yet");
    first.stop().await;

    // Two servers come up on the same database and both send.
    let spawn = || {
        let outbox = outbox.clone();
        spawn_app_on(&database_url, move |s| s.mail_outbox = Some(outbox))
    };
    let (second, third) = tokio::join!(spawn(), spawn());
    let all_sent =
        eventually(20, "every booking's mail sent", || async { bought.iter().all(|(to, _)| !mails_to(&outbox, to).is_empty()).then_some(()) });
    all_sent.await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    for (to, booking) in &bought {
        let mails = mails_to(&outbox, to);
        assert_eq!(mails.len(), 1, "one mail for {to}");
        let mail = &mails[0];
        assert!(mail["subject"].as_str().unwrap_or_default().starts_with("Your tickets for"));
        let body = mail["body"].as_str().unwrap_or_default();
        for ticket in booking["tickets"].as_array().into_iter().flatten() {
            assert!(body.contains(ticket["code"].as_str().unwrap_or("?")), "the body lists every ticket code");
        }
        assert!(body.contains(&format!("/bookings/{}", booking["booking_id"].as_str().unwrap_or_default())));
        let pdf = attachment(mail, "tickets.pdf");
        assert!(pdf.starts_with(b"%PDF-"));
        assert_eq!(pdf_pages(&pdf), 2, "a page per ticket");
        let ics = String::from_utf8(attachment(mail, "event.ics")).unwrap_or_default();
        assert!(ics.contains("BEGIN:VEVENT") && ics.contains("DTSTART:"), "{ics}");
    }
    let sent: Vec<(String, Option<String>, i32)> =
        sqlx::query_as("SELECT state::text, recipient, attempts FROM mail_outbox ORDER BY mail_id").fetch_all(&second.pool).await.expect("rows");
    assert_eq!(sent.len(), 5);
    assert!(sent.iter().all(|(state, to, attempts)| state == "sent" && to.is_some() && *attempts == 1), "{sent:?}");

    // Staff see the booking's mail, re-send it, and a refund mails its own.
    let staff = second.staff().await;
    let (to, booking) = &bought[0];
    let booking_id = booking["booking_id"].as_str().unwrap_or_default();
    let listed = staff.get(&format!("/api/v1/admin/bookings/{booking_id}/mails")).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["mails"][0]["state"], json!("sent"));
    assert_eq!(listed.body["mails"][0]["kind"], json!("tickets"));
    let resent = staff.post(&format!("/api/v1/admin/bookings/{booking_id}/resend"), Value::Null).await;
    assert_eq!(resent.status, 202, "{}", resent.body);
    assert_eq!(mails_to(&outbox, to).len(), 2, "a re-send goes out at once");
    let ticket = booking["tickets"][0]["ticket_id"].as_str().unwrap_or_default();
    let refunded =
        post_key(&staff, &format!("/api/v1/admin/bookings/{booking_id}/refund"), json!({ "ticket_ids": [ticket], "reason": "cannot come" })).await;
    assert_eq!(refunded.status, 200, "{}", refunded.body);
    eventually(10, "the refund mail", || async { (mails_to(&outbox, to).len() == 3).then_some(()) }).await;
    let refund_mail = mails_to(&outbox, to).pop().unwrap_or_default();
    assert_eq!(refund_mail["subject"].as_str().map(|s| s.starts_with("Refund for")), Some(true));
    assert!(refund_mail["body"].as_str().unwrap_or_default().contains("Refunded: €"));
    let kinds = staff.get(&format!("/api/v1/admin/bookings/{booking_id}/mails")).await.body["mails"].clone();
    assert_eq!(
        kinds.as_array().map(|m| m.iter().map(|m| m["kind"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("tickets"), json!("tickets"), json!("refund")])
    );

    // A counter sale mails the address given, and without one mails nobody.
    let with_address = post_key(
        &staff,
        &format!("/api/v1/admin/events/{event}/counter-sales"),
        json!({ "seat_ids": ["A-1-6"], "payment": "cash", "customer_name": "Walk In", "customer_email": "walk-in@example.test" }),
    )
    .await;
    assert_eq!(with_address.status, 201, "{}", with_address.body);
    let without = post_key(
        &staff,
        &format!("/api/v1/admin/events/{event}/counter-sales"),
        json!({ "seat_ids": ["A-2-6"], "payment": "cash", "customer_name": "No Mail" }),
    )
    .await;
    assert_eq!(without.status, 201, "{}", without.body);
    eventually(10, "the counter sale's mail", || async { (mails_to(&outbox, "walk-in@example.test").len() == 1).then_some(()) }).await;
    let unmailed: i64 = sqlx::query_scalar("SELECT count(*) FROM mail_outbox WHERE booking_id = $1")
        .bind(without.body["booking_id"].as_str().and_then(|id| id.parse::<Uuid>().ok()))
        .fetch_one(&second.pool)
        .await
        .expect("count");
    assert_eq!(unmailed, 0);
    let nobody = without.body["booking_id"].as_str().unwrap_or_default();
    assert_error(
        "re-sending with nobody to mail",
        &staff.post(&format!("/api/v1/admin/bookings/{nobody}/resend"), Value::Null).await,
        422,
        "invalid_input",
    );
    assert_error("mails of no booking", &staff.get(&format!("/api/v1/admin/bookings/{}/mails", Uuid::new_v4())).await, 404, "not_found");
    assert_eq!(pdf_pages(&attachment(&mails_to(&outbox, "walk-in@example.test")[0], "tickets.pdf")), 1);
    // Printed by staff, the tickets still name their holder.
    let walk_in = with_address.body["booking_id"].as_str().unwrap_or_default();
    let printed = staff.http.get(format!("{}/bookings/{walk_in}/print", staff.base)).send().await.expect("print");
    assert!(printed.text().await.unwrap_or_default().contains("Walk In"), "the holder's name, not the viewer's");

    second.assert_invariants().await;
    join_all([second.stop(), third.stop()]).await;
    let _ = std::fs::remove_file(&outbox);
}

#[tokio::test]
async fn a_mail_that_cannot_be_sent_is_retried_later_and_staff_see_why() {
    // An outbox file in a directory that does not exist: every send fails.
    let broken = std::env::temp_dir().join(format!("no-such-dir-{}", Uuid::new_v4().simple())).join("outbox.jsonl");
    let app = spawn_app_with({
        let broken = broken.clone();
        move |s| s.mail_outbox = Some(broken)
    })
    .await;
    let event = app.event(1, 4, 300, 4).await;
    let fan = app.fan().await;
    let booking = buy(&fan, event, &["A-1-1"]).await;
    let booking_id = booking["booking_id"].as_str().unwrap_or_default().to_owned();
    let staff = app.staff().await;
    let failed_once = eventually(10, "a failed attempt recorded", || async {
        let mails = staff.get(&format!("/api/v1/admin/bookings/{booking_id}/mails")).await.body["mails"].clone();
        (mails[0]["last_error"].is_string()).then_some(mails)
    })
    .await;
    assert_eq!(failed_once[0]["state"], json!("queued"), "still to be retried");
    assert_eq!(failed_once[0]["attempts"], json!(1));
    let next: f64 = sqlx::query_scalar("SELECT extract(epoch FROM next_attempt_at - now())::float8 FROM mail_outbox")
        .fetch_one(&app.pool)
        .await
        .expect("next attempt");
    assert!(next > 0.5, "the next attempt waits ({next} s)");
    // Once the outbox can be written, the retry delivers it.
    std::fs::create_dir_all(broken.parent().unwrap_or(Path::new("."))).expect("dir");
    sqlx::query("UPDATE mail_outbox SET next_attempt_at = now()").execute(&app.pool).await.expect("due now");
    let to = email_of(&fan).await;
    eventually(10, "the retried mail", || async { (mails_to(&broken, &to).len() == 1).then_some(()) }).await;
    let (_, page) = {
        let r = staff.http.get(format!("{}/admin/bookings/{booking_id}", staff.base)).send().await.expect("page");
        (r.status(), r.text().await.unwrap_or_default())
    };
    assert!(page.contains(r#"id="booking-mails""#) && page.contains(">sent<"), "the staff page lists the mail as sent");
    // Calling the event off mails every buyer what they get back.
    let cancelled = staff.post(&format!("/api/v1/admin/events/{event}/cancel"), json!({ "reason": "the venue flooded" })).await;
    assert_eq!(cancelled.status, 202, "{}", cancelled.body);
    let called_off = eventually(10, "the cancellation mail", || async { mails_to(&broken, &to).get(1).cloned() }).await;
    assert!(called_off["subject"].as_str().unwrap_or_default().contains("is cancelled"), "{called_off}");
    assert!(called_off["body"].as_str().unwrap_or_default().contains("Refunded: €"));
    let _ = std::fs::remove_dir_all(broken.parent().unwrap_or(Path::new("/nonexistent")));
    app.stop().await;
}
