//! The server's integration tests, as one binary (one link, not one per
//! file): each test spawns the app on a free port against a fresh database
//! in a real PostgreSQL.

mod common;

mod accounts_and_ops;
mod api_errors;
mod best_available;
mod box_office;
mod cancellation;
mod catalogue;
mod checkout;
mod crash;
mod failover;
mod hangups;
mod hardening;
mod history;
mod hold_batch_paths;
mod holds;
mod holds_money_sockets;
mod live;
mod mail;
mod outage;
mod pages;
mod payment_http;
mod presale;
mod presale_queue;
mod queue_load;
mod server_fns;
mod sessions;
mod sign_in;
mod ticket_types;
mod venues;
mod waiting_room;
mod waitlist;
