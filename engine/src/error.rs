use crate::model::Role;

/// Every way an engine call can fail. The server maps each to one HTTP status
/// and error code; nothing here knows about HTTP.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("not found")]
    NotFound,
    #[error("{0}")]
    InvalidInput(String),
    #[error("some seats are not available")]
    SeatsUnavailable { conflict_seats: Vec<String> },
    #[error("no {count} seats together are available in tier {tier}")]
    NoSeatsTogether { count: usize, tier: String },
    #[error("at most {max} seats per order for this event")]
    TooManySeats { max: i32 },
    #[error("this event's waiting room has not admitted you (a valid X-Admission-Token is required)")]
    NotAdmitted,
    #[error("this event has no waiting room")]
    WaitingRoomOff,
    #[error("the sale has not opened yet")]
    SaleNotOpen,
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
    #[error("requires role {required:?}")]
    Forbidden { required: Role },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
