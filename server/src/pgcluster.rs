//! A private PostgreSQL cluster for when no `DATABASE_URL` is given: its own
//! data dir, port and unix-socket dir (no TCP listener, so it never collides
//! with another server on the machine). Created on first use, reused after.
//!
//! Private means private: its directories are created with mode 0700 by
//! the user they belong to (never a `chown` that could follow a link), and
//! it admits only local connections by peer identity, mapped from the user
//! who runs frontrow (and root) to the cluster's `postgres` role: no other
//! local user gets in, with or without a password.
//!
//! Run as root, PostgreSQL runs as the `postgres` system user. If that user
//! cannot reach the data dir (a checkout in root's home, mode 0700), the
//! cluster lives in `/var/lib/frontrow/<name of the data dir>-<hash>`
//! instead, which `location()` reports.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::process::Command;

/// Where clusters live when the `postgres` user cannot reach the data dir.
const SHARED_ROOT: &str = "/var/lib/frontrow";

pub struct PrivateCluster {
    base: PathBuf,
    data_dir: PathBuf,
    socket_dir: PathBuf,
    log_file: PathBuf,
    port: u16,
    bin_dir: PathBuf,
    /// Set when running as root: PostgreSQL refuses root, so it runs as this user.
    run_as: Option<User>,
    started_here: bool,
}

/// A system user, by name and ids.
#[derive(Clone, Debug)]
struct User {
    name: String,
    uid: u32,
    gid: u32,
}

impl PrivateCluster {
    /// Creates the cluster if needed and starts it if it is not running.
    pub async fn ensure(root: &Path, port: u16) -> Result<Self> {
        std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
        let root = std::fs::canonicalize(root)?;
        let run_as = if current_uid() == 0 { Some(ensure_postgres_user().await?) } else { None };
        let base = match &run_as {
            Some(user) if !reachable(user, &root).await => relocated(&root)?,
            _ => root.join("pg"),
        };
        private_dir(&base, run_as.as_ref())?;
        let _lock = DirLock::acquire(&base.join("setup.lock")).await?;

        let socket_dir = socket_dir_for(&base, run_as.as_ref())?;
        let bin_dir = find_or_install_binaries().await?;
        let mut cluster =
            Self { data_dir: base.join("data"), log_file: base.join("postgres.log"), base, socket_dir, port, bin_dir, run_as, started_here: false };
        if !cluster.data_dir.join("PG_VERSION").exists() {
            cluster.init().await?;
        }
        cluster.write_access_rules()?;
        if cluster.is_running().await {
            // Rules written over an older cluster's take effect now.
            cluster.pg_ctl(&["reload"]).await?;
        } else {
            cluster.start().await?;
            cluster.started_here = true;
        }
        Ok(cluster)
    }

    /// Where the cluster's files are (printed at start: it may not be under
    /// the data dir).
    pub fn location(&self) -> &Path {
        &self.base
    }

    /// URL of a database in this cluster.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@localhost/{database}?host={}&port={}", self.socket_dir.display(), self.port)
    }

    /// Creates `database` if it does not exist yet.
    pub async fn create_database(&self, database: &str) -> Result<()> {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres")).await?;
        let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1").bind(database).fetch_optional(&mut conn).await?;
        if exists.is_none() {
            sqlx::query(&format!("CREATE DATABASE \"{}\"", database.replace('"', ""))).execute(&mut conn).await?;
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
                c.arg("-u").arg(&user.name).arg("--").arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    async fn init(&self) -> Result<()> {
        tracing::info!(data_dir = %self.data_dir.display(), "creating private PostgreSQL cluster");
        let mut c = self.command("initdb");
        c.arg("-D").arg(&self.data_dir).args(["--auth-local=peer", "--auth-host=reject", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8"]);
        run(&mut c).await?;
        let settings = format!(
            "\n# frontrow private cluster\nlisten_addresses = ''\nport = {}\nunix_socket_permissions = 0700\n\
             max_connections = 400\nshared_buffers = 256MB\n",
            self.port,
        );
        let conf = self.data_dir.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf)?;
        text.push_str(&settings);
        std::fs::write(&conf, text)?;
        Ok(())
    }

    /// Who may connect: local sockets only, by peer identity, the user
    /// running frontrow (and root) as `postgres`. Rewritten at every start,
    /// so a cluster made by an older frontrow is brought in line.
    fn write_access_rules(&self) -> Result<()> {
        let me = current_user_name();
        let mut map = format!("# frontrow: who may connect, as which role\nfrontrow {me} postgres\n");
        if let Some(user) = &self.run_as {
            map.push_str(&format!("frontrow {} postgres\n", user.name));
        }
        let hba = "# frontrow private cluster: local sockets only, by peer identity (see pg_ident.conf)\n\
                   local all all peer map=frontrow\n";
        for (name, text) in [("pg_ident.conf", map.as_str()), ("pg_hba.conf", hba)] {
            let path = self.data_dir.join(name);
            // Written in place: the file keeps its owner and mode (0600).
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }

    async fn is_running(&self) -> bool {
        let mut c = self.command("pg_ctl");
        c.arg("status").arg("-D").arg(&self.data_dir).stdout(Stdio::null()).stderr(Stdio::null());
        matches!(c.status().await, Ok(s) if s.success())
    }

    async fn start(&self) -> Result<()> {
        tracing::info!(location = %self.base.display(), socket_dir = %self.socket_dir.display(), port = self.port, "starting private PostgreSQL");
        let log = self.log_file.to_string_lossy().into_owned();
        let options = format!("-k {}", self.socket_dir.display());
        self.pg_ctl(&["start", "-w", "-t", "60", "-l", &log, "-o", &options]).await
    }

    async fn pg_ctl(&self, args: &[&str]) -> Result<()> {
        let mut c = self.command("pg_ctl");
        c.arg("-D").arg(&self.data_dir).args(args);
        run(&mut c).await
    }
}

fn current_uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX)
}

fn current_user_name() -> String {
    let uid = current_uid();
    passwd_entry(|fields| fields[2] == uid.to_string()).map_or_else(|| uid.to_string(), |u| u.name)
}

/// A line of /etc/passwd that `matches` (its fields split on ':').
fn passwd_entry(matches: impl Fn(&[&str]) -> bool) -> Option<User> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() > 3 && matches(f))
        .and_then(|f| Some(User { name: f[0].to_owned(), uid: f[2].parse().ok()?, gid: f[3].parse().ok()? }))
}

/// Creates `dir` (and its missing parents) for `owner` (the current user
/// when `None`), mode 0700, or checks that the one already there is a real
/// directory of that owner that nobody else can write to or enter.
fn private_dir(dir: &Path, owner: Option<&User>) -> Result<()> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {
            if let Some(user) = owner {
                // Just made by us, so not a link: give it to the cluster's user.
                std::os::unix::fs::lchown(dir, Some(user.uid), Some(user.gid))
                    .with_context(|| format!("handing {} to {}", dir.display(), user.name))?;
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let want_uid = owner.map_or_else(current_uid, |u| u.uid);
    if meta.file_type().is_symlink() || !meta.is_dir() {
        bail!("{} is not a plain directory (a link?): refusing to use it", dir.display());
    }
    if meta.uid() != want_uid {
        if owner.is_some() && current_uid() == 0 && meta.uid() == 0 {
            // Made by an older frontrow as root: hand the directory itself
            // over (not recursively, and never through a link).
            std::os::unix::fs::lchown(dir, owner.map(|u| u.uid), owner.map(|u| u.gid))?;
        } else {
            bail!("{} belongs to uid {}, not {want_uid}: refusing to use it", dir.display(), meta.uid());
        }
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Can `user` enter and write `dir`'s parent chain, i.e. keep a cluster in it?
async fn reachable(user: &User, dir: &Path) -> bool {
    let status = Command::new("runuser")
        .arg("-u")
        .arg(&user.name)
        .args(["--", "test", "-x"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    matches!(status, Ok(s) if s.success())
}

/// A home for the cluster of `data_dir` that the `postgres` user owns:
/// `/var/lib/frontrow/<name>-<hash of the path>` (the parent made by root,
/// mode 0755, writable by root only).
fn relocated(data_dir: &Path) -> Result<PathBuf> {
    let shared = Path::new(SHARED_ROOT);
    match std::fs::DirBuilder::new().mode(0o755).create(shared) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {SHARED_ROOT}")),
    }
    let meta = std::fs::symlink_metadata(shared)?;
    if meta.file_type().is_symlink() || !meta.is_dir() || meta.uid() != 0 || meta.permissions().mode() & 0o022 != 0 {
        bail!("{SHARED_ROOT} must be a directory of root that only root can write to");
    }
    let name: String = data_dir
        .iter()
        .filter_map(|c| c.to_str())
        .filter(|c| *c != "/" && !c.starts_with('.'))
        .last()
        .unwrap_or("frontrow")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(40)
        .collect();
    let place = shared.join(format!("{name}-{:016x}", path_hash(data_dir)));
    tracing::info!(data_dir = %data_dir.display(), cluster = %place.display(), "the postgres user cannot reach the data dir: the private cluster lives elsewhere");
    Ok(place)
}

fn path_hash(path: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    h.finish()
}

/// Unix socket paths are limited to about 100 bytes: `base/sock` when it is
/// short enough, else a directory under /tmp with a random name (no other
/// user can make it first), remembered in `base/socket-dir`.
fn socket_dir_for(base: &Path, owner: Option<&User>) -> Result<PathBuf> {
    let preferred = base.join("sock");
    if preferred.as_os_str().len() <= 80 {
        private_dir(&preferred, owner)?;
        return Ok(preferred);
    }
    let record = base.join("socket-dir");
    if let Ok(recorded) = std::fs::read_to_string(&record) {
        let recorded = PathBuf::from(recorded.trim());
        if recorded.starts_with("/tmp/frontrow-pg-") && private_dir(&recorded, owner).is_ok() {
            return Ok(recorded);
        }
    }
    for _ in 0..16 {
        let candidate = PathBuf::from(format!("/tmp/frontrow-pg-{}", hex::encode(rand::random::<[u8; 8]>())));
        match std::fs::DirBuilder::new().mode(0o700).create(&candidate) {
            Ok(()) => {
                if let Some(user) = owner {
                    std::os::unix::fs::lchown(&candidate, Some(user.uid), Some(user.gid))?;
                }
                std::fs::write(&record, candidate.to_string_lossy().as_bytes())?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", candidate.display())),
        }
    }
    bail!("could not create a socket directory under /tmp")
}

async fn run(c: &mut Command) -> Result<()> {
    let out = c.stdin(Stdio::null()).output().await.with_context(|| format!("running {c:?}"))?;
    if !out.status.success() {
        bail!("{c:?} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

async fn ensure_postgres_user() -> Result<User> {
    if let Some(user) = passwd_entry(|f| f[0] == "postgres") {
        return Ok(user);
    }
    run(Command::new("useradd").args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"])).await?;
    passwd_entry(|f| f[0] == "postgres").context("the postgres user was created but is not in /etc/passwd")
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
