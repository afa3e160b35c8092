//! Email verification by one-time code: a six-digit code, mailed, valid for
//! a quarter of an hour, kept only as a hash; five wrong tries and five
//! codes an hour per account. Events may
//! ask for a verified address before a fan joins their waiting room.

use std::time::Duration;

use chrono::{DateTime, Utc};
use frontrow_model::{User, UserId};
use rand::Rng;

use crate::accounts::mail::Mail;
use crate::error::{EngineError, Result};
use crate::tokens::sha256_hex;
use crate::Engine;

const CODE_VALID: Duration = Duration::from_secs(15 * 60);
/// Wrong tries allowed per account per window, whatever codes were sent.
const TRIES: i32 = 5;
/// A new code is sent at most this often per account,
const RESEND_AFTER: Duration = Duration::from_secs(30);
/// How long a fan's request waits for the mail server to take the code.
const MAIL_WAIT: Duration = Duration::from_secs(5);
/// and at most this many per window (one address has one account, so this
/// caps the mails an address gets too).
const CODES_PER_WINDOW: i32 = 5;
const WINDOW: Duration = Duration::from_secs(3600);

fn code_hash(user_id: UserId, code: &str) -> String {
    sha256_hex(format!("{user_id}:{code}").as_bytes())
}

impl Engine {
    /// Whether the account's email address is verified.
    pub async fn email_verified(&self, user_id: UserId) -> Result<bool> {
        Ok(sqlx::query_scalar!(r#"SELECT email_verified_at IS NOT NULL AS "verified!" FROM users WHERE user_id = $1"#, user_id.as_uuid())
            .fetch_optional(self.pool())
            .await?
            .unwrap_or(false))
    }

    /// Mails the fan a fresh code (replacing any earlier one). Answers
    /// `false` when the address is verified already (nothing is sent).
    pub async fn send_email_code(&self, fan: &User) -> Result<bool> {
        if self.email_verified(fan.user_id).await? {
            return Ok(false);
        }
        let code = format!("{:06}", rand::thread_rng().gen_range(0..1_000_000));
        // Within an hour a resent code keeps the wrong tries made so far, and
        // only so many codes go out: guesses stay a handful an hour however
        // often a new code is asked for. A new hour starts both afresh.
        let sent = sqlx::query!(
            r#"WITH sent AS (
                   INSERT INTO email_codes AS c (user_id, code_hash, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
                   ON CONFLICT (user_id) DO UPDATE
                      SET code_hash = $2, expires_at = now() + make_interval(secs => $3), sent_at = now(),
                          window_started_at = CASE WHEN c.window_started_at <= now() - make_interval(secs => $7) THEN now() ELSE c.window_started_at END,
                          sent_in_window = CASE WHEN c.window_started_at <= now() - make_interval(secs => $7) THEN 1 ELSE c.sent_in_window + 1 END,
                          attempts = CASE WHEN c.window_started_at <= now() - make_interval(secs => $7) THEN 0 ELSE c.attempts END
                    WHERE c.sent_at <= now() - make_interval(secs => $4)
                      AND (c.window_started_at <= now() - make_interval(secs => $7) OR (c.sent_in_window < $5 AND c.attempts < $6))
                   RETURNING c.user_id)
               SELECT EXISTS (SELECT 1 FROM sent) AS "sent!",
                      (SELECT ceil(extract(epoch FROM
                                 CASE WHEN c.sent_in_window >= $5 OR c.attempts >= $6 THEN c.window_started_at + make_interval(secs => $7)
                                      ELSE c.sent_at + make_interval(secs => $4) END - now()))::bigint
                         FROM email_codes c WHERE c.user_id = $1) AS "wait_secs?""#,
            fan.user_id.as_uuid(),
            code_hash(fan.user_id, &code),
            CODE_VALID.as_secs_f64(),
            RESEND_AFTER.as_secs_f64(),
            CODES_PER_WINDOW,
            TRIES,
            WINDOW.as_secs_f64(),
        )
        .fetch_one(self.pool())
        .await?;
        if !sent.sent {
            let wait = sent.wait_secs.unwrap_or(1).max(1);
            return Err(EngineError::TooManyAttempts { retry_after: u64::try_from(wait).unwrap_or(1) });
        }
        let mail = Mail::text(
            fan.email.clone(),
            // Not the code: subjects are logged, and a logged code verifies the
            // address for anyone who reads the log.
            "Your frontrow verification code".to_owned(),
            format!("Hello {},\n\nyour code is {code}. Enter it on frontrow within 15 minutes to verify this address.\n\nIf you did not ask for it, ignore this message.\n", fan.name),
        );
        // Sent now or not at all: a fan waits on this page. A mail server
        // that fails or hangs costs the fan neither the wait before asking
        // again nor one of the hour's codes, and answers a quick 503.
        let sent = match tokio::time::timeout(MAIL_WAIT, self.mailer().send(&mail)).await {
            Ok(result) => result,
            Err(_) => Err(EngineError::MailUnavailable(format!("no answer within {MAIL_WAIT:?}"))),
        };
        if let Err(e) = sent {
            sqlx::query!(
                "UPDATE email_codes SET sent_at = sent_at - make_interval(secs => $2), sent_in_window = greatest(sent_in_window - 1, 0) WHERE user_id = $1",
                fan.user_id.as_uuid(),
                RESEND_AFTER.as_secs_f64(),
            )
            .execute(self.pool())
            .await?;
            return Err(e);
        }
        Ok(true)
    }

    /// Checks the code the fan typed; right, the address is verified.
    pub async fn confirm_email_code(&self, fan: &User, code: &str) -> Result<()> {
        let code = code.trim();
        if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
            return Err(EngineError::invalid("the code is the six digits from the email"));
        }
        let mut tx = crate::db::begin(self.pool()).await?;
        let pending = sqlx::query!(
            r#"SELECT code_hash, attempts, expires_at AS "expires_at: DateTime<Utc>" FROM email_codes WHERE user_id = $1 FOR UPDATE"#,
            fan.user_id.as_uuid()
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(pending) = pending.filter(|p| p.expires_at > Utc::now() && p.attempts < TRIES) else {
            return Err(EngineError::WrongCode("no code is waiting (or it expired, or this hour's tries are used up): ask for a new one"));
        };
        if pending.code_hash != code_hash(fan.user_id, code) {
            sqlx::query!("UPDATE email_codes SET attempts = attempts + 1 WHERE user_id = $1", fan.user_id.as_uuid()).execute(&mut *tx).await?;
            tx.commit().await?;
            return Err(EngineError::WrongCode("that is not the code we sent"));
        }
        sqlx::query!("UPDATE users SET email_verified_at = now() WHERE user_id = $1", fan.user_id.as_uuid()).execute(&mut *tx).await?;
        sqlx::query!("DELETE FROM email_codes WHERE user_id = $1", fan.user_id.as_uuid()).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }
}
