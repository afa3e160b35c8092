//! The mail outbox: mail to buyers is queued by the database in the
//! transaction that confirms a booking or records a refund (the triggers of
//! migration `mail_outbox`), and sent from here, with retries.
//!
//! A sender claims due mail with `FOR UPDATE SKIP LOCKED` and moves each
//! one's due time on by a lease before sending, so instances side by side
//! never send the same mail at once, and a sender that dies mid-send leaves
//! it due again when the lease ends. A mail is queued once for each thing
//! that happened to a booking (the outbox's unique key); it can be sent a
//! second time only if a sender dies between the mail server's acceptance
//! and marking it sent, and then carries the same Message-ID.

use chrono::{DateTime, Utc};
use frontrow_model::{BookingId, BookingMail, MailKind, MailState, User};
use uuid::Uuid;

use super::require_staff;
use super::ticket_mail;
use crate::error::Result;
use crate::Engine;

/// How long a claimed mail is left to its sender before it is due again.
const SEND_LEASE_SECS: f64 = 60.0;
/// Attempts before a mail is given up as failed (about 17 minutes of
/// back-off in all).
const MAX_ATTEMPTS: i32 = 10;

/// The pause after `attempts` failed attempts: 2, 4, 8 ... seconds, at
/// most ten minutes.
pub fn back_off_secs(attempts: i32) -> f64 {
    2f64.powi(attempts.clamp(1, 10)).min(600.0)
}

/// A mail claimed from the outbox.
struct Claimed {
    mail_id: i64,
    /// A booking's mail, or (none) a waiting-list offer's (`entry_id`).
    booking_id: Option<Uuid>,
    entry_id: Option<Uuid>,
    kind: MailKind,
    about: String,
    attempts: i32,
}

impl Engine {
    /// Sends up to `limit` mails that are due, one claim at a time (a lease
    /// covers one send, not a batch); returns how many went out. `site` is
    /// the address links in the mail point to.
    pub async fn send_due_mail(&self, limit: u32, site: &str) -> Result<u32> {
        // A mail whose every attempt stopped its sender (a crash, a hang) is
        // given up, not claimed for ever.
        sqlx::query!(
            r#"UPDATE mail_outbox SET state = 'failed', last_error = coalesce(last_error, 'no attempt finished')
                WHERE state = 'queued' AND attempts >= $1 AND next_attempt_at <= now()"#,
            MAX_ATTEMPTS
        )
        .execute(self.pool())
        .await?;
        let mut sent = 0;
        for _ in 0..limit {
            let claimed = sqlx::query_as!(
                Claimed,
                r#"UPDATE mail_outbox m SET attempts = m.attempts + 1, next_attempt_at = now() + make_interval(secs => $2)
                    WHERE m.mail_id = (SELECT o.mail_id FROM mail_outbox o
                                        WHERE o.state = 'queued' AND o.next_attempt_at <= now() AND o.attempts < $1
                                        ORDER BY o.mail_id LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING m.mail_id, m.booking_id, m.entry_id, m.kind AS "kind: MailKind", m.about, m.attempts"#,
                MAX_ATTEMPTS,
                SEND_LEASE_SECS,
            )
            .fetch_optional(self.pool())
            .await?;
            let Some(mail) = claimed else { break };
            if self.deliver(&mail, site).await? {
                sent += 1;
            }
        }
        Ok(sent)
    }

    /// Composes and sends one claimed mail, and records how that went. The
    /// record is fenced by the claim's attempt number: a sender whose lease
    /// ran out (another has claimed the mail since) cannot set it back.
    async fn deliver(&self, claimed: &Claimed, site: &str) -> Result<bool> {
        let composed = match (claimed.booking_id, claimed.entry_id) {
            (Some(booking_id), _) => ticket_mail::compose(self.pool(), BookingId::from(booking_id), claimed.kind, &claimed.about, site).await,
            (None, Some(entry_id)) => ticket_mail::offer_mail(self.pool(), entry_id, site).await,
            (None, None) => Err(crate::error::EngineError::Internal(format!("mail {} is about nothing", claimed.mail_id))),
        };
        let about = claimed.booking_id.or(claimed.entry_id).unwrap_or_default();
        let outcome = match composed {
            Ok(Some(mut mail)) => {
                mail.message_id = Some(format!("<mail-{}-{}@frontrow>", claimed.mail_id, about.simple()));
                self.mailer().send(&mail).await.map(|()| mail.to)
            }
            Ok(None) => {
                // Refunded or cancelled before it went out: no ticket to send;
                // or the offer was taken up or over already.
                let why = match claimed.kind {
                    MailKind::WaitlistOffer => "not sent: the offer is no longer open",
                    _ => "not sent: no ticket of the booking is valid any more",
                };
                sqlx::query!(
                    r#"UPDATE mail_outbox SET state = 'failed', last_error = $3
                        WHERE mail_id = $1 AND attempts = $2 AND state = 'queued'"#,
                    claimed.mail_id,
                    claimed.attempts,
                    why
                )
                .execute(self.pool())
                .await?;
                return Ok(false);
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(recipient) => {
                sqlx::query!(
                    "UPDATE mail_outbox SET state = 'sent', sent_at = now(), recipient = $2, last_error = NULL WHERE mail_id = $1 AND state <> 'sent'",
                    claimed.mail_id,
                    recipient
                )
                .execute(self.pool())
                .await?;
                metrics::counter!("frontrow_mail_sent_total").increment(1);
                Ok(true)
            }
            Err(e) => {
                let error = e.to_string();
                tracing::warn!(mail_id = claimed.mail_id, attempts = claimed.attempts, error = %error, "a mail could not be sent; it will be tried again");
                let state = if claimed.attempts >= MAX_ATTEMPTS { MailState::Failed } else { MailState::Queued };
                sqlx::query!(
                    r#"UPDATE mail_outbox SET state = $3, last_error = $4, next_attempt_at = now() + make_interval(secs => $5)
                        WHERE mail_id = $1 AND attempts = $2 AND state = 'queued'"#,
                    claimed.mail_id,
                    claimed.attempts,
                    state as MailState,
                    error,
                    back_off_secs(claimed.attempts),
                )
                .execute(self.pool())
                .await?;
                metrics::counter!("frontrow_mail_failures_total").increment(1);
                Ok(false)
            }
        }
    }

    /// The mails about a booking, oldest first (staff).
    pub async fn booking_mails(&self, staff: &User, booking_id: BookingId) -> Result<Vec<BookingMail>> {
        require_staff(staff)?;
        // An unknown booking is 404, not an empty list.
        ticket_mail::recipient(&mut *self.pool().acquire().await?, booking_id).await?;
        Ok(sqlx::query_as!(
            BookingMail,
            r#"SELECT mail_id, kind AS "kind: MailKind", state AS "state: MailState", attempts, recipient, last_error,
                      created_at AS "created_at: DateTime<Utc>", sent_at AS "sent_at: DateTime<Utc>"
                 FROM mail_outbox WHERE booking_id = $1 ORDER BY mail_id"#,
            booking_id.as_uuid()
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Queues the booking's tickets to its buyer once more and sends them
    /// now; a failure leaves the mail queued for the sender to retry.
    /// Returns the address it goes to.
    pub async fn resend_tickets(&self, staff: &User, booking_id: BookingId, site: &str) -> Result<String> {
        require_staff(staff)?;
        let booking = self.booking_for(staff, booking_id).await?;
        let mut tx = crate::db::begin(self.pool()).await?;
        // A counter sale without an address: the seller is not the buyer.
        let to = ticket_mail::recipient(&mut tx, booking_id).await?;
        let claimed = sqlx::query_as!(
            Claimed,
            r#"INSERT INTO mail_outbox (booking_id, kind, about, attempts, next_attempt_at)
               VALUES ($1, 'tickets', $2, 1, now() + make_interval(secs => $3))
            RETURNING mail_id, booking_id, entry_id, kind AS "kind: MailKind", about, attempts"#,
            booking_id.as_uuid(),
            format!("resend:{}", Uuid::new_v4()),
            SEND_LEASE_SECS,
        )
        .fetch_one(&mut *tx)
        .await?;
        crate::changelog::record(&mut tx, Some(booking.event_id), staff.user_id, "tickets_resent", &booking.seat_ids, &to).await?;
        tx.commit().await?;
        self.deliver(&claimed, site).await?;
        Ok(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_longer_each_time_up_to_ten_minutes() {
        assert_eq!(back_off_secs(1), 2.0);
        assert_eq!(back_off_secs(3), 8.0);
        assert_eq!(back_off_secs(9), 512.0);
        assert_eq!(back_off_secs(10), 600.0);
        assert_eq!(back_off_secs(40), 600.0);
        let total: f64 = (1..MAX_ATTEMPTS).map(back_off_secs).sum();
        assert!(total > 600.0 && total < 1800.0, "{total}");
    }
}
