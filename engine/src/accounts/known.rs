//! The accounts behind sessions as this instance knows them. Every request
//! of a signed-in fan needs their account; reading it from the database each
//! time would make a page cost a query. So an account is kept in memory and
//! trusted for as long as the account feed (a trigger on `users` announcing
//! every change, heard by [`crate::venue::live::listen`]) is heard, and only
//! for [`USER_FRESH`] while it is not.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use frontrow_model::{User, UserId};

use crate::error::{EngineError, Result};
use crate::Engine;

/// How long this instance trusts what it read of an account while the
/// account feed is not heard (a disabled account is shut out on other
/// instances within this).
pub const USER_FRESH: Duration = Duration::from_secs(2);

/// How long an account read while the feed was heard is trusted: changes are
/// announced, so this only bounds the harm of a change made with the trigger
/// switched off.
pub const USER_TRUSTED: Duration = Duration::from_secs(60);

/// An account (none: no such account, or disabled) with its session epoch,
/// as read at `read_at`. `heard` says no change could have been missed while
/// it was read: the feed was heard throughout and announced nothing.
#[derive(Clone)]
pub(crate) struct KnownAccount {
    read_at: Instant,
    heard: bool,
    account: Option<(User, i32)>,
}

pub(crate) type UserCache = moka::future::Cache<UserId, KnownAccount>;

pub(crate) fn user_cache() -> UserCache {
    moka::future::Cache::builder().max_capacity(200_000).time_to_idle(Duration::from_secs(3600)).build()
}

/// Whether the account feed is heard, and a count of what it announced
/// (every change, every loss and every return of the feed).
#[derive(Default)]
pub(crate) struct AccountFeed {
    heard: AtomicBool,
    announced: AtomicU64,
}

impl AccountFeed {
    fn now(&self) -> (bool, u64) {
        (self.heard.load(Ordering::SeqCst), self.announced.load(Ordering::SeqCst))
    }

    fn bump(&self) {
        self.announced.fetch_add(1, Ordering::SeqCst);
    }
}

impl Engine {
    /// The account and its session epoch, from memory while that may be
    /// trusted; while the database is unreachable the last answer stands, so
    /// signed-in fans keep browsing through an outage.
    pub(super) async fn account(&self, user_id: UserId) -> Result<Option<(User, i32)>> {
        let feed = &self.inner.account_feed;
        let cached = self.users().get(&user_id).await;
        if let Some(known) = &cached {
            let trusted_for = if known.heard && feed.now().0 { USER_TRUSTED } else { USER_FRESH };
            if known.read_at.elapsed() < trusted_for {
                return Ok(known.account.clone());
            }
        }
        let before = feed.now();
        // Read with the other accounts asked for meanwhile (a crowd's first
        // requests), after `before`: a change announced since is noticed.
        let reader = super::AccountReader::running_in(&self.inner.account_reader, self.pool(), &Default::default());
        match reader.submit((), user_id).await {
            Ok(account) => {
                let heard = before.0 && feed.now() == before;
                self.users().insert(user_id, KnownAccount { read_at: Instant::now(), heard, account: account.clone() }).await;
                // A change announced after the check above and forgotten
                // before the insert would leave this read trusted: look again.
                if heard && feed.now() != before {
                    self.forget_user(user_id).await;
                }
                Ok(account)
            }
            Err(EngineError::Unavailable(e)) => match cached {
                Some(known) => Ok(known.account),
                None => Err(EngineError::Unavailable(e)),
            },
            Err(e) => Err(e),
        }
    }

    /// Forgets what this instance knows of an account (it just changed).
    pub(super) async fn forget_user(&self, user_id: UserId) {
        self.users().invalidate(&user_id).await;
    }

    /// The feed announced a change to this account (its payload, the id).
    pub(crate) async fn account_changed(&self, payload: &str) {
        self.inner.account_feed.bump();
        match payload.parse::<UserId>() {
            Ok(user_id) => self.forget_user(user_id).await,
            Err(_) => self.users().invalidate_all(),
        }
    }

    /// The feed is heard from now on: what was read before may have missed
    /// changes, so it is all read again.
    pub(crate) fn account_feed_heard(&self) {
        let feed = &self.inner.account_feed;
        feed.bump();
        self.users().invalidate_all();
        feed.heard.store(true, Ordering::SeqCst);
    }

    /// The feed is lost: accounts are trusted for [`USER_FRESH`] only until
    /// it is heard again.
    pub(crate) fn account_feed_lost(&self) {
        let feed = &self.inner.account_feed;
        feed.heard.store(false, Ordering::SeqCst);
        feed.bump();
    }
}
