//! The box office: counter sales, blocking seats, check-in at the door,
//! presale codes, the waiting list, the staff's reports and live figures,
//! and the invariant audit.

pub mod access_codes;
pub(crate) mod audit;
pub(crate) mod blocks;
pub(crate) mod checkin;
pub(crate) mod counter;
pub mod reports;
pub(crate) mod stats;
pub(crate) mod waitlist;
