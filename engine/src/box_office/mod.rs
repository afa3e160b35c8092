//! The box office: counter sales, blocking seats, check-in at the door,
//! reading bookings, the staff's reports and live figures, the change log
//! of every seat and staff action, and the invariant audit.

pub(crate) mod counter;
pub(crate) mod checkin;
pub mod reports;
pub(crate) mod stats;
pub(crate) mod blocks;
pub(crate) mod bookings;
pub(crate) mod audit;
pub mod changelog;
