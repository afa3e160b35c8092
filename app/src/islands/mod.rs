//! The interactive parts of the pages, hydrated in the browser.
//!
//! Each island renders the same markup on the server and on its first client
//! render (from its props only), then takes over in effects, which run only
//! in the browser; what they do there lives in [`crate::client`].

mod auth;
mod cancel;
mod checkout;
mod map_tools;
mod picker;
mod presale;
mod waitlist;

pub use auth::{AuthForm, SignOutButton};
pub use cancel::CancelPanel;
pub use checkout::CheckoutWatcher;
pub use map_tools::MapTools;
pub use picker::SeatPicker;
pub use presale::PresaleCodeForm;
pub use waitlist::WaitlistBox;
