//! Values that are parsed once, at the edge, so a value that exists is valid:
//! seat ids, hold tokens, idempotency keys, payment tokens.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a value was refused when parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidValue(pub String);

/// A date as the API's `date-time` (RFC 3339) writes it: in the years 1 to
/// 9999. A typed date may name any year of any sign, and PostgreSQL refuses
/// some (those before 4713 BC) with an error of its own.
pub fn check_date(field: &str, when: chrono::DateTime<chrono::Utc>) -> Result<(), InvalidValue> {
    if !(1..=9999).contains(&chrono::Datelike::year(&when)) {
        return Err(InvalidValue(format!("{field} must be a date in the years 1 to 9999")));
    }
    Ok(())
}

macro_rules! parsed_string {
    ($(#[$doc:meta])* $name:ident, $what:literal, max = $max:expr, allowed = $allowed:expr, pattern = $pattern:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub const MAX_LEN: usize = $max;

            pub fn parse(value: impl Into<String>) -> Result<Self, InvalidValue> {
                let value = value.into();
                let allowed: fn(char) -> bool = $allowed;
                if value.is_empty() || value.len() > Self::MAX_LEN || !value.chars().all(allowed) {
                    return Err(InvalidValue(format!(concat!($what, " must be 1 to {} characters ({})"), Self::MAX_LEN, $pattern)));
                }
                Ok(Self(value))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_inner(self) -> String {
                self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidValue;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::parse(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .min_length(Some(1))
                    .max_length(Some($max))
                    .pattern(Some(concat!("^", $pattern, "+$")))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}
    };
}

parsed_string!(
    /// A seat of an event: `SECTION-ROW-NUMBER`, letters, digits and dashes.
    SeatId, "a seat id", max = 64, allowed = |c| c.is_ascii_alphanumeric() || c == '-', pattern = "[A-Za-z0-9-]"
);

parsed_string!(
    /// The fencing token of a hold: only the current, unexpired one may
    /// release the hold or pay for it.
    HoldToken, "a hold token", max = 128, allowed = |c| c.is_ascii_graphic(), pattern = "[!-~]"
);

parsed_string!(
    /// The client's key for a request that must happen at most once
    /// (checkout, counter sale, refund): a retry with the same key gets the
    /// first answer.
    IdempotencyKey, "an Idempotency-Key", max = 255, allowed = |c| c.is_ascii_graphic(), pattern = "[!-~]"
);

parsed_string!(
    /// What the payment provider charges (a card token from its checkout).
    PaymentToken, "a payment token", max = 128, allowed = |c| c.is_ascii_graphic(), pattern = "[!-~]"
);

/// Ids of the things the database keeps (events, holds, bookings, ...): a
/// UUID each, with its own type, so one cannot be passed where another is
/// meant. The JSON and the database see a bare UUID.
macro_rules! record_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        #[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
        pub struct $name(uuid::Uuid);

        impl $name {
            pub const fn from_uuid(id: uuid::Uuid) -> Self {
                Self(id)
            }

            pub const fn as_uuid(&self) -> uuid::Uuid {
                self.0
            }
        }

        impl From<uuid::Uuid> for $name {
            fn from(id: uuid::Uuid) -> Self {
                Self(id)
            }
        }

        impl From<$name> for uuid::Uuid {
            fn from(id: $name) -> uuid::Uuid {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                uuid::Uuid::parse_str(s).map(Self)
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Uuid)))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}
    };
}

record_id!(
    /// An event (one date of a show, with its own seats and sale).
    EventId
);
record_id!(
    /// An account: a fan, or box-office staff.
    UserId
);
record_id!(
    /// A hold on seats or standing places, with its lease.
    HoldId
);
record_id!(
    /// A checkout: a hold on its way to payment.
    CheckoutId
);
record_id!(
    /// A payment taken (or tried) with the provider.
    PaymentId
);
record_id!(
    /// A confirmed booking, with its tickets.
    BookingId
);
record_id!(
    /// One ticket of a booking: one seat or standing place.
    TicketId
);
record_id!(
    /// A venue layout that events are created from.
    LayoutId
);
record_id!(
    /// A batch of presale codes (one shared code, or many unique ones).
    AccessCodeBatchId
);
record_id!(
    /// A fan's place on an event's waiting list.
    WaitlistEntryId
);

/// Most seats one request may name; far above any per-order limit, so a
/// huge list is refused before it costs anything.
pub const MAX_SEATS_PER_REQUEST: usize = 100;

/// Parses a list of seat ids: 1 to [`MAX_SEATS_PER_REQUEST`], no repeats.
pub fn seat_list(ids: &[SeatId]) -> Result<(), InvalidValue> {
    if ids.is_empty() {
        return Err(InvalidValue("seat_ids must not be empty".into()));
    }
    if ids.len() > MAX_SEATS_PER_REQUEST {
        return Err(InvalidValue(format!("seat_ids may list at most {MAX_SEATS_PER_REQUEST} seats")));
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    for id in ids {
        if !seen.insert(id) {
            return Err(InvalidValue(format!("seat {id} is listed twice")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_ids_parse_only_when_well_formed() {
        assert!(SeatId::parse("A-1-3").is_ok());
        assert!(SeatId::parse("").is_err());
        assert!(SeatId::parse("A".repeat(65)).is_err());
        assert!(SeatId::parse("A 1").is_err());
        assert!(SeatId::parse("A-1-\u{e9}").is_err());
        let json: SeatId = serde_json::from_str("\"A-1-1\"").expect("a seat id");
        assert_eq!(json.as_str(), "A-1-1");
        assert!(serde_json::from_str::<SeatId>("\"\"").is_err());
    }

    #[test]
    fn keys_and_tokens_are_bounded_visible_ascii() {
        assert!(IdempotencyKey::parse("k".repeat(255)).is_ok());
        assert!(IdempotencyKey::parse("k".repeat(256)).is_err());
        assert!(HoldToken::parse("t".repeat(129)).is_err());
        assert!(PaymentToken::parse("tok visa").is_err());
        assert!(PaymentToken::parse("tok_visa").is_ok());
    }

    #[test]
    fn record_ids_are_bare_uuids_in_json_and_text() {
        let uuid = uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        let id = EventId::from(uuid);
        assert_eq!(serde_json::to_string(&id).unwrap(), serde_json::to_string(&uuid).unwrap());
        assert_eq!(serde_json::from_str::<EventId>(&format!("\"{uuid}\"")).unwrap(), id);
        assert_eq!(id.to_string().parse::<EventId>().unwrap(), id);
        assert!("not-a-uuid".parse::<HoldId>().is_err());
    }

    #[test]
    fn seat_lists_must_be_short_and_distinct() {
        let a = SeatId::parse("A-1-1").unwrap();
        assert!(seat_list(&[]).is_err());
        assert!(seat_list(&[a.clone(), a.clone()]).is_err());
        assert!(seat_list(&[a]).is_ok());
    }
}
