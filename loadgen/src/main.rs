//! Drives a running frontrow server like real fans, over HTTP and WebSocket,
//! and writes what it measured as JSON and as a Markdown section of the bench
//! report. Arrivals are open-model (scheduled at a set rate whatever the
//! server's answers), and each latency counts from the request's intended
//! start. Send traffic only to a server on this machine.

mod api;
mod board;
mod conn;
mod fanout;
mod scenarios;
mod stats;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::api::{read_fans, Api, Fan};

#[derive(Parser)]
#[command(name = "frontrow-loadgen")]
struct Cli {
    /// Base URL of the server or of the proxy in front of it (loopback only).
    #[arg(long, global = true, default_value = "http://127.0.0.1:3000")]
    url: String,
    #[arg(long, global = true, default_value = "staff@frontrow.test")]
    staff_email: String,
    #[arg(long, global = true, default_value = "frontrow-demo")]
    staff_password: String,
    /// Pre-created fans: `email<TAB>session` lines from `frontrow user bulk`.
    #[arg(long, global = true)]
    fans_file: Option<PathBuf>,
    /// Server process ids whose CPU time is charged to the requests.
    #[arg(long = "server-pid", global = true)]
    server_pids: Vec<u32>,
    /// Where to write the scenario's JSON report.
    #[arg(long, global = true)]
    json_out: Option<PathBuf>,
    /// Where to write the scenario's Markdown section.
    #[arg(long, global = true)]
    md_out: Option<PathBuf>,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand)]
enum Scenario {
    /// An on-sale behind the waiting room, until sold out.
    Onsale(scenarios::OnsaleArgs),
    /// A share of all hold attempts aim at one front-row seat.
    HotSeat(scenarios::HotSeatArgs),
    /// Seat-map reads double mid-sale.
    Storm(scenarios::StormArgs),
    /// Holds and payments while a command restarts the database.
    Restart(scenarios::RestartArgs),
    /// Closed-loop saturation of one call, for the ratios against the machine's limits.
    Capacity(scenarios::CapacityArgs),
    /// Many viewers on one event's live socket while seats are held.
    Fanout(fanout::FanoutArgs),
}

/// What every scenario gets: the server, a staff session, the fans.
pub struct Ctx {
    pub api: Api,
    pub staff: String,
    pub fans: Vec<Fan>,
    pub server_pids: Vec<u32>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let api = Api::new(&cli.url)?;
    let staff = api.staff_session(&cli.staff_email, &cli.staff_password).await?;
    let fans = match &cli.fans_file {
        Some(path) => read_fans(path)?,
        None => Vec::new(),
    };
    let ctx = Ctx { api, staff, fans, server_pids: cli.server_pids };
    let report = match cli.scenario {
        Scenario::Onsale(a) => scenarios::onsale(&ctx, a).await?,
        Scenario::HotSeat(a) => scenarios::hot_seat(&ctx, a).await?,
        Scenario::Storm(a) => scenarios::storm(&ctx, a).await?,
        Scenario::Restart(a) => scenarios::restart(&ctx, a).await?,
        Scenario::Capacity(a) => scenarios::capacity(&ctx, a).await?,
        Scenario::Fanout(a) => fanout::fanout(&ctx, a).await?,
    };
    println!("{}", report.markdown);
    if let Some(path) = &cli.json_out {
        std::fs::write(path, serde_json::to_string_pretty(&report.json)?).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &cli.md_out {
        std::fs::write(path, &report.markdown).with_context(|| format!("writing {}", path.display()))?;
    }
    if !report.passed {
        eprintln!("frontrow-loadgen: a check of this scenario failed (see the report)");
        std::process::exit(2);
    }
    Ok(())
}
