//! The sale: the seat state machine and every way a seat changes hands.
//!
//! - [`seats`]: each seat transition, written once, with its change-log row;
//! - [`holds`] and [`hold_batch`]: claiming seats all or none, fenced by a
//!   token, many fans' holds gathered into one database call;
//! - [`best`]: the best seats side by side; [`seating`]: the plan in memory;
//! - [`checkout`]: from a hold to a booking, payment in between;
//! - [`reaper`]: lapsed holds returned in batches.

pub mod seats;
pub(crate) mod holds;
pub mod hold_batch;
pub mod best;
pub mod seating;
pub mod checkout;
pub(crate) mod reaper;
