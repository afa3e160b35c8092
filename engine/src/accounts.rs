//! Accounts: sign-up, password check and look-up. Passwords are hashed with
//! Argon2id on a blocking thread so a login never stalls the async runtime.

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use uuid::Uuid;

use frontrow_model::{Role, User};

use crate::error::{EngineError, Result};
use crate::Engine;

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

pub async fn hash_password(password: String) -> Result<String> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| EngineError::Internal(format!("hashing password: {e}")))
    })
    .await
    .map_err(|e| EngineError::Internal(format!("hashing task: {e}")))?
}

async fn verify_password(password: String, hash: String) -> Result<bool> {
    tokio::task::spawn_blocking(move || {
        let parsed = PasswordHash::new(&hash).map_err(|e| EngineError::Internal(format!("stored hash: {e}")))?;
        Ok(Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
    })
    .await
    .map_err(|e| EngineError::Internal(format!("verify task: {e}")))?
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
        Ok(User { user_id, email: email.to_owned(), name: name.to_owned(), role })
    }

    /// Checks a password. Unknown emails cost the same as wrong passwords, so the
    /// answer time does not reveal which accounts exist.
    pub async fn authenticate(&self, email: &str, password: &str) -> Result<User> {
        const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Q8qkFQ9Z1q0a1bTn3Sx6y1T0wzqJQ3j0e2m6qE4wW1Y";
        // No stored address is this long or holds a control character (which
        // PostgreSQL text could not even carry): refuse without looking.
        if email.len() > MAX_EMAIL_LEN || password.len() > MAX_PASSWORD_LEN * 4 || email.chars().any(char::is_control) {
            return Err(EngineError::InvalidCredentials);
        }
        let row = sqlx::query!(
            r#"SELECT user_id, email, name, password_hash, role AS "role: Role"
               FROM users WHERE lower(email) = lower($1)"#,
            email.trim()
        )
        .fetch_optional(self.pool())
        .await?;
        let hash = row.as_ref().map_or(DUMMY_HASH.to_owned(), |r| r.password_hash.clone());
        let ok = verify_password(password.to_owned(), hash).await.unwrap_or(false);
        match row {
            Some(r) if ok => Ok(User { user_id: r.user_id, email: r.email, name: r.name, role: r.role }),
            _ => Err(EngineError::InvalidCredentials),
        }
    }

    /// The account behind a session.
    pub async fn user(&self, user_id: Uuid) -> Result<Option<User>> {
        let row = sqlx::query!(
            r#"SELECT user_id, email, name, role AS "role: Role" FROM users WHERE user_id = $1"#,
            user_id
        )
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|r| User { user_id: r.user_id, email: r.email, name: r.name, role: r.role }))
    }
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
