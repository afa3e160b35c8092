//! A private PostgreSQL cluster for when no `DATABASE_URL` is given: its own
//! data dir, port and unix-socket dir (no TCP listener, so it never collides
//! with another server on the machine). Created on first use, reused after.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::process::Command;

pub struct PrivateCluster {
    data_dir: PathBuf,
    socket_dir: PathBuf,
    log_file: PathBuf,
    port: u16,
    bin_dir: PathBuf,
    /// Set when running as root: PostgreSQL refuses root, so it runs as this user.
    run_as: Option<String>,
    started_here: bool,
}

impl PrivateCluster {
    /// Creates the cluster if needed and starts it if it is not running.
    pub async fn ensure(root: &Path, port: u16) -> Result<Self> {
        std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
        let root = std::fs::canonicalize(root)?;
        let base = root.join("pg");
        std::fs::create_dir_all(&base)?;
        let _lock = DirLock::acquire(&base.join("setup.lock")).await?;

        let socket_dir = socket_dir_for(&base);
        std::fs::create_dir_all(&socket_dir)?;
        let bin_dir = find_or_install_binaries().await?;
        let run_as = if is_root().await { Some(ensure_postgres_user().await?) } else { None };
        let cluster = Self {
            data_dir: base.join("data"),
            socket_dir,
            log_file: base.join("postgres.log"),
            port,
            bin_dir,
            run_as,
            started_here: false,
        };
        if let Some(user) = &cluster.run_as {
            run(Command::new("chown").arg("-R").arg(user).arg(&base)).await?;
            run(Command::new("chown").arg(user).arg(&cluster.socket_dir)).await?;
        }
        if !cluster.data_dir.join("PG_VERSION").exists() {
            cluster.init().await?;
        }
        let mut cluster = cluster;
        if !cluster.is_running().await {
            cluster.start().await?;
            cluster.started_here = true;
        }
        Ok(cluster)
    }

    /// URL of a database in this cluster.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@localhost/{database}?host={}&port={}", self.socket_dir.display(), self.port)
    }

    /// Creates `database` if it does not exist yet.
    pub async fn create_database(&self, database: &str) -> Result<()> {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres")).await?;
        let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
            .bind(database)
            .fetch_optional(&mut conn)
            .await?;
        if exists.is_none() {
            sqlx::query(&format!("CREATE DATABASE \"{}\"", database.replace('"', "")))
                .execute(&mut conn)
                .await?;
        }
        Ok(())
    }

    pub fn started_here(&self) -> bool {
        self.started_here
    }

    /// Stops the cluster cleanly (fast shutdown: sessions end, data is flushed).
    pub async fn stop(&self) -> Result<()> {
        self.pg_ctl(&["stop", "-m", "fast", "-w"]).await
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin_dir.join(program);
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    async fn init(&self) -> Result<()> {
        tracing::info!(data_dir = %self.data_dir.display(), "creating private PostgreSQL cluster");
        let mut c = self.command("initdb");
        c.arg("-D").arg(&self.data_dir).args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8"]);
        run(&mut c).await?;
        let settings = format!(
            "\n# frontrow private cluster\nlisten_addresses = ''\nport = {}\nunix_socket_directories = '{}'\n\
             max_connections = 400\nshared_buffers = 256MB\n",
            self.port,
            self.socket_dir.display()
        );
        let conf = self.data_dir.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf)?;
        text.push_str(&settings);
        std::fs::write(&conf, text)?;
        Ok(())
    }

    async fn is_running(&self) -> bool {
        let mut c = self.command("pg_ctl");
        c.arg("status").arg("-D").arg(&self.data_dir).stdout(Stdio::null()).stderr(Stdio::null());
        matches!(c.status().await, Ok(s) if s.success())
    }

    async fn start(&self) -> Result<()> {
        tracing::info!(socket_dir = %self.socket_dir.display(), port = self.port, "starting private PostgreSQL");
        let log = self.log_file.to_string_lossy().into_owned();
        self.pg_ctl(&["start", "-w", "-t", "60", "-l", &log]).await
    }

    async fn pg_ctl(&self, args: &[&str]) -> Result<()> {
        let mut c = self.command("pg_ctl");
        c.arg("-D").arg(&self.data_dir).args(args);
        run(&mut c).await
    }
}

/// Unix socket paths are limited to about 100 bytes; deep checkouts fall
/// back to a short per-cluster directory under /tmp.
fn socket_dir_for(base: &Path) -> PathBuf {
    let preferred = base.join("sock");
    if preferred.as_os_str().len() <= 80 {
        return preferred;
    }
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    base.hash(&mut h);
    PathBuf::from(format!("/tmp/frontrow-pg-{:016x}", h.finish()))
}

async fn run(c: &mut Command) -> Result<()> {
    let out = c.stdin(Stdio::null()).output().await.with_context(|| format!("running {c:?}"))?;
    if !out.status.success() {
        bail!("{c:?} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

async fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().await;
    matches!(out, Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "0")
}

async fn ensure_postgres_user() -> Result<String> {
    let exists = Command::new("id").arg("postgres").stdout(Stdio::null()).stderr(Stdio::null()).status().await?;
    if !exists.success() {
        run(Command::new("useradd").args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"])).await?;
    }
    Ok("postgres".to_owned())
}

fn find_binaries() -> Option<PathBuf> {
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

/// Finds initdb/pg_ctl, installing Debian's `postgresql` package if missing.
async fn find_or_install_binaries() -> Result<PathBuf> {
    if let Some(dir) = find_binaries() {
        return Ok(dir);
    }
    tracing::info!("PostgreSQL server binaries not found; installing Debian's postgresql package");
    run(Command::new("apt-get").arg("update")).await?;
    run(Command::new("apt-get").args(["install", "-y", "postgresql"]).env("DEBIAN_FRONTEND", "noninteractive")).await?;
    find_binaries().context("postgresql installed but initdb still not found")
}

/// A lock between processes setting up the same cluster at once (a test
/// run and a server, say): a directory that only one can create.
struct DirLock(PathBuf);

impl DirLock {
    async fn acquire(path: &Path) -> Result<Self> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match std::fs::create_dir(path) {
                Ok(()) => return Ok(Self(path.to_owned())),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .map(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(90))
                        .unwrap_or(false);
                    if stale {
                        let _ = std::fs::remove_dir(path);
                    } else if Instant::now() > deadline {
                        bail!("timed out waiting for {}", path.display());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}
