//! Accounts: sign-up, password check and look-up. Passwords are hashed with
//! Argon2id on a blocking thread so a login never stalls the async runtime.
//!
//! The room also holds what an account needs around it: sign-in
//! throttling ([`sign_in`]), email verification by code
//! ([`verification`]) and the mail that carries codes and tickets ([`mail`]).

mod known;
pub mod mail;
pub mod outbox;
mod reads;
pub mod sign_in;
mod ticket_mail;
pub(crate) mod verification;

pub(crate) use known::{user_cache, AccountFeed, UserCache};
pub use known::{USER_FRESH, USER_TRUSTED};
pub(crate) use reads::{AccountReader, SessionReader};

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use frontrow_model::{NewStaffUser, Role, StaffAccount, User, UserChanges, UserId};
use std::sync::OnceLock;
use tokio::sync::Semaphore;
use uuid::Uuid;

use chrono::{DateTime, Utc};

use crate::changelog;
use crate::error::{EngineError, Result};
use crate::Engine;

/// Staff or admin, or 403.
pub fn require_staff(user: &User) -> Result<()> {
    if user.role.is_staff() {
        Ok(())
    } else {
        Err(EngineError::Forbidden)
    }
}

/// Admin, or 403: only admins manage staff accounts.
pub fn require_admin(user: &User) -> Result<()> {
    if user.role == Role::Admin {
        Ok(())
    } else {
        Err(EngineError::Forbidden)
    }
}

pub const MAX_EMAIL_LEN: usize = 254;
pub const MAX_NAME_LEN: usize = 200;
pub const MIN_PASSWORD_LEN: usize = 8;
pub const MAX_PASSWORD_LEN: usize = 1024;

pub struct NewUser<'a> {
    pub email: &'a str,
    pub password: &'a str,
    pub name: &'a str,
    pub role: Role,
}

fn validate(new: &NewUser<'_>) -> Result<()> {
    let email = new.email.trim();
    let well_formed = email.len() <= MAX_EMAIL_LEN
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.'));
    if !well_formed {
        return Err(EngineError::invalid("email is not a valid address"));
    }
    let password_len = new.password.chars().count();
    if password_len < MIN_PASSWORD_LEN {
        return Err(EngineError::invalid(format!("password must be at least {MIN_PASSWORD_LEN} characters")));
    }
    if password_len > MAX_PASSWORD_LEN {
        return Err(EngineError::invalid(format!("password must be at most {MAX_PASSWORD_LEN} characters")));
    }
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(EngineError::invalid(format!("name must be 1 to {MAX_NAME_LEN} characters, none of them control characters")));
    }
    Ok(())
}

/// What the change feed says of sessions kept in memory.
#[derive(Debug, Clone)]
pub enum SessionEnd {
    /// This session signed out.
    One(String),
    /// The feed was interrupted, so ends may have been missed: forget all.
    Unknown,
}

/// Argon2 is slow on purpose: at most one hash per core runs at a time, so a
/// flood of sign-ups or sign-ins waits here instead of occupying every
/// blocking thread the rest of the server needs.
async fn hashing<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    static PERMITS: OnceLock<Semaphore> = OnceLock::new();
    let permits = PERMITS.get_or_init(|| Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get())));
    let _permit = permits.acquire().await.map_err(|e| EngineError::Internal(format!("hashing permits: {e}")))?;
    metrics::gauge!("frontrow_password_hashes_running").increment(1.0);
    let done = tokio::task::spawn_blocking(work).await;
    metrics::gauge!("frontrow_password_hashes_running").decrement(1.0);
    done.map_err(|e| EngineError::Internal(format!("hashing task: {e}")))?
}

pub async fn hash_password(password: String) -> Result<String> {
    hashing(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| EngineError::Internal(format!("hashing password: {e}")))
    })
    .await
}

async fn verify_password(password: String, hash: String) -> Result<bool> {
    hashing(move || {
        let parsed = PasswordHash::new(&hash).map_err(|e| EngineError::Internal(format!("stored hash: {e}")))?;
        Ok(Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
    })
    .await
}

impl Engine {
    /// Creates an account (fans sign up; staff and admins are made by the
    /// CLI or an admin).
    pub async fn create_user(&self, new: NewUser<'_>) -> Result<User> {
        validate(&new)?;
        let password_hash = hash_password(new.password.to_owned()).await?;
        self.insert_user(new.email.trim(), new.name.trim(), &password_hash, new.role).await
    }

    /// Inserts a user whose password is already hashed (tests and bulk imports
    /// share one hash to skip the deliberate cost of Argon2).
    pub async fn insert_user(&self, email: &str, name: &str, password_hash: &str, role: Role) -> Result<User> {
        let user_id = Uuid::new_v4();
        let inserted = sqlx::query!(
            r#"INSERT INTO users (user_id, email, name, password_hash, role)
               VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT ((lower(email))) DO NOTHING"#,
            user_id,
            email,
            name,
            password_hash,
            role as Role,
        )
        .execute(self.pool())
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(EngineError::EmailTaken);
        }
        Ok(User { user_id: user_id.into(), email: email.to_owned(), name: name.to_owned(), role })
    }

    /// Many fans at once, for load runs: `{prefix}-{n}@load.test` for n in
    /// `0..count`, sharing one password hash, in one statement; existing
    /// addresses are left alone. Answers the accounts, new or not.
    pub async fn insert_fans(&self, prefix: &str, count: u32, password_hash: &str) -> Result<Vec<User>> {
        sqlx::query!(
            r#"INSERT INTO users (user_id, email, name, password_hash, role)
               SELECT gen_random_uuid(), format('%s-%s@load.test', $1::text, n), format('Fan %s', n), $3, 'fan'
                 FROM generate_series(0, $2::int - 1) n
               ON CONFLICT ((lower(email))) DO NOTHING"#,
            prefix,
            count as i32,
            password_hash,
        )
        .execute(self.pool())
        .await?;
        let rows = sqlx::query!(
            r#"SELECT u.user_id, u.email, u.name FROM users u
                WHERE lower(u.email) IN (SELECT format('%s-%s@load.test', lower($1::text), n) FROM generate_series(0, $2::int - 1) n)"#,
            prefix,
            count as i32,
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(|r| User { user_id: r.user_id.into(), email: r.email, name: r.name, role: Role::Fan }).collect())
    }

    /// The account, if the password is right (unknown emails cost the same
    /// as wrong passwords).
    pub(crate) async fn check_password(&self, email: &str, password: &str) -> Result<User> {
        const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Q8qkFQ9Z1q0a1bTn3Sx6y1T0wzqJQ3j0e2m6qE4wW1Y";
        if !could_sign_in(email, password) {
            return Err(EngineError::InvalidCredentials);
        }
        let row = sqlx::query!(
            r#"SELECT user_id, email, name, password_hash, role AS "role: Role"
               FROM users WHERE lower(email) = lower($1) AND disabled_at IS NULL"#,
            email.trim()
        )
        .fetch_optional(self.pool())
        .await?;
        let hash = row.as_ref().map_or(DUMMY_HASH.to_owned(), |r| r.password_hash.clone());
        let ok = verify_password(password.to_owned(), hash).await.unwrap_or(false);
        match row {
            Some(r) if ok => Ok(User { user_id: r.user_id.into(), email: r.email, name: r.name, role: r.role }),
            _ => Err(EngineError::InvalidCredentials),
        }
    }

    /// Disables the account `email` if its password is still `password` (a
    /// published default); answers whether it did.
    pub async fn disable_if_password(&self, email: &str, password: &str) -> Result<bool> {
        match self.check_password(email, password).await {
            Ok(user) => {
                sqlx::query!("UPDATE users SET disabled_at = now(), session_epoch = session_epoch + 1 WHERE user_id = $1", user.user_id.as_uuid())
                    .execute(self.pool())
                    .await?;
                self.forget_user(user.user_id).await;
                Ok(true)
            }
            Err(EngineError::InvalidCredentials) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The account behind a session (none once disabled), from memory while
    /// no change to it was announced (see [`known`]).
    pub async fn user(&self, user_id: UserId) -> Result<Option<User>> {
        Ok(self.account(user_id).await?.map(|(user, _)| user))
    }

    /// The account behind a session begun in session epoch `epoch`: none
    /// once disabled, or once its sessions were ended since (on every
    /// instance as soon as it hears of it).
    pub async fn session_user(&self, user_id: UserId, epoch: i32) -> Result<Option<User>> {
        Ok(self.account(user_id).await?.filter(|(_, current)| *current == epoch).map(|(user, _)| user))
    }

    /// The session epoch a session begun now belongs to (read afresh: a
    /// sign-in right after a password reset must not start in the old one).
    pub async fn session_epoch(&self, user_id: UserId) -> Result<i32> {
        Ok(sqlx::query_scalar!("SELECT session_epoch FROM users WHERE user_id = $1", user_id.as_uuid())
            .fetch_optional(self.pool())
            .await?
            .unwrap_or_default())
    }

    /// The stored record of the session `session_id` (as the session layer
    /// encoded it), if it exists and has not expired. Read with the other
    /// sessions asked for meanwhile.
    pub async fn stored_session(&self, session_id: String) -> Result<Option<Vec<u8>>> {
        let reader = SessionReader::running_in(&self.inner.session_reader, self.pool(), &Default::default());
        reader.submit((), session_id).await
    }

    /// Tells every instance that the session `session_id` ended (signed
    /// out): they forget what they kept of it.
    pub async fn announce_session_end(&self, session_id: &str) -> Result<()> {
        sqlx::query!("SELECT pg_notify($1, $2)", crate::notices::SESSIONS, session_id).execute(self.pool()).await?;
        Ok(())
    }
}

impl Engine {
    /// Staff and admin accounts (admins only).
    pub async fn staff_accounts(&self, admin: &User) -> Result<Vec<StaffAccount>> {
        require_admin(admin)?;
        Ok(sqlx::query!(
            r#"SELECT user_id, email, name, role AS "role: Role", disabled_at IS NOT NULL AS "disabled!",
                      created_at AS "created_at: DateTime<Utc>"
               FROM users WHERE role IN ('staff', 'admin') ORDER BY email"#
        )
        .fetch_all(self.pool())
        .await?
        .into_iter()
        .map(|r| StaffAccount {
            user_id: r.user_id.into(),
            email: r.email,
            name: r.name,
            role: r.role,
            disabled: r.disabled,
            created_at: r.created_at,
        })
        .collect())
    }

    /// Creates an account of any role (admins only).
    pub async fn create_account(&self, admin: &User, new: &NewStaffUser) -> Result<User> {
        require_admin(admin)?;
        let user = self.create_user(NewUser { email: &new.email, password: &new.password, name: &new.name, role: new.role }).await?;
        let mut conn = self.pool().acquire().await?;
        changelog::record(&mut conn, None, admin.user_id, "account_created", &[], &format!("{} ({:?})", user.email, user.role)).await?;
        Ok(user)
    }

    /// Disables or enables an account, or sets a new password (admins
    /// only). A disabled account cannot sign in; disabling it or setting its
    /// password ends its sessions (enabling it again does not revive them).
    pub async fn change_account(&self, admin: &User, user_id: UserId, changes: &UserChanges) -> Result<StaffAccount> {
        require_admin(admin)?;
        if user_id == admin.user_id && changes.disabled == Some(true) {
            return Err(EngineError::invalid("an admin cannot disable their own account"));
        }
        let password_hash = match &changes.password {
            Some(p) => {
                let n = p.chars().count();
                if !(MIN_PASSWORD_LEN..=MAX_PASSWORD_LEN).contains(&n) {
                    return Err(EngineError::invalid(format!("password must be {MIN_PASSWORD_LEN} to {MAX_PASSWORD_LEN} characters")));
                }
                Some(hash_password(p.clone()).await?)
            }
            None => None,
        };
        let mut tx = crate::db::begin(self.pool()).await?;
        let r = sqlx::query!(
            r#"UPDATE users SET disabled_at = CASE WHEN $2::bool IS NULL THEN disabled_at
                                                  WHEN $2 THEN coalesce(disabled_at, now()) ELSE NULL END,
                                password_hash = coalesce($3, password_hash),
                                session_epoch = session_epoch + CASE WHEN $2 IS TRUE OR $3 IS NOT NULL THEN 1 ELSE 0 END
                WHERE user_id = $1
            RETURNING user_id, email, name, role AS "role: Role", disabled_at IS NOT NULL AS "disabled!",
                      created_at AS "created_at: DateTime<Utc>""#,
            user_id.as_uuid(),
            changes.disabled,
            password_hash,
        )
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(EngineError::NotFound)?;
        let what = match (changes.disabled, changes.password.is_some()) {
            (Some(true), _) => "account_disabled",
            (Some(false), _) => "account_enabled",
            (None, true) => "password_reset",
            (None, false) => "account_changed",
        };
        changelog::record(&mut tx, None, admin.user_id, what, &[], &r.email).await?;
        tx.commit().await?;
        self.forget_user(user_id).await;
        Ok(StaffAccount { user_id: r.user_id.into(), email: r.email, name: r.name, role: r.role, disabled: r.disabled, created_at: r.created_at })
    }
}

/// No stored address is this long or holds a control character (which
/// PostgreSQL text could not even carry), and no password this long: such a
/// sign-in is refused without looking anything up.
pub(crate) fn could_sign_in(email: &str, password: &str) -> bool {
    email.len() <= MAX_EMAIL_LEN && password.len() <= MAX_PASSWORD_LEN * 4 && !email.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user<'a>(email: &'a str, name: &'a str) -> NewUser<'a> {
        NewUser { email, password: "long enough", name, role: Role::Fan }
    }

    #[test]
    fn addresses_and_names_with_control_characters_are_refused() {
        assert!(validate(&user("a@example.test", "Ann")).is_ok());
        assert!(validate(&user("a\u{0}b@example.test", "Ann")).is_err());
        assert!(validate(&user("a@example.test", "A\u{0}nn")).is_err());
        assert!(validate(&user("a@example.test", "   ")).is_err());
        assert!(validate(&user("a@localhost", "Ann")).is_err());
    }
}
