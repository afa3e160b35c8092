//! The reads every signed-in request may need, in batches (see
//! [`crate::sale::group_commit`]): a session the instance has not kept and
//! the account behind it. A fan's first request to an instance needs both;
//! when a crowd arrives at once, one call answers all the sessions that came
//! in together and one all their accounts, on a connection kept from batch
//! to batch, instead of a query each plus the pool's checks on every
//! connection handed back.

use std::collections::HashMap;

use frontrow_model::{Role, User, UserId};
use sqlx::PgConnection;

use crate::error::Result;
use crate::sale::group_commit::{Batch, GroupCommit};

pub(crate) struct AccountReads;

pub(crate) type AccountReader = GroupCommit<AccountReads>;

impl Batch for AccountReads {
    type Request = UserId;
    /// The account with its session epoch; none if unknown or disabled.
    type Outcome = Option<(User, i32)>;
    type Key = ();
    const SIZE_METRIC: &'static str = "frontrow_account_read_batch_size";
    const MAX_BATCH: usize = 1000;

    async fn call(connection: &mut PgConnection, _: (), users: &[UserId]) -> Result<Vec<Result<Self::Outcome>>> {
        let rows = sqlx::query!(
            r#"SELECT user_id, email, name, role AS "role: Role", session_epoch FROM users WHERE user_id = ANY($1) AND disabled_at IS NULL"#,
            users as &[UserId]
        )
        .fetch_all(connection)
        .await?;
        let found: HashMap<UserId, (User, i32)> = rows
            .into_iter()
            .map(|r| (r.user_id.into(), (User { user_id: r.user_id.into(), email: r.email, name: r.name, role: r.role }, r.session_epoch)))
            .collect();
        Ok(users.iter().map(|u| Ok(found.get(u).cloned())).collect())
    }
}

pub(crate) struct SessionReads;

pub(crate) type SessionReader = GroupCommit<SessionReads>;

impl Batch for SessionReads {
    /// The session's id as the session layer stores it.
    type Request = String;
    /// The stored record, as the session layer encoded it; none if there is
    /// no such session or it has expired.
    type Outcome = Option<Vec<u8>>;
    type Key = ();
    const SIZE_METRIC: &'static str = "frontrow_session_read_batch_size";
    const MAX_BATCH: usize = 1000;

    async fn call(connection: &mut PgConnection, _: (), ids: &[String]) -> Result<Vec<Result<Self::Outcome>>> {
        // The table is tower-sessions' own (its migration makes it), so the
        // query is not checked against ours.
        let rows: Vec<(String, Vec<u8>)> =
            sqlx::query_as(r#"SELECT id, data FROM "tower_sessions"."session" WHERE id = ANY($1) AND expiry_date > now()"#)
                .bind(ids)
                .fetch_all(connection)
                .await?;
        let found: HashMap<String, Vec<u8>> = rows.into_iter().collect();
        // A session asked for twice in one batch (two tabs) gets its record
        // both times.
        Ok(ids.iter().map(|id| Ok(found.get(id).cloned())).collect())
    }
}
