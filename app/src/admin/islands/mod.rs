//! The staff pages' interactive parts.
//!
//! Each is an island where staff pages are built (the server, and the
//! staff bundle, feature `staff`) and a plain component in the fans'
//! bundle, where nothing calls it: the fans' browsers never download the
//! box office's code.

mod dashboard;
mod layout_builder;
mod refund;
mod scanner;
mod seat_desk;

pub use dashboard::LiveDashboard;
pub use layout_builder::LayoutBuilder;
pub use refund::RefundPanel;
pub use scanner::Scanner;
pub use seat_desk::SeatDesk;
