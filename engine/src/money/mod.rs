//! Money: the payment providers, refunds, and reconciling every payment
//! whose outcome a checkout could not learn in time.

pub mod payment;
pub(crate) mod refunds;
pub mod reconcile;
