//! Money after the sale: refunds (a booking, single tickets, a cancelled
//! event, a fan's own cancellation) and reconciling every payment whose outcome a checkout could not
//! learn in time. The providers that both this and the checkout talk to are
//! beside the rooms, in `payment`.

pub(crate) mod cancellations;
pub mod reconcile;
pub(crate) mod refunds;
