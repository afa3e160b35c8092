//! Every way an engine call can fail, and how each reads to a client.

use chrono::{DateTime, Utc};
use frontrow_model::{AppError, ErrorKind, EventId, InvalidValue};

/// An engine failure. The domain cases carry what a caller needs to act;
/// `Database` and `Internal` are ours to log, never the client's to read.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("not found")]
    NotFound,
    /// Something the request names (a seat, a section) that this event
    /// does not have: well-formed, so not invalid, just not there.
    #[error("{0}")]
    NoSuch(String),
    #[error("{0}")]
    InvalidInput(String),
    #[error("some seats are not available")]
    SeatsUnavailable { conflict_seats: Vec<String>, suggestion: Option<Vec<String>> },
    #[error("no {count} seats together are available in tier {tier}")]
    NoSeatsTogether { count: usize, tier: String },
    #[error("only {available} standing places are left in {section}")]
    NotEnoughPlaces { section: String, available: i64 },
    #[error("at most {max} seats per order for this event")]
    TooManySeats { max: i32 },
    #[error("this event's waiting room has not admitted you (a valid X-Admission-Token is required)")]
    NotAdmitted,
    #[error("this event has no waiting room")]
    WaitingRoomOff,
    #[error("the sale has not opened yet")]
    SaleNotOpen,
    #[error("this code does not open a presale of this event now")]
    AccessCodeInvalid,
    #[error("your presale code does not open these seats")]
    AccessCodeScope,
    #[error("every use of this presale code is taken")]
    AccessCodeUsedUp,
    #[error("these seats came back and are offered to the waiting list first")]
    SeatsForWaitingList,
    #[error("tier {tier} has seats free: hold them instead of joining its waiting list")]
    WaitlistNotNeeded { tier: String },
    #[error("you are on this event's waiting list already")]
    AlreadyOnWaitlist,
    #[error("this event is cancelled")]
    EventCancelled,
    #[error("the hold has expired or its token is no longer current")]
    HoldExpired,
    #[error("a checkout for this hold is already in progress")]
    CheckoutInProgress,
    #[error("this idempotency key was used for a different request")]
    IdempotencyKeyReused,
    #[error("a request with this idempotency key is still in flight")]
    IdempotencyKeyInUse,
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error("wrong email or password")]
    InvalidCredentials,
    #[error("this waiting room is for fans who have verified their email address: ask for a code, then enter it")]
    EmailNotVerified,
    #[error("{0}")]
    WrongCode(&'static str),
    #[error("too many failed sign-ins for this account; try again in {retry_after} s")]
    TooManyAttempts { retry_after: u64 },
    #[error("your account may not do this")]
    Forbidden,
    #[error("already refunded")]
    AlreadyRefunded,
    #[error("a checked-in ticket cannot be refunded")]
    TicketUsed,
    #[error("tickets for this event cannot be cancelled online; ask the box office")]
    CancellationNotOffered,
    #[error("tickets for this event could be cancelled until {} and no longer", closed_at.format("%A %e %B %Y, %H:%M UTC"))]
    CancellationClosed { closed_at: DateTime<Utc> },
    #[error("no ticket has this code")]
    UnknownTicket,
    #[error("this ticket was already admitted")]
    AlreadyCheckedIn { checked_in_at: DateTime<Utc> },
    #[error("this ticket was refunded")]
    TicketRefunded,
    #[error("this ticket is for another event")]
    WrongEvent { event_id: EventId },
    #[error("the database is unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// The mail server refused or did not answer (a mail that must go now,
    /// such as a verification code: the outbox's mail waits and retries).
    #[error("the mail server is unavailable: {0}")]
    MailUnavailable(String),
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    #[error("internal error: {0}")]
    Internal(String),
}

/// When this process last found the database away (unreachable,
/// restarting, read-only), in milliseconds since [`process_start`] plus one
/// (zero: never). A connection last proven alive before that moment is not
/// trusted without a ping: after a restart every one of them is dead.
static LAST_AWAY_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn process_start() -> std::time::Instant {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *START.get_or_init(std::time::Instant::now)
}

fn note_database_away() {
    // Rounded up: a connection proven alive in the same millisecond is not trusted.
    let ms = process_start().elapsed().as_micros().div_ceil(1000) as u64 + 1;
    LAST_AWAY_MS.fetch_max(ms, std::sync::atomic::Ordering::Relaxed);
}

/// How long a connection may sit unused and still be trusted without a ping.
pub const TRUSTED_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a connection last proven alive `idle_for` ago (by a statement or
/// a ping) may be used again without a ping of its own: it has not sat for
/// [`TRUSTED_IDLE`], and the database has not been found away since. Under
/// load connections follow each other closely, so this spares a round trip
/// per use; a connection that died unnoticed in that second costs the one
/// request that finds out a 503, as any request in flight at that moment.
pub fn trusted_without_ping(idle_for: std::time::Duration) -> bool {
    if idle_for >= TRUSTED_IDLE {
        return false;
    }
    match LAST_AWAY_MS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => true,
        away => process_start().elapsed().saturating_sub(std::time::Duration::from_millis(away - 1)) > idle_for,
    }
}

impl From<sqlx::Error> for EngineError {
    fn from(e: sqlx::Error) -> Self {
        // A database we cannot reach (or that is restarting) is an outage
        // to wait out, not a bug: callers answer 503 and retry later.
        let away = match &e {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_) => true,
            sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("57P") || c.starts_with("08")) => true,
            // read_only_sql_transaction: a standby, a demoted primary, or a new primary kept read-only mid-failover.
            sqlx::Error::Database(db) if db.code().as_deref() == Some("25006") => true,
            _ => false,
        };
        if away {
            note_database_away();
            EngineError::Unavailable(e)
        } else {
            EngineError::Database(e)
        }
    }
}

impl From<InvalidValue> for EngineError {
    fn from(e: InvalidValue) -> Self {
        EngineError::InvalidInput(e.0)
    }
}

impl EngineError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// How an engine failure reads to a client.
impl From<EngineError> for AppError {
    fn from(e: EngineError) -> Self {
        use EngineError as E;
        let message = e.to_string();
        let kind = match e {
            E::NotFound => return AppError::not_found(),
            E::NoSuch(m) => return AppError::new(ErrorKind::NotFound, m),
            E::InvalidInput(m) => return AppError::invalid(m),
            E::SeatsUnavailable { conflict_seats, suggestion } => {
                let message = format!("not available: {}", conflict_seats.join(", "));
                return AppError::new(ErrorKind::SeatsUnavailable { conflict_seats, suggestion }, message);
            }
            E::TooManySeats { max } => ErrorKind::TooManySeats { max_seats_per_order: max },
            E::NoSeatsTogether { .. } => ErrorKind::NoSeatsTogether,
            E::NotEnoughPlaces { available, .. } => ErrorKind::NotEnoughPlaces { available },
            E::NotAdmitted => ErrorKind::NotAdmitted,
            E::WaitingRoomOff => ErrorKind::WaitingRoomOff,
            E::SaleNotOpen => ErrorKind::SaleNotOpen,
            E::AccessCodeInvalid => ErrorKind::AccessCodeInvalid,
            E::AccessCodeScope => ErrorKind::AccessCodeScope,
            E::AccessCodeUsedUp => ErrorKind::AccessCodeUsedUp,
            E::SeatsForWaitingList => ErrorKind::SeatsForWaitingList,
            E::WaitlistNotNeeded { .. } => ErrorKind::WaitlistNotNeeded,
            E::AlreadyOnWaitlist => ErrorKind::AlreadyOnWaitlist,
            E::EventCancelled => ErrorKind::EventCancelled,
            E::HoldExpired => ErrorKind::HoldExpired { checkout_id: None, refunded: None },
            E::CheckoutInProgress => ErrorKind::CheckoutInProgress,
            E::IdempotencyKeyReused => ErrorKind::IdempotencyKeyReused,
            E::IdempotencyKeyInUse => ErrorKind::IdempotencyKeyInUse,
            E::EmailTaken => ErrorKind::EmailTaken,
            E::InvalidCredentials => ErrorKind::InvalidCredentials,
            E::EmailNotVerified => ErrorKind::EmailNotVerified,
            E::WrongCode(_) => ErrorKind::WrongCode,
            E::TooManyAttempts { retry_after } => return AppError::new(ErrorKind::RateLimited { retry_after }, message),
            E::Forbidden => return AppError::forbidden(),
            E::AlreadyRefunded => ErrorKind::AlreadyRefunded,
            E::TicketUsed => ErrorKind::TicketUsed,
            E::CancellationNotOffered => ErrorKind::CancellationNotOffered,
            E::CancellationClosed { closed_at } => ErrorKind::CancellationClosed { closed_at },
            E::UnknownTicket => ErrorKind::UnknownTicket,
            E::AlreadyCheckedIn { checked_in_at } => ErrorKind::AlreadyCheckedIn { checked_in_at },
            E::TicketRefunded => ErrorKind::TicketRefunded,
            E::WrongEvent { event_id } => ErrorKind::WrongEvent { event_id },
            E::Unavailable(e) => {
                tracing::warn!(error = %e, "database unavailable");
                return AppError::unavailable();
            }
            E::MailUnavailable(e) => {
                tracing::warn!(error = %e, "mail server unavailable");
                return AppError::unavailable();
            }
            e @ (E::Database(_) | E::Internal(_)) => {
                // The detail goes to the log (with the request id), never to the client.
                tracing::error!(error = %e, "internal error");
                return AppError::internal();
            }
        };
        AppError::new(kind, message)
    }
}
