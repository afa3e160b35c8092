//! The gates every request passes before a handler sees it, in one place.
//! From the outside in (the order `startup` stacks them):
//!
//! - [`body`]: no request body over 256 KiB, on any route;
//! - [`headers`]: the security headers and each page's script nonce;
//! - [`sessions`]: who is signed in (the store, kept in PostgreSQL and in
//!   memory);
//! - [`clients`] and [`limits`]: who is asking, and the per-client rate
//!   limits (429 with `Retry-After`); the caps on sockets per client;
//! - [`csrf`]: no state change from another site's page;
//! - [`shed`]: bounded work in flight for buying and the waiting room (503
//!   `overloaded` with `Retry-After` beyond it).

pub mod body;
pub mod clients;
pub mod csrf;
pub mod headers;
pub mod limits;
pub mod sessions;
pub mod shed;
