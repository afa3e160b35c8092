//! The server's integration tests, as one binary (one link, not one per
//! file): each test spawns the app on a free port against a fresh database
//! in a real PostgreSQL.

mod common;

mod accounts_and_ops;
mod api_errors;
mod best_available;
mod box_office;
mod checkout;
mod crash;
mod hangups;
mod hardening;
mod holds;
mod live;
mod outage;
mod pages;
mod payment_http;
mod server_fns;
mod sessions;
mod venues;
mod waiting_room;
