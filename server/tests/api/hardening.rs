//! Hardening: production defaults that cannot sell for fake money, secrets
//! kept out of `ps` and out of other users' reach.

use std::time::Duration;

use serde_json::json;

use crate::common::*;

/// Runs `frontrow` with `args` and `env` until it exits (or 20 s pass);
/// returns whether it succeeded and what it printed to stderr.
async fn run_frontrow(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_frontrow"));
    cmd.args(args).env("RUST_LOG", "warn").kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(20), cmd.output()).await.expect("frontrow exits").expect("frontrow runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_https_site_without_a_chosen_provider_refuses_to_start() {
    let database_url = fresh_database().await;
    let env = [
        ("DATABASE_URL", database_url.as_str()),
        ("FRONTROW_ADDR", "127.0.0.1:0"),
        ("FRONTROW_SECRET", "a-test-secret-of-some-length"),
        ("FRONTROW_PUBLIC_URL", "https://tickets.example.test"),
    ];
    let (ok, stderr) = run_frontrow(&["serve"], &env).await;
    assert!(!ok, "it started");
    assert!(stderr.contains("FRONTROW_PAYMENT_PROVIDER") && stderr.contains("fake money"), "{stderr}");
    // Chosen explicitly, it starts (checked in-process: the same build step).
    let mut settings = test_settings();
    settings.public_url = Some("https://tickets.example.test".into());
    settings.payment_provider = None;
    let pool = frontrow_server::startup::connect(&database_url, 2).await.unwrap();
    let refused = frontrow_server::startup::Application::build(settings.clone(), pool.clone()).await;
    assert!(refused.is_err());
    settings.payment_provider = Some(frontrow_server::config::ProviderKind::Simulated);
    assert!(frontrow_server::startup::Application::build(settings, pool).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_password_does_not_open_a_site_with_a_public_url() {
    let app = spawn_app().await;
    frontrow_server::demo::seed(&app.engine).await.unwrap();
    let login = json!({ "email": frontrow_server::demo::DEMO_STAFF_EMAIL, "password": frontrow_server::demo::DEMO_STAFF_PASSWORD });
    assert_eq!(app.client().post("/api/v1/auth/login", login.clone()).await.status, 200, "the local demo signs in");
    let database_url = app.database_url.clone();
    app.stop().await;
    let public = spawn_app_on(&database_url, |s| s.public_url = Some("http://tickets.example.test".into())).await;
    let r = public.client().post("/api/v1/auth/login", login).await;
    assert_eq!((r.status, r.body["error"].as_str()), (401, Some("invalid_credentials")), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_come_from_the_environment_or_a_file_never_a_flag() {
    let (ok, stderr) = run_frontrow(&["serve", "--secret", "visible-in-ps-to-everyone"], &[]).await;
    assert!(!ok && stderr.contains("--secret"), "{stderr}");
    let (ok, stderr) = run_frontrow(&["serve", "--payment-api-key", "sk_live_visible"], &[]).await;
    assert!(!ok && stderr.contains("--payment-api-key"), "{stderr}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_secret_is_private_from_its_first_byte() {
    use std::os::unix::fs::PermissionsExt;
    let database_url = fresh_database().await;
    let data_dir = std::env::temp_dir().join(format!("frontrow-secret-{}", uuid::Uuid::new_v4().simple()));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_frontrow"))
        .arg("serve")
        .env("DATABASE_URL", &database_url)
        .env("FRONTROW_DATA_DIR", &data_dir)
        .env("FRONTROW_ADDR", format!("127.0.0.1:{port}"))
        .env_remove("FRONTROW_SECRET")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let secret = data_dir.join("secret");
    eventually(20, "the secret to be written", || async { secret.exists().then_some(()) }).await;
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "secret file mode {mode:o}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap().len(), 64);
    let leftovers: Vec<_> = std::fs::read_dir(&data_dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("secret")], "no temporary file left behind");
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
}

/// Streams up to `total` bytes of chunked body to `path` and answers how
/// much the server took before it closed the connection, and the status if
/// it could still be read.
async fn stream_body(addr: &str, path: &str, total: usize) -> (usize, Option<u16>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n");
    socket.write_all(head.as_bytes()).await.unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, " ".repeat(64 * 1024));
    let mut sent = 0;
    while sent < total {
        match tokio::time::timeout(Duration::from_secs(5), socket.write_all(chunk.as_bytes())).await {
            Ok(Ok(())) => sent += 64 * 1024,
            _ => break,
        }
    }
    let mut answer = vec![0u8; 256];
    let status = match tokio::time::timeout(Duration::from_secs(5), socket.read(&mut answer)).await {
        Ok(Ok(n)) if n > 0 => String::from_utf8_lossy(&answer[..n]).split(' ').nth(1).and_then(|s| s.parse().ok()),
        _ => None,
    };
    (sent, status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_body_on_any_route_is_cut_off_at_the_cap_with_memory_flat() {
    let database_url = fresh_database().await;
    let server = crate::crash::start_server(&database_url, None).await;
    let pid = server.child.id().unwrap();
    let addr = server.base.trim_start_matches("http://").to_owned();
    let event = uuid::Uuid::new_v4();
    let routes = ["/_app/hold", "/api/v1/auth/login", &format!("/api/v1/events/{event}/holds"), "/no/such/route", "/events/whatever", "/admin"];
    let before = rss_kib(pid);
    for route in routes {
        // 1 GiB offered: the server must stop reading long before.
        let (sent, status) = stream_body(&addr, route, 1 << 30).await;
        assert!(sent < 64 << 20, "{route}: the server read {} MiB", sent >> 20);
        assert!(status.is_none_or(|s| s == 413), "{route}: {status:?}");
        // Just over the cap, so the answer can be read: 413.
        let (_, status) = stream_body(&addr, route, 320 * 1024).await;
        assert_eq!(status, Some(413), "{route}");
    }
    let after = rss_kib(pid);
    assert!(after < before + 64 * 1024, "memory grew from {before} KiB to {after} KiB");
    assert_eq!(crate::crash::client_for(&server.base).get("/healthz").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sign_ins_back_off_per_account_from_any_address() {
    let app = spawn_app().await;
    let email = format!("target-{}@example.test", uuid::Uuid::new_v4().simple());
    let fan = app.client();
    assert_eq!(fan.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "T" })).await.status, 201);
    let wrong = json!({ "email": email, "password": "not the password" });
    for n in 0..5 {
        assert_eq!(app.client().post("/api/v1/auth/login", wrong.clone()).await.status, 401, "attempt {n}");
    }
    // Now even the right password waits, from any client, and says how long.
    let r = app.client().post("/api/v1/auth/login", json!({ "email": email.to_uppercase(), "password": PASSWORD })).await;
    assert_eq!((r.status, r.body["error"].as_str()), (429, Some("rate_limited")), "{}", r.body);
    assert!(r.headers.contains_key("retry-after"));
    // The app's sign-in form is held to the same.
    let c = app.client();
    let form = c.send(c.http.post(format!("{}/_app/sign_in", c.base)).form(&[("email", email.as_str()), ("password", PASSWORD)])).await;
    assert_eq!(form.status, 429, "{}", form.body);
    // Other accounts are not affected.
    let other = app.fan().await;
    assert_eq!(other.get("/api/v1/me").await.status, 200);
    // After the wait, the right password works and the count starts over.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(app.client().post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await.status, 200);
    assert_eq!(app.client().post("/api/v1/auth/login", wrong).await.status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_count_an_ipv6_client_by_its_64_and_trust_only_the_configured_proxy() {
    let app = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 1;
        s.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    let login = |forwarded: &'static str| {
        let c = app.client();
        async move {
            c.send(c.http.post(format!("{}/api/v1/auth/login", c.base)).header("x-forwarded-for", forwarded).json(&json!({ "email": "x@example.test", "password": "wrong password" })))
                .await
                .status
        }
    };
    assert_eq!(login("2001:db8:aa:bb::1").await, 401);
    assert_eq!(login("2001:db8:aa:bb::2").await, 429, "another address in the same /64 shares the limit");
    assert_eq!(login("2001:db8:aa:cc::1").await, 401, "another /64 has its own");
    // The client's own claim before the proxy's is not believed.
    assert_eq!(login("203.0.113.9, 2001:db8:aa:bb::3").await, 429);
    app.stop().await;

    let untrusting = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 1;
    })
    .await;
    let c = untrusting.client();
    let send = |forwarded: &'static str| {
        c.send(c.http.post(format!("{}/api/v1/auth/login", c.base)).header("x-forwarded-for", forwarded).json(&json!({ "email": "x@example.test", "password": "wrong password" })))
    };
    assert_eq!(send("198.51.100.1").await.status, 401);
    assert_eq!(send("198.51.100.2").await.status, 429, "without a trusted proxy the header is ignored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_hashing_runs_at_most_one_per_core() {
    let app = spawn_app().await;
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as f64;
    let sampler = {
        let c = app.client();
        tokio::spawn(async move {
            let mut peak = 0.0f64;
            for _ in 0..150 {
                let text = c.http.get(format!("{}/metrics", c.base)).send().await.unwrap().text().await.unwrap();
                let running = text
                    .lines()
                    .find_map(|l| l.strip_prefix("frontrow_password_hashes_running "))
                    .and_then(|v| v.trim().parse::<f64>().ok());
                peak = peak.max(running.unwrap_or(f64::NAN));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            peak
        })
    };
    let signups = (0..24).map(|n| {
        let c = app.client();
        async move {
            let email = format!("flood-{n}-{}@example.test", uuid::Uuid::new_v4().simple());
            c.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "F" })).await.status
        }
    });
    let statuses = futures::future::join_all(signups).await;
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let peak = sampler.await.unwrap();
    assert!(peak >= 1.0 && peak <= cores, "hashes running at once peaked at {peak} with {cores} cores");
}
