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
