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

/// A rate-limited route that needs a session, so it answers 401 at once.
const UNSIGNED_JOIN: &str = "/api/v1/events/00000000-0000-0000-0000-000000000000/queue";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_count_an_ipv6_client_by_its_64_and_trust_only_the_configured_proxy() {
    let app = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 1;
        s.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    // A limited call that answers at once (a queue join without a session:
    // 401), so no request waits long enough for the bucket to refill; a
    // login would hash a password first.
    let join = |forwarded: &'static str| {
        let c = app.client();
        async move { c.send(c.http.post(format!("{}{UNSIGNED_JOIN}", c.base)).header("x-forwarded-for", forwarded)).await.status }
    };
    assert_eq!(join("2001:db8:aa:bb::1").await, 401);
    assert_eq!(join("2001:db8:aa:bb::2").await, 429, "another address in the same /64 shares the limit");
    assert_eq!(join("2001:db8:aa:cc::1").await, 401, "another /64 has its own");
    // The client's own claim before the proxy's is not believed.
    assert_eq!(join("203.0.113.9, 2001:db8:aa:bb::3").await, 429);
    app.stop().await;

    let untrusting = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 1;
    })
    .await;
    let c = untrusting.client();
    let send = |forwarded: &'static str| c.send(c.http.post(format!("{}{UNSIGNED_JOIN}", c.base)).header("x-forwarded-for", forwarded));
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
                let running =
                    text.lines().find_map(|l| l.strip_prefix("frontrow_password_hashes_running ")).and_then(|v| v.trim().parse::<f64>().ok());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crafted_ids_in_page_paths_are_not_found_or_redirected_never_an_error() {
    let app = spawn_app().await;
    let (fan, staff, anonymous) = (app.fan().await, app.staff().await, app.client());
    let pages = [
        "/events/{}",
        "/events/{}/queue",
        "/checkouts/{}",
        "/bookings/{}",
        "/bookings/{}/print",
        "/admin/events/{}",
        "/admin/events/{}/seats",
        "/admin/events/{}/dashboard",
        "/admin/events/{}/audit",
        "/admin/events/{}/waiting-room",
        "/admin/bookings/{}",
    ];
    let crafted = ["%0A", "%0D%0ALocation:%20http://evil.example", "%00", "%1B%5B31m", "%7F", "x%0Ay", "%E2%80%AE", "..%2F..%2Fetc"];
    for who in [&anonymous, &fan, &staff] {
        for page in pages {
            for id in crafted {
                let path = page.replace("{}", id);
                let r = who.http.get(format!("{}{path}", who.base)).header("accept", "text/html").send().await.unwrap();
                let status = r.status().as_u16();
                assert!(status == 404 || (300..400).contains(&status), "{path}: {status}");
                if let Some(location) = r.headers().get("location") {
                    assert!(!location.as_bytes().iter().any(|b| b.is_ascii_control()), "{path}: redirected to {location:?}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_the_security_headers_and_pages_a_nonce_policy() {
    let app = spawn_app().await;
    let event = app.event(1, 4, 300, 4).await;
    let fan = app.fan().await;
    for path in ["/", &format!("/events/{event}"), "/signin", "/api/v1/events", "/healthz", "/no/such/page"] {
        let r = fan.http.get(format!("{}{path}", fan.base)).send().await.unwrap();
        let h = r.headers().clone();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert!(h.contains_key("referrer-policy"), "{path}");
        assert!(!h.contains_key("strict-transport-security"), "{path}: no HSTS over plain http");
        let policy = h["content-security-policy"].to_str().unwrap().to_owned();
        assert!(policy.contains("frame-ancestors 'none'"), "{path}: {policy}");
        let is_html = h["content-type"].to_str().unwrap().starts_with("text/html");
        let body = r.text().await.unwrap();
        if is_html {
            assert!(!policy.contains("unsafe-inline"), "{path}: {policy}");
            // Every inline script carries the nonce the policy names.
            for script in body.split("<script").skip(1) {
                let tag = &script[..script.find('>').unwrap()];
                if tag.contains("src=") {
                    continue;
                }
                let nonce = tag
                    .split("nonce=\"")
                    .nth(1)
                    .and_then(|n| n.split('"').next())
                    .unwrap_or_else(|| panic!("{path}: inline script without a nonce: {tag}"));
                assert!(policy.contains(&format!("'nonce-{nonce}'")), "{path}: nonce {nonce} not in {policy}");
            }
        } else {
            assert!(policy.contains("default-src 'none'"), "{path}: {policy}");
        }
    }
    app.stop().await;

    let public = spawn_app_with(|s| {
        s.public_url = Some("https://tickets.example.test".into());
        s.payment_provider = Some(frontrow_server::config::ProviderKind::Simulated);
    })
    .await;
    let r = public.client().get("/").await;
    assert!(r.headers["strict-transport-security"].to_str().unwrap().starts_with("max-age="));
}

/// A one-connection SMTP sink: answers a client as a server would and hands
/// back the message it was given.
async fn smtp_sink(listener: tokio::net::TcpListener) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (socket, _) = listener.accept().await.unwrap();
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 sink ESMTP\r\n").await.unwrap();
    let mut message = String::new();
    let mut in_data = false;
    while let Ok(Some(line)) = lines.next_line().await {
        if in_data {
            if line == "." {
                in_data = false;
                write.write_all(b"250 queued\r\n").await.unwrap();
            } else {
                message.push_str(&line);
                message.push('\n');
            }
            continue;
        }
        let verb = line.split(' ').next().unwrap_or("").to_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250 sink\r\n",
            "DATA" => {
                in_data = true;
                b"354 go on\r\n"
            }
            "QUIT" => {
                write.write_all(b"221 bye\r\n").await.unwrap();
                break;
            }
            _ => b"250 ok\r\n",
        };
        write.write_all(reply).await.unwrap();
    }
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_goes_out_over_smtp_when_a_server_is_configured() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let sink = tokio::spawn(smtp_sink(listener));
    let app = spawn_app_with(move |s| {
        s.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
        s.mail_from = "frontrow <tickets@example.test>".into();
    })
    .await;
    let fan = app.fan().await;
    assert_eq!(fan.post("/api/v1/me/email-code", json!({})).await.status, 202);
    let message = tokio::time::timeout(Duration::from_secs(10), sink).await.unwrap().unwrap();
    // The code is in the body only: subjects are logged.
    let subject = message.lines().find(|l| l.starts_with("Subject: ")).unwrap_or_default();
    assert_eq!(subject.trim(), "Subject: Your frontrow verification code", "{message}");
    assert!(message.contains("your code is "), "{message}");
    assert!(message.contains("From: frontrow <tickets@example.test>"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_server_that_hangs_answers_503_and_costs_the_fan_no_code() {
    // Takes connections and never says a word, as a mail server that hangs.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let _silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let app = spawn_app_with(move |s| s.smtp_url = Some(format!("smtp://127.0.0.1:{port}"))).await;
    let fan = app.fan().await;
    for attempt in ["first", "at once again"] {
        let r = fan.post("/api/v1/me/email-code", json!({})).await;
        assert_error(attempt, &r, 503, "unavailable");
    }
    // Neither attempt was counted: no wait before the next, no code of the hour used.
    let email = fan.get("/api/v1/me").await.body["email"].as_str().expect("email").to_owned();
    let (sent_in_window, can_ask): (i32, bool) = sqlx::query_as(
        "SELECT c.sent_in_window, c.sent_at <= now() - interval '30 seconds' FROM email_codes c JOIN users u USING (user_id) WHERE u.email = $1",
    )
    .bind(&email)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((sent_in_window, can_ask), (0, true));
}

#[cfg(unix)]
fn mode_and_owner(path: &std::path::Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).unwrap();
    assert!(m.is_dir() && !m.file_type().is_symlink(), "{} is a plain directory", path.display());
    (m.mode() & 0o777, m.uid())
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next().map(|u| u == "0"))
        .unwrap_or(false)
}

/// `psql` as `user`; answers whether it could run a query.
async fn psql_as(user: &str, url: &str) -> bool {
    let status = tokio::process::Command::new("runuser")
        .args(["-u", user, "--", "psql", url, "-Atc", "SELECT 1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    status.success()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_private_cluster_admits_only_its_own_users() {
    use frontrow_server::pgcluster::PrivateCluster;
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/private-pg-test");
    let cluster = PrivateCluster::ensure(&dir, 54336).await.unwrap();
    let data = cluster.location().join("data");
    let hba = std::fs::read_to_string(data.join("pg_hba.conf")).unwrap();
    let rules: Vec<&str> = hba.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')).collect();
    assert_eq!(rules, ["local all all peer map=frontrow"], "local peer identity only, no trust, no TCP");
    let (data_mode, owner) = mode_and_owner(&data);
    assert_eq!(data_mode, 0o700);
    let (location_mode, _) = mode_and_owner(cluster.location());
    assert_eq!(location_mode, 0o700);
    let url = cluster.url("postgres");
    let socket_dir = url.split("host=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let (socket_mode, socket_owner) = mode_and_owner(std::path::Path::new(&socket_dir));
    assert_eq!((socket_mode, socket_owner), (0o700, owner), "the socket dir is the cluster user's alone");
    // Its own users get in.
    let pool = frontrow_server::startup::connect(&url, 1).await.expect("frontrow's user connects");
    pool.close().await;
    if running_as_root() {
        // Another local user does not, whatever they try.
        let _ = tokio::process::Command::new("useradd").args(["--system", "--no-create-home", "frontrow-probe"]).status().await;
        assert!(!psql_as("frontrow-probe", &url).await, "another local user connected");
        assert!(!psql_as("frontrow-probe", &format!("{url}&user=frontrow-probe")).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_refuses_a_link_in_place_of_its_directory() {
    use frontrow_server::pgcluster::PrivateCluster;
    let root = std::env::temp_dir().join(format!("frontrow-link-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&root).unwrap();
    let elsewhere = std::env::temp_dir().join(format!("frontrow-target-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("pg")).unwrap();
    let refused = PrivateCluster::ensure(&root, 54337).await;
    assert!(refused.is_err(), "a link where the cluster's directory goes was followed");
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_in_roots_private_home_still_gets_its_cluster() {
    use frontrow_server::pgcluster::PrivateCluster;
    use std::os::unix::fs::PermissionsExt;
    if !running_as_root() {
        return;
    }
    // Like /root: a home only its owner may enter.
    let home = std::env::temp_dir().join(format!("frontrow-home-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(home.join("checkout")).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let cluster = PrivateCluster::ensure(&home.join("checkout/.data"), 54338).await.expect("a cluster despite the private home");
    assert!(cluster.location().starts_with("/var/lib/frontrow/"), "{}", cluster.location().display());
    let pool = frontrow_server::startup::connect(&cluster.url("postgres"), 1).await.unwrap();
    let one: i32 = sqlx::query_scalar("SELECT 1").fetch_one(&pool).await.unwrap();
    assert_eq!(one, 1);
    pool.close().await;
    cluster.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(cluster.location());
    let _ = std::fs::remove_dir_all(&home);
}

/// Under more work than it takes on, the server turns requests away at the
/// door at once (503 `overloaded`, Retry-After, nothing done) instead of
/// letting them wait for a client's timeout.
#[tokio::test]
async fn work_beyond_the_bound_is_answered_overloaded_at_once_and_does_nothing() {
    let app = spawn_app_with(|s| {
        s.max_in_flight = Some(1);
        s.shed_after_ms = 50;
    })
    .await;
    let event_id = app.event(1, 4, 300, 4).await;
    let (first, second) = (app.fan().await, app.fan().await);
    // A seat row locked by someone else keeps the first hold, and with it
    // the one sale slot, busy.
    let mut blocker = app.pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM seats WHERE event_id = $1 AND seat_id = 'A-1-1' FOR UPDATE")
        .bind(event_id)
        .execute(&mut *blocker)
        .await
        .expect("lock");
    let busy = tokio::spawn(async move { first.hold(event_id, &["A-1-1"]).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!busy.is_finished(), "the first hold waits on the locked row");

    let started = std::time::Instant::now();
    let turned_away = second.hold(event_id, &["A-1-2"]).await;
    let waited = started.elapsed();
    assert_error("a hold beyond the bound", &turned_away, 503, "overloaded");
    assert_eq!(turned_away.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("2"));
    assert_eq!(turned_away.body["retry_after"], json!(2));
    assert!(waited < Duration::from_millis(1_000), "answered after {waited:?}, not at once");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-2").await, "available", "nothing was done");
    // Reads are not bounded: they still answer.
    assert_eq!(second.get(&format!("/api/v1/events/{event_id}")).await.status, 200);

    blocker.rollback().await.expect("unlock");
    let held = busy.await.expect("first hold");
    assert_eq!(held.status, 201, "{}", held.body);
    let now_held = second.hold(event_id, &["A-1-2"]).await;
    assert_eq!(now_held.status, 201, "once the slot is free: {}", now_held.body);
    app.assert_invariants().await;
    app.stop().await;
}
