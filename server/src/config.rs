//! Typed configuration: every setting is an environment variable and a flag.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use frontrow_model::EventId;

#[derive(Debug, Parser)]
#[command(name = "frontrow", version, about = "Ticketing for flash on-sales: server and admin tool")]
pub struct Cli {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web app and the JSON API (the default).
    Serve(Box<ServeArgs>),
    /// Apply database migrations and exit.
    Migrate,
    /// Print the URL of the database in use (the private cluster's, unless
    /// DATABASE_URL is set), for psql, pgbench and the like.
    DatabaseUrl,
    /// Create the demo events (a 10,000-seat hall and a stadium with a
    /// standing floor; idempotent) and a demo staff account.
    SeedDemo,
    /// Create a stadium event from the bowl template (idempotent by name),
    /// on sale now: for load runs and measurements.
    SeedStadium {
        #[arg(long)]
        name: String,
        /// Sections in each ring.
        #[arg(long, default_value_t = 40)]
        sections: u32,
        #[arg(long, default_value_t = 33)]
        lower_rows: u32,
        #[arg(long, default_value_t = 40)]
        upper_rows: u32,
        /// Standing places on the floor (0: none).
        #[arg(long, default_value_t = 0)]
        floor: u32,
    },
    /// Manage accounts.
    #[command(subcommand)]
    User(UserCommand),
    /// Check the booking invariants; exits non-zero on any violation.
    Audit {
        /// Audit one event only.
        #[arg(long)]
        event: Option<EventId>,
    },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Many signed-in fans at once, for load runs: `PREFIX-N@load.test`
    /// with one password, each with a session. Writes `email<TAB>session
    /// cookie value` lines to OUT.
    Bulk {
        #[arg(long)]
        count: u32,
        #[arg(long, default_value = "loadfan")]
        prefix: String,
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Create an account (staff and admin accounts are only made this way).
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        password: String,
        #[arg(long, default_value = "fan")]
        role: String,
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL. Unset: a private cluster under the data dir is created and started.
    #[arg(long, env = "DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Where the private cluster and the generated secret live.
    #[arg(long, env = "FRONTROW_DATA_DIR", default_value = "./.data", global = true)]
    pub data_dir: PathBuf,
    /// Port of the private cluster (it listens on a unix socket in the data dir only).
    #[arg(long, env = "FRONTROW_PG_PORT", default_value_t = 54329, global = true)]
    pub pg_port: u16,
    /// Maximum database connections of this process.
    #[arg(long, env = "FRONTROW_DB_POOL", default_value_t = 32, global = true)]
    pub db_pool: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// The built-in simulated provider (test tokens).
    Simulated,
    /// A PaymentIntents-style HTTP API at FRONTROW_PAYMENT_API_URL.
    Http,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[arg(long, env = "FRONTROW_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,
    /// Signs admission tokens: FRONTROW_SECRET or the file named by
    /// FRONTROW_SECRET_FILE; generated and kept in the data dir when
    /// neither is set. Never a flag (flags show in `ps`).
    #[arg(skip)]
    pub secret: Option<String>,
    #[arg(long, env = "FRONTROW_RATE_LIMITS", value_enum, default_value = "on")]
    pub rate_limits: Switch,
    /// Requests per second allowed per client address on the rate-limited calls.
    #[arg(long, env = "FRONTROW_RATE_PER_SECOND", default_value_t = 20)]
    pub rate_per_second: u32,
    /// Requests of one costly kind (holds and checkouts; queue joins and
    /// polls) worked on at once by this instance; as many more wait in line
    /// for a turn, and beyond that a request is turned away at once.
    /// Default: 128 for each CPU core the process may use (quotas included).
    #[arg(long, env = "FRONTROW_MAX_IN_FLIGHT")]
    pub max_in_flight: Option<usize>,
    /// How long a request waits for a turn before it is answered 503
    /// `overloaded` with Retry-After (nothing done): a definite answer in
    /// bounded time rather than a client's timeout.
    #[arg(long, env = "FRONTROW_SHED_AFTER_MS", default_value_t = 500)]
    pub shed_after_ms: u64,
    /// Sign-ups and sign-ins allowed per client address per minute, after a
    /// first burst of twice as many (bots making accounts, password guessing).
    #[arg(long, env = "FRONTROW_ACCOUNT_ATTEMPTS_PER_MINUTE", default_value_t = 5)]
    pub account_attempts_per_minute: u32,
    /// Addresses of reverse proxies in front of this server: from them (and
    /// only them) the client's address is read from X-Forwarded-For.
    #[arg(long, env = "FRONTROW_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Live sockets (seat maps and waiting rooms together) one client
    /// address may hold open (an IPv6 client counts by its /64).
    #[arg(long, env = "FRONTROW_SOCKETS_PER_ADDRESS", default_value_t = 100)]
    pub sockets_per_address: usize,
    /// A live socket whose client has sent nothing for half this long is
    /// pinged (browsers answer by themselves), and closed when it stays
    /// silent for all of it: a reader that is gone does not keep its place.
    /// Not a flag (tests shorten it).
    #[arg(skip = 60_000_u64)]
    pub socket_idle_ms: u64,
    /// A waiting fan's socket hears a new place in line at most this often
    /// (a change of state, such as being admitted, at once): with thousands
    /// waiting, a frame to each after every admission round is a burst of
    /// work each second that the joins arriving then wait behind.
    #[arg(long, env = "FRONTROW_QUEUE_FRAME_EVERY_MS", default_value_t = 5000)]
    pub queue_frame_every_ms: u64,
    /// Public base URL; an https URL marks session cookies Secure. Unset,
    /// the server is the demo: the simulated provider (unless another is
    /// named) and the demo staff account's published password.
    #[arg(long, env = "FRONTROW_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Serve the demo (no FRONTROW_PUBLIC_URL) on an address beyond
    /// loopback anyway (`1`/`true`); without it such a server refuses to
    /// start, as anyone reaching it could sign in as the demo staff account.
    #[arg(long, env = "FRONTROW_ALLOW_DEMO_ON_NETWORK", action = clap::ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false)]
    pub allow_demo_on_network: bool,
    /// Built site (hydration bundle, CSS, public files).
    #[arg(long, env = "FRONTROW_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
    /// Unset: the simulated provider, except behind an https public URL,
    /// where the server refuses to start rather than sell for fake money.
    #[arg(long, env = "FRONTROW_PAYMENT_PROVIDER", value_enum)]
    pub payment_provider: Option<ProviderKind>,
    #[arg(long, env = "FRONTROW_PAYMENT_API_URL")]
    pub payment_api_url: Option<String>,
    /// FRONTROW_PAYMENT_API_KEY or the file named by
    /// FRONTROW_PAYMENT_API_KEY_FILE; never a flag.
    #[arg(skip)]
    pub payment_api_key: Option<String>,
    /// How long checkout waits for the provider before answering 202 pending.
    #[arg(long, env = "FRONTROW_CHECKOUT_WAIT_MS", default_value_t = 3000)]
    pub checkout_wait_ms: u64,
    /// How long seats stay reserved for a payment whose outcome is unknown.
    #[arg(long, env = "FRONTROW_PAYMENT_GRACE_SECS", default_value_t = 600)]
    pub payment_grace_secs: u64,
    /// How long a payment that cannot be proved charged or uncharged is
    /// asked about (with back-off) before a person is told: at least the
    /// provider's idempotency window.
    #[arg(long, env = "FRONTROW_PAYMENT_WATCH_SECS", default_value_t = 24 * 3600)]
    pub payment_watch_secs: u64,
    /// How long a tok_slow payment of the simulated provider takes to settle.
    #[arg(long, env = "FRONTROW_SIM_SLOW_MS", default_value_t = 8000)]
    pub sim_slow_ms: u64,
    #[arg(long, env = "FRONTROW_REAPER_INTERVAL_MS", default_value_t = 1000)]
    pub reaper_interval_ms: u64,
    /// How often a seat map that keeps changing is rendered again for
    /// readers (0: at every change). Viewers get each change live anyway.
    #[arg(long, env = "FRONTROW_MAP_REFRESH_MS", default_value_t = 50)]
    pub map_refresh_ms: u64,
    /// How long an event page rendered for a signed-out viewer, or for a
    /// signed-in fan without a hold, is kept for the next such viewers (each
    /// with a nonce, a clock and header links of their own): a change of
    /// the event (its sale opening, staff unpublishing it) reaches them
    /// this much later. 0: rendered for each.
    #[arg(long, env = "FRONTROW_PAGE_KEEP_MS")]
    pub page_keep_ms: Option<u64>,
    /// The earlier name of `FRONTROW_PAGE_KEEP_MS`, still read when that
    /// is not set (a deployment that turned keeping off stays off).
    #[arg(long, env = "FRONTROW_SIGNED_OUT_PAGE_MS", hide = true)]
    pub signed_out_page_ms: Option<u64>,
    /// Venues with more seats than this (and more than one section) open
    /// on an overview of their sections; smaller ones show every seat on
    /// one map. Venues with a standing area always open on the overview.
    /// (Measured: below about this size one map is quicker to pick from;
    /// `make map-bench`.)
    #[arg(long, env = "FRONTROW_OVERVIEW_ABOVE", default_value_t = 12_000)]
    pub overview_above: usize,
    /// A section with more seats than this is shown a block of rows at a time.
    #[arg(long, env = "FRONTROW_SECTION_BLOCK_SEATS", default_value_t = 2500)]
    pub section_block_seats: usize,
    #[arg(long, env = "FRONTROW_RECONCILE_INTERVAL_MS", default_value_t = 2000)]
    pub reconcile_interval_ms: u64,
    /// How often the mail sender looks for mail to send (tickets, refunds).
    #[arg(long, env = "FRONTROW_MAIL_INTERVAL_MS", default_value_t = 1000)]
    pub mail_interval_ms: u64,
    /// How often the admission loop looks at each waiting room (a round
    /// still happens at most once a second per event).
    #[arg(long, env = "FRONTROW_ADMISSION_INTERVAL_MS", default_value_t = 500)]
    pub admission_interval_ms: u64,
    /// Where the built-in mailer appends the messages it would send (one
    /// JSON line each); they are logged either way.
    #[arg(long, env = "FRONTROW_MAIL_OUTBOX")]
    pub mail_outbox: Option<PathBuf>,
    /// Sender of mail sent over SMTP.
    #[arg(long, env = "FRONTROW_MAIL_FROM", default_value = "frontrow <tickets@localhost>")]
    pub mail_from: String,
    /// FRONTROW_SMTP_URL (or the file FRONTROW_SMTP_URL_FILE names), e.g.
    /// `smtps://user:password@mail.example.com`: mail goes out over SMTP
    /// instead of to the log. Never a flag (it holds a password).
    #[arg(skip)]
    pub smtp_url: Option<String>,
    /// This server instance's id (its claims on checkouts carry it). Unset:
    /// derived from the host, the data dir and the listen address, so a
    /// restarted server is the same instance and takes back its claims.
    #[arg(long, env = "FRONTROW_INSTANCE_ID")]
    pub instance_id: Option<uuid::Uuid>,
    /// Crash tests only, and only in debug builds: the point where the
    /// process dies (`frontrow_engine::FailPoint`; a release build has no
    /// such flag).
    #[cfg(debug_assertions)]
    #[arg(long, env = "FRONTROW_FAILPOINT", hide = true, value_parser = clap::builder::ValueParser::new(|name: &str| name.parse::<frontrow_engine::FailPoint>()))]
    pub failpoint: Option<frontrow_engine::FailPoint>,
}

impl Default for ServeArgs {
    fn default() -> Self {
        // The flag defaults, without reading the environment.
        match Cli::try_parse_from(["frontrow", "serve"]).map(|c| c.command) {
            Ok(Some(Command::Serve(args))) => *args,
            _ => unreachable!("the serve defaults always parse"),
        }
    }
}

impl ServeArgs {
    pub fn checkout_wait(&self) -> Duration {
        Duration::from_millis(self.checkout_wait_ms)
    }

    /// How long a shared event page is kept (50 ms unless set).
    pub fn page_keep(&self) -> Duration {
        Duration::from_millis(self.page_keep_ms.or(self.signed_out_page_ms).unwrap_or(50))
    }
    /// Where fans reach this site (links in email): the public URL, or the
    /// listen address.
    pub fn site_url(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.addr),
        }
    }

    /// Without a public URL this is the demo set-up: says so loudly, and
    /// refuses to serve it beyond loopback unless asked to explicitly.
    pub fn check_demo(&self) -> anyhow::Result<()> {
        if self.public_url.is_some() {
            return Ok(());
        }
        let simulated = self.provider()? == ProviderKind::Simulated;
        if simulated {
            tracing::warn!("DEMO: FRONTROW_PUBLIC_URL is not set and payments go to the SIMULATED provider (test tokens, no money moves)");
        }
        tracing::warn!(
            "DEMO: FRONTROW_PUBLIC_URL is not set: the demo staff account ({}) signs in with its published password wherever it has been seeded",
            crate::demo::DEMO_STAFF_EMAIL
        );
        if self.addr.ip().is_loopback() {
            return Ok(());
        }
        anyhow::ensure!(
            self.allow_demo_on_network,
            "refusing to start: listening on {} reaches beyond this machine, and without FRONTROW_PUBLIC_URL this is the demo \
             ({}the demo staff account's published password): anyone who can reach it could use them. Set FRONTROW_PUBLIC_URL \
             (and FRONTROW_PAYMENT_PROVIDER), listen on 127.0.0.1, or set FRONTROW_ALLOW_DEMO_ON_NETWORK=1 to serve the demo on the network anyway",
            self.addr,
            if simulated { "the simulated payment provider, " } else { "" },
        );
        tracing::warn!(addr = %self.addr, "DEMO: serving the demo beyond loopback, as FRONTROW_ALLOW_DEMO_ON_NETWORK asks");
        Ok(())
    }

    pub fn secure_cookies(&self) -> bool {
        self.public_url.as_deref().is_some_and(|u| u.starts_with("https://"))
    }

    /// The payment provider to use. The simulated one takes any test token,
    /// so a public https deployment must name its provider explicitly.
    pub fn provider(&self) -> anyhow::Result<ProviderKind> {
        match self.payment_provider {
            Some(kind) => Ok(kind),
            None if self.secure_cookies() => anyhow::bail!(
                "refusing to start: FRONTROW_PUBLIC_URL is https but FRONTROW_PAYMENT_PROVIDER is not set, \
                 so tickets would sell for fake money. Set FRONTROW_PAYMENT_PROVIDER=http (with \
                 FRONTROW_PAYMENT_API_URL and FRONTROW_PAYMENT_API_KEY), or =simulated for a public test site"
            ),
            None => Ok(ProviderKind::Simulated),
        }
    }

    /// Reads the secrets that only come from the environment (a value, or a
    /// file named by `<NAME>_FILE`).
    pub fn secrets_from_env(&mut self) -> anyhow::Result<()> {
        self.secret = secret_from_env("FRONTROW_SECRET")?;
        self.payment_api_key = secret_from_env("FRONTROW_PAYMENT_API_KEY")?;
        self.smtp_url = secret_from_env("FRONTROW_SMTP_URL")?;
        Ok(())
    }
}

/// `NAME` from the environment, or the contents of the file `NAME_FILE` names.
fn secret_from_env(name: &str) -> anyhow::Result<Option<String>> {
    use anyhow::Context;
    if let Some(value) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
        return Ok(Some(value));
    }
    match std::env::var(format!("{name}_FILE")).ok().filter(|v| !v.is_empty()) {
        Some(path) => {
            let value = std::fs::read_to_string(&path).with_context(|| format!("reading {name}_FILE ({path})"))?;
            Ok(Some(value.trim().to_owned()))
        }
        None => Ok(None),
    }
}
