#![recursion_limit = "256"]
//! The frontrow server: configuration, the private PostgreSQL cluster, the
//! JSON API, Leptos SSR, background tasks and the command line.

pub mod api;
pub mod assets;
pub mod cli;
pub mod config;
pub mod demo;
pub mod gates;
pub mod html;
pub mod mail;
pub mod map_page;
pub mod page_cache;
pub mod pgcluster;
pub mod prepared;
pub mod startup;
pub mod state;
pub mod tasks;
pub mod telemetry;
pub mod tickets;
pub mod waiting_room;
