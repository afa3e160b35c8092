//! What the islands do in the browser: the seat-map DOM, the live feed, the
//! map's view, and the picker's workflow, over a few browser wrappers.
//!
//! This code builds for the server too but never runs there: islands'
//! effects and event handlers run only in the browser.

pub mod browser;
pub mod counts;
pub mod live_feed;
pub mod map_view;
pub mod seat_dom;
pub mod workflow;
