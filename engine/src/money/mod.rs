//! Money after the sale: refunds (a booking, single tickets, a cancelled
//! event) and reconciling every payment whose outcome a checkout could not
//! learn in time. The providers that both this and the checkout talk to are
//! beside the rooms, in `payment`.

pub mod reconcile;
pub(crate) mod refunds;
