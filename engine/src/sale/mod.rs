//! The sale: the seat state machine and every way a seat changes hands.
//!
//! - [`seats`]: each seat transition, written once, with its change-log row;
//! - [`holds`] and [`hold_batch`]: claiming seats all or none, fenced by a
//!   token, many fans' holds gathered into one database call; likewise
//!   their releases ([`release_batch`]), both through [`group_commit`];
//! - [`best`]: the best seats side by side;
//! - [`checkout`]: from a hold to a booking, payment in between;
//!   [`bookings`]: reading what was sold;
//! - [`reaper`]: lapsed holds returned in batches;
//! - [`ticket_types`]: the type of each seat a checkout pays for;
//! - [`presale`]: presale codes as fans enter them, and [`presale::Access`],
//!   what lets a fan hold (an admission, a presale code);
//! - [`waitlist`]: fans waiting for a sold-out tier, offered the seats
//!   that come back, in order.

pub mod best;
pub(crate) mod bookings;
pub mod checkout;
pub(crate) mod group_commit;
pub mod hold_batch;
pub(crate) mod holds;
pub mod presale;
pub(crate) mod reaper;
pub(crate) mod release_batch;
pub mod seats;
pub(crate) mod ticket_types;
pub(crate) mod waitlist;
