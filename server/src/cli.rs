//! The `frontrow` command line: serve, migrate, seed-demo, user, audit.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use frontrow_engine::accounts::NewUser;
use frontrow_model::Role;
use tokio_util::sync::CancellationToken;

use crate::config::{Cli, Command, DatabaseArgs, ServeArgs, UserCommand};
use crate::pgcluster::PrivateCluster;
use crate::startup::{connect, engine, migrate, Application};
use crate::{demo, telemetry};

pub async fn run() -> ExitCode {
    let cli = Cli::parse();
    telemetry::init();
    match execute(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The database to use: DATABASE_URL, or the private cluster (started if needed).
async fn database(args: &DatabaseArgs) -> Result<(String, Option<PrivateCluster>)> {
    match &args.database_url {
        Some(url) => Ok((url.clone(), None)),
        None => {
            let cluster = PrivateCluster::ensure(&args.data_dir, args.pg_port).await?;
            if cluster.location() != std::fs::canonicalize(&args.data_dir)?.join("pg") {
                eprintln!("private PostgreSQL cluster: {}", cluster.location().display());
            }
            cluster.create_database("frontrow").await?;
            Ok((cluster.url("frontrow"), Some(cluster)))
        }
    }
}

async fn execute(cli: Cli) -> Result<ExitCode> {
    let (url, cluster) = database(&cli.database).await?;
    let pool = connect(&url, cli.database.db_pool).await?;
    migrate(&pool).await?;
    let outcome = command(cli.command.unwrap_or_else(|| Command::Serve(Box::default())), &cli.database, &url, pool.clone()).await;
    pool.close().await;
    if let Some(cluster) = cluster.filter(|c| c.started_here()) {
        cluster.stop().await.context("stopping the private PostgreSQL")?;
    }
    outcome
}

async fn command(command: Command, db: &DatabaseArgs, url: &str, pool: sqlx::PgPool) -> Result<ExitCode> {
    let engine = || engine(&ServeArgs::default(), pool.clone());
    match command {
        Command::Serve(args) => serve(*args, db, pool).await?,
        Command::Migrate => println!("migrations applied"),
        Command::DatabaseUrl => println!("{url}"),
        Command::SeedDemo => {
            let (hall, stadium) = demo::seed(&engine()?).await?;
            println!("demo event {hall} ({})", demo::DEMO_EVENT_NAME);
            println!("demo event {stadium} ({})", demo::DEMO_STADIUM_NAME);
            println!("demo staff login: {} / {}", demo::DEMO_STAFF_EMAIL, demo::DEMO_STAFF_PASSWORD);
        }
        Command::SeedStadium { name, sections, lower_rows, upper_rows, floor } => {
            let stadium = demo::Stadium { sections, lower_rows, upper_rows, floor };
            let event = demo::stadium_event(&name, stadium)?;
            let places: i64 = event.sections.iter().map(frontrow_model::NewSection::places).sum();
            let event_id = demo::seed_event(&engine()?, &event).await?;
            println!("stadium event {event_id} ({name}, {places} places)");
        }
        Command::User(UserCommand::Create { email, password, role, name }) => {
            let role: Role = role.parse().map_err(anyhow::Error::msg)?;
            let name = name.unwrap_or_else(|| email.split('@').next().unwrap_or("user").to_owned());
            let user = engine()?.create_user(NewUser { email: &email, password: &password, name: &name, role }).await?;
            println!("created {} {} ({:?})", user.user_id, user.email, user.role);
        }
        Command::User(UserCommand::Bulk { count, prefix, out }) => {
            let engine = engine()?;
            // One shared hash: these accounts sign in by their sessions.
            let hash = frontrow_engine::accounts::hash_password(format!("{prefix}-load-password")).await?;
            let fans = engine.insert_fans(&prefix, count, &hash).await?;
            let store = tower_sessions_sqlx_store::PostgresStore::new(pool.clone());
            let mut lines = String::with_capacity(fans.len() * 96);
            for fan in &fans {
                let cookie = frontrow_session::create_signed_in(&store, fan, tower_sessions::cookie::time::Duration::days(1)).await?;
                lines.push_str(&format!("{}\t{cookie}\n", fan.email));
            }
            std::fs::write(&out, lines).with_context(|| format!("writing {}", out.display()))?;
            println!("{} signed-in fans written to {}", fans.len(), out.display());
        }
        Command::Audit { event } => {
            let report = engine()?.audit(event).await?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            let violations = report.violations();
            if !violations.is_empty() {
                for v in violations {
                    eprintln!("VIOLATION: {v}");
                }
                return Ok(ExitCode::FAILURE);
            }
            println!("audit: no violations");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve(mut args: ServeArgs, db: &DatabaseArgs, pool: sqlx::PgPool) -> Result<()> {
    args.secrets_from_env()?;
    if args.instance_id.is_none() {
        args.instance_id = Some(instance_id_for(&db.data_dir, args.addr));
    }
    if args.secret.is_none() {
        args.secret = Some(load_or_create_secret(&db.data_dir)?);
    }
    let app = Application::build(args, pool).await?;
    println!("frontrow listening on http://{}", app.local_addr());
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            wait_for_signal().await;
            tracing::info!("shutting down");
            shutdown.cancel();
        }
    });
    app.run_until(shutdown).await
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// The same server (host, data dir, address) is the same instance across
/// restarts.
fn instance_id_for(data_dir: &Path, addr: std::net::SocketAddr) -> uuid::Uuid {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
    let name = format!("{}\n{}\n{addr}", host.trim(), dir.display());
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes())
}

/// The signing secret, generated once and kept in the data dir. The file is
/// written whole under a temporary name with mode 0600 from its creation,
/// then linked into place, so no reader ever sees it partial or readable by
/// others, and two servers starting together agree on one secret.
fn load_or_create_secret(data_dir: &Path) -> Result<String> {
    let path = data_dir.join("secret");
    let read = |path: &Path| std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    if let Some(existing) = read(&path) {
        return Ok(existing);
    }
    std::fs::create_dir_all(data_dir)?;
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    let secret = hex::encode(bytes);
    let temporary = data_dir.join(format!(".secret-{}", std::process::id()));
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temporary).with_context(|| format!("creating {}", temporary.display()))?;
        file.write_all(secret.as_bytes())?;
        file.sync_all()?;
    }
    let linked = std::fs::hard_link(&temporary, &path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(secret),
        // Another server made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(&path).context("reading the secret another server wrote"),
        Err(e) => Err(e).with_context(|| format!("writing {}", path.display())),
    }
}
