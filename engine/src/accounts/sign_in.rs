//! Sign-in throttling, shared by every instance through the database.
//!
//! An attempt on an account is counted before its password is checked, by
//! one statement that also refuses it while a back-off runs, so parallel
//! guesses cannot all slip past the count; a right password clears it. A
//! client showing a device cookie from an earlier sign-in to the account is
//! counted as that device instead: someone guessing at an account thus
//! shuts out only clients the account has never used, and its owner, on
//! their own device, still gets in. Failures per client address are
//! counted too (password spraying across many accounts).

use std::net::IpAddr;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{EngineError, Result};
use crate::Engine;

type HmacSha256 = Hmac<Sha256>;

const DEVICE_DOMAIN: &[u8] = b"frontrow device v1\n";

/// Failures allowed per account or device before the waits begin; each
/// further one waits twice as long as the last, up to [`LONGEST_WAIT_SECS`].
const ACCOUNT_FREE: i32 = 5;
/// Failures allowed per address: one address may be many people (an
/// office, a venue's wifi), so it gets more.
const ADDRESS_FREE: i32 = 50;
const LONGEST_WAIT_SECS: f64 = 15.0 * 60.0;
/// Counts quiet for this long are forgotten.
pub const FORGET_AFTER_SECS: f64 = 24.0 * 3600.0;

/// The address a request came from, as the server's limits key it (set on
/// each request by the server for the handlers that count by address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// Who is signing in, as far as the counts are concerned.
#[derive(Debug, Clone, Default)]
pub struct SignInClient {
    /// The client's address (None only for in-process callers).
    pub address: Option<IpAddr>,
    /// The device cookie the client sent, if any.
    pub device: Option<String>,
}

/// A successful sign-in: the account, and the device cookie to (re)set so
/// this client is known to the account next time.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user: frontrow_model::User,
    pub device: String,
}

fn device_mac(secret: &[u8], account: &str, nonce: &str) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(DEVICE_DOMAIN);
    mac.update(account.as_bytes());
    mac.update(b"\n");
    mac.update(nonce.as_bytes());
    mac
}

/// `nonce.mac`: proof that this client signed in to `account` before.
fn device_cookie(secret: &[u8], account: &str, nonce: &str) -> String {
    format!("{nonce}.{}", hex::encode(device_mac(secret, account, nonce).finalize().into_bytes()))
}

/// The device's nonce, when the cookie was issued for `account` by this
/// site (no secret configured: no device is known).
fn known_device<'a>(secret: &[u8], account: &str, cookie: &'a str) -> Option<&'a str> {
    if secret.is_empty() {
        return None;
    }
    let (nonce, tag) = cookie.split_once('.')?;
    let tag = hex::decode(tag).ok()?;
    device_mac(secret, account, nonce).verify_slice(&tag).ok()?;
    Some(nonce)
}

/// The account a sign-in names: its address as stored, compared without case.
pub(crate) fn account_of(email: &str) -> String {
    email.trim().to_lowercase()
}

impl Engine {
    /// Counts an attempt against an account or device before its password
    /// is checked, or refuses it with the seconds left of its back-off.
    pub(crate) async fn count_attempt(&self, key: &str, free: i32) -> Result<()> {
        let row = sqlx::query!(
            r#"WITH counted AS (
                   INSERT INTO sign_in_throttle AS t (key, failures, last_at) VALUES ($1, 1, now())
                   ON CONFLICT (key) DO UPDATE
                      SET failures = CASE WHEN t.last_at < now() - make_interval(secs => $4) THEN 1 ELSE t.failures + 1 END,
                          last_at = now()
                    WHERE t.failures < $2
                       OR t.last_at + make_interval(secs => least(power(2, t.failures - $2), $3)) <= now()
                   RETURNING failures)
               SELECT EXISTS (SELECT 1 FROM counted) AS "counted!",
                      (SELECT ceil(extract(epoch FROM s.last_at + make_interval(secs => least(power(2, s.failures - $2), $3)) - now()))::bigint
                         FROM sign_in_throttle s WHERE s.key = $1) AS "wait_secs?""#,
            key,
            free,
            LONGEST_WAIT_SECS,
            FORGET_AFTER_SECS,
        )
        .fetch_one(self.pool())
        .await?;
        if row.counted {
            return Ok(());
        }
        metrics::counter!("frontrow_sign_ins_throttled_total").increment(1);
        let wait = row.wait_secs.unwrap_or(1).max(1);
        Err(EngineError::TooManyAttempts { retry_after: u64::try_from(wait).unwrap_or(1) })
    }

    pub(crate) async fn clear_attempts(&self, key: &str) -> Result<()> {
        sqlx::query!("DELETE FROM sign_in_throttle WHERE key = $1", key).execute(self.pool()).await?;
        Ok(())
    }

    /// Refuses a client address in its back-off. An address is counted only
    /// by its failures, after the fact: many fans behind one address (a
    /// venue's wifi, a carrier's NAT) sign in at once at an on-sale, and
    /// their attempts in flight must not shut each other out.
    pub(crate) async fn check_address(&self, key: &str) -> Result<()> {
        let wait = sqlx::query_scalar!(
            r#"SELECT ceil(extract(epoch FROM last_at + make_interval(secs => least(power(2, failures - $2), $3)) - now()))::bigint AS "wait_secs!"
                 FROM sign_in_throttle
                WHERE key = $1 AND failures >= $2 AND last_at >= now() - make_interval(secs => $4)
                  AND last_at + make_interval(secs => least(power(2, failures - $2), $3)) > now()"#,
            key,
            ADDRESS_FREE,
            LONGEST_WAIT_SECS,
            FORGET_AFTER_SECS,
        )
        .fetch_optional(self.pool())
        .await?;
        match wait {
            None => Ok(()),
            Some(wait) => {
                metrics::counter!("frontrow_sign_ins_throttled_total").increment(1);
                Err(EngineError::TooManyAttempts { retry_after: u64::try_from(wait.max(1)).unwrap_or(1) })
            }
        }
    }

    pub(crate) async fn count_address_failure(&self, key: &str) -> Result<()> {
        sqlx::query!(
            r#"INSERT INTO sign_in_throttle AS t (key, failures, last_at) VALUES ($1, 1, now())
               ON CONFLICT (key) DO UPDATE
                  SET failures = CASE WHEN t.last_at < now() - make_interval(secs => $2) THEN 1 ELSE t.failures + 1 END,
                      last_at = now()"#,
            key,
            FORGET_AFTER_SECS,
        )
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Checks a password, counting the attempt (see the module doc).
    /// Unknown emails are counted and cost the same as wrong passwords, so
    /// neither the answer nor its time tells which accounts exist.
    pub async fn authenticate(&self, email: &str, password: &str, client: &SignInClient) -> Result<SignedIn> {
        let account = account_of(email);
        let secret = &self.settings().admission_secret;
        let device = client.device.as_deref().and_then(|cookie| known_device(secret, &account, cookie));
        // A device the account knows answers for itself alone: neither the
        // account's back-off nor its address's holds it up.
        let address = client.address.filter(|_| device.is_none()).map(|a| format!("address:{a}"));
        if let Some(address) = &address {
            self.check_address(address).await?;
        }
        if !crate::accounts::could_sign_in(email, password) {
            if let Some(address) = &address {
                self.count_address_failure(address).await?;
            }
            return Err(EngineError::InvalidCredentials);
        }
        let key = match device {
            Some(nonce) => format!("device:{nonce}"),
            None => format!("account:{account}"),
        };
        self.count_attempt(&key, ACCOUNT_FREE).await?;
        let user = match self.check_password(email, password).await {
            Ok(user) => user,
            Err(e) => {
                if let (EngineError::InvalidCredentials, Some(address)) = (&e, &address) {
                    self.count_address_failure(address).await?;
                }
                return Err(e);
            }
        };
        self.clear_attempts(&key).await?;
        let nonce = device.map_or_else(crate::tokens::device_nonce, str::to_owned);
        Ok(SignedIn { user, device: device_cookie(secret, &account, &nonce) })
    }

    /// Forgets counts that have been quiet for a day (run now and then).
    pub async fn forget_sign_in_attempts(&self) -> Result<u64> {
        let done = sqlx::query!("DELETE FROM sign_in_throttle WHERE last_at < now() - make_interval(secs => $1)", FORGET_AFTER_SECS)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_cookie_is_known_only_to_its_account_and_site() {
        let cookie = device_cookie(b"site secret", "fan@example.test", "n1");
        assert_eq!(known_device(b"site secret", "fan@example.test", &cookie), Some("n1"));
        assert_eq!(known_device(b"site secret", "other@example.test", &cookie), None);
        assert_eq!(known_device(b"other secret", "fan@example.test", &cookie), None);
        assert_eq!(known_device(b"", "fan@example.test", &device_cookie(b"", "fan@example.test", "n1")), None);
        assert_eq!(known_device(b"site secret", "fan@example.test", "n1.00"), None);
        assert_eq!(known_device(b"site secret", "fan@example.test", "garbage"), None);
    }
}
