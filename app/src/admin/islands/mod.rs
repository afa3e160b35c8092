//! The staff pages' interactive parts.

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
