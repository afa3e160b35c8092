//! The data every part of frontrow shares: the engine computes it, the JSON
//! API and the server functions send it, the browser app reads it.
//!
//! Serde only; each web framework's view of it is a feature (`server-fn`:
//! the server functions' error type, `axum`: the error as a response,
//! `openapi`: schemas, `sqlx`: the enum columns), so the engine builds it
//! with no web types, and the same definitions build for the server and for the browser: there
//! is one `Hold`, one error type and one live frame, not a copy on each side.

pub mod box_office;
pub mod error;
pub mod event;
pub mod ids;
pub mod live;
pub mod order;
pub mod presale;
pub mod queue;
pub mod search;
pub mod stats;
pub mod terms;
pub mod user;
pub mod venue;
pub mod waitlist;

pub use box_office::*;
pub use error::{AppError, ErrorKind};
pub use event::*;
pub use ids::*;
pub use order::*;
pub use presale::*;
pub use queue::*;
pub use search::*;
pub use stats::*;
pub use terms::*;
pub use user::*;
pub use venue::*;
pub use waitlist::*;
