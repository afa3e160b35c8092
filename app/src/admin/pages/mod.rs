//! The staff pages, each with the server function that loads it.

mod bookings;
mod door;
mod events;
mod figures;
mod layouts;
mod money;
mod presale;
mod seats;
mod staff;
mod waitlist;

pub use bookings::{StaffBookingPage, StaffBookingsPage};
pub use door::CheckinPage;
pub use events::{NewEventPage, StaffEventPage, StaffHomePage, WaitingRoomRedirect};
pub use figures::{AuditPage, DashboardPage};
pub use layouts::{LayoutsPage, NewLayoutPage};
pub use money::PaymentsPage;
pub use seats::SeatDeskPage;
pub use staff::StaffAccountsPage;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

fn param(name: &'static str) -> String {
    use_params_map().read_untracked().get(name).unwrap_or_default()
}
