//! Building and running the application: database, engine, background tasks,
//! router. Tests spawn it exactly as `frontrow serve` does.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use axum::http::{HeaderName, Request};
use axum::response::IntoResponse;
use axum::Router;
use frontrow_engine::payment::{HttpProvider, SimulatedProvider, SimulatedSettings};
use frontrow_engine::{Engine, EngineSettings, PaymentProvider};
use frontrow_model::UserId;
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;

use crate::api;
use crate::api::error::AppError;
use crate::config::{ProviderKind, ServeArgs, Switch};
use crate::state::AppState;
use crate::tasks;
use crate::tickets;
use crate::waiting_room;

/// Runs each request in a task of its own that goes on when its client
/// hangs up: hyper drops a request's future on disconnect, and work cut off
/// between two statements (a claimed idempotency key, a half-begun
/// transaction, a session half-saved) would be left for a lease to end. A
/// retry now finds the first request's answer instead.
async fn run_to_completion(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use tracing::Instrument;
    match tokio::spawn(next.run(request).in_current_span()).await {
        Ok(response) => response,
        Err(_) => AppError::internal().into_response(),
    }
}

/// Sessions kept in memory per instance (a few hundred bytes each).
const SESSION_CACHE_ENTRIES: u64 = 200_000;

/// How long a request waits for a database connection before answering 503
/// (while the database is down, connecting fails and is retried until then).
pub const DB_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// A session left idle inside a transaction for this long is ended by
/// PostgreSQL: nothing of ours keeps one open across a wait (payments run
/// outside any), so such a session is a leak, and its locks would stall sales.
const IDLE_IN_TRANSACTION_TIMEOUT: &str = "60s";

pub async fn connect(database_url: &str, max_connections: u32) -> Result<PgPool> {
    let options = PgConnectOptions::from_str(database_url)
        .context("reading the database URL")?
        .options([("idle_in_transaction_session_timeout", IDLE_IN_TRANSACTION_TIMEOUT)]);
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(DB_ACQUIRE_TIMEOUT)
        // The pool pings every connection it takes back, so one handed out
        // again within a second needs no second ping (see
        // `trusted_without_ping`); an idle one, or one from before the
        // database was last found away, is pinged and replaced if dead.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if !frontrow_engine::db::trusted_without_ping(meta.idle_for) {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        // A connection must never be lent out inside someone else's
        // transaction: one that comes back inside a block is closed, which
        // makes PostgreSQL roll the block back.
        .after_release(|conn, _meta| {
            Box::pin(async move {
                let inside = frontrow_engine::db::inside_transaction(conn).await?;
                if inside {
                    metrics::counter!(CONNECTIONS_RETURNED_IN_TRANSACTION).increment(1);
                    tracing::error!("a database connection came back to the pool inside a transaction: closed");
                }
                Ok(!inside)
            })
        })
        .connect_with(options)
        .await
        .context("connecting to PostgreSQL")
}

/// The counter of connections [`connect`]'s pool closed for coming back
/// inside a transaction (tests read it; it should stay at zero).
pub const CONNECTIONS_RETURNED_IN_TRANSACTION: &str = "frontrow_db_connections_returned_in_transaction_total";

pub async fn migrate(pool: &PgPool) -> Result<()> {
    frontrow_engine::MIGRATOR.run(pool).await.context("running migrations")?;
    let store = PostgresStore::new(pool.clone());
    store.migrate().await.context("creating the session table")?;
    Ok(())
}

/// The process-wide Prometheus recorder (a second install would fail, and
/// tests build many apps in one process).
fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| PrometheusBuilder::new().install_recorder().unwrap_or_else(|_| PrometheusBuilder::new().build_recorder().handle())).clone()
}

fn payment_provider(settings: &ServeArgs, pool: &PgPool) -> Result<Arc<dyn PaymentProvider>> {
    Ok(match settings.provider()? {
        ProviderKind::Simulated => {
            Arc::new(SimulatedProvider::new(pool.clone(), SimulatedSettings { slow_settle: Duration::from_millis(settings.sim_slow_ms) }))
        }
        ProviderKind::Http => {
            let url = settings.payment_api_url.clone().context("FRONTROW_PAYMENT_API_URL is required for the http provider")?;
            let key = settings.payment_api_key.clone().unwrap_or_default();
            Arc::new(HttpProvider::new(url, key, settings.checkout_wait() + Duration::from_secs(2)).map_err(anyhow::Error::msg)?)
        }
    })
}

/// The engine as the settings describe it (the server and the CLI share it).
pub fn engine(settings: &ServeArgs, pool: PgPool) -> Result<Engine> {
    let engine_settings = EngineSettings {
        admission_secret: settings.secret.as_deref().unwrap_or_default().as_bytes().into(),
        #[cfg(debug_assertions)]
        fail_point: settings.failpoint,
        checkout_wait: settings.checkout_wait(),
        payment_grace: Duration::from_secs(settings.payment_grace_secs),
        payment_watch: Duration::from_secs(settings.payment_watch_secs),
        instance_id: settings.instance_id.unwrap_or_else(uuid::Uuid::new_v4),
        // A request must finish its provider call well within its claim on the key.
        checkout_lease: EngineSettings::default().checkout_lease.max(settings.checkout_wait() * 3),
        ..EngineSettings::default()
    };
    let provider = payment_provider(settings, &pool)?;
    let mailer: Arc<dyn frontrow_engine::accounts::mail::Mailer> = match &settings.smtp_url {
        Some(url) => Arc::new(crate::mail::SmtpMailer::new(url, &settings.mail_from)?),
        None => Arc::new(frontrow_engine::accounts::mail::FileMailer::new(settings.mail_outbox.clone())),
    };
    Ok(Engine::new(pool, provider, mailer, engine_settings))
}

pub struct Application {
    local_addr: SocketAddr,
    listener: TcpListener,
    router: Router,
    state: AppState,
}

impl Application {
    /// Binds the listener (port 0 picks a free one) and wires everything up.
    pub async fn build(settings: ServeArgs, pool: PgPool) -> Result<Self> {
        // An empty key would let anyone forge admission tokens.
        anyhow::ensure!(
            settings.secret.as_deref().is_some_and(|s| s.len() >= 16),
            "FRONTROW_SECRET must be set to at least 16 characters (or left unset for a generated one)"
        );
        settings.check_demo()?;
        let mut settings = settings;
        let instance_id = *settings.instance_id.get_or_insert_with(uuid::Uuid::new_v4);
        let engine = engine(&settings, pool.clone())?;
        let freed = engine.start_instance().await?;
        if freed > 0 {
            tracing::info!(freed, "took back the checkout claims of this instance's previous life");
        }
        if settings.public_url.is_some() && engine.disable_if_password(crate::demo::DEMO_STAFF_EMAIL, crate::demo::DEMO_STAFF_PASSWORD).await? {
            // The demo's password is printed for anyone to read.
            tracing::warn!(
                email = crate::demo::DEMO_STAFF_EMAIL,
                "the demo staff account still had the demo password: disabled, as this site has a public URL"
            );
        }
        let rate_limiter = (settings.rate_limits == Switch::On).then(|| {
            let per_second = NonZeroU32::new(settings.rate_per_second.max(1)).unwrap_or(NonZeroU32::MIN);
            Arc::new(governor::RateLimiter::keyed(governor::Quota::per_second(per_second)))
        });
        let fan_limiter = (settings.rate_limits == Switch::On).then(|| {
            let per_second = NonZeroU32::new(settings.rate_per_second.max(1)).unwrap_or(NonZeroU32::MIN);
            Arc::new(governor::RateLimiter::keyed(governor::Quota::per_second(per_second)))
        });
        let account_limiter = (settings.rate_limits == Switch::On).then(|| {
            let per_minute = NonZeroU32::new(settings.account_attempts_per_minute.max(1)).unwrap_or(NonZeroU32::MIN);
            let burst = per_minute.saturating_mul(NonZeroU32::MIN.saturating_add(1));
            Arc::new(governor::RateLimiter::keyed(governor::Quota::per_minute(per_minute).allow_burst(burst)))
        });
        let leptos_options = LeptosOptions::builder()
            .output_name("frontrow")
            .site_root(settings.site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .site_addr(settings.addr)
            .build();
        let listener = TcpListener::bind(settings.addr).await.with_context(|| format!("binding {}", settings.addr))?;
        let local_addr = listener.local_addr()?;
        let in_flight = Arc::new(crate::gates::shed::InFlight::new(
            settings.max_in_flight.unwrap_or_else(crate::gates::shed::default_bound),
            Duration::from_millis(settings.shed_after_ms),
        ));
        let sessions = crate::gates::sessions::Sessions::new(pool.clone(), engine.clone(), SESSION_CACHE_ENTRIES);
        let state = AppState::new(crate::state::Shared {
            in_flight,
            prepared: Arc::new(crate::prepared::PreparedCache::new(Duration::from_millis(settings.map_refresh_ms))),
            engine,
            settings: Arc::new(settings),
            rate_limiter,
            account_limiter,
            fan_limiter,
            instance_id,
            sessions,
            sockets: crate::gates::clients::SocketCaps::default(),
            metrics: metrics_handle(),
            leptos_options,
            shutdown: CancellationToken::new(),
        });
        let router = router(state.clone());
        Ok(Self { local_addr, listener, router, state })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` fires, running the background tasks alongside.
    pub async fn run_until(self, shutdown: CancellationToken) -> Result<()> {
        let tasks = tasks::spawn(self.state.clone(), shutdown.clone());
        tokio::spawn(crate::assets::warm(self.state.clone()));
        tokio::spawn(self.state.sessions.clone().follow_ends(self.state.engine.clone(), shutdown.clone()));
        let connections = self.state.shutdown.clone();
        tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                shutdown.cancelled().await;
                connections.cancel();
            }
        });
        let service = self.router.into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(self.listener, service).with_graceful_shutdown(async move { shutdown.cancelled().await }).await?;
        tasks.join().await;
        Ok(())
    }
}

/// The session layer answers a bare 500 when its store cannot save (the
/// database away or out of connections): that is an outage, said as ours
/// are, 503 `unavailable` with a code. (Every 500 of our own has a body.)
async fn session_store_failure_is_unavailable(response: axum::response::Response) -> axum::response::Response {
    let bare = response.status() == axum::http::StatusCode::INTERNAL_SERVER_ERROR
        && response.headers().get(axum::http::header::CONTENT_TYPE).is_none()
        && axum::body::HttpBody::size_hint(response.body()).exact() == Some(0);
    if bare {
        metrics::counter!("frontrow_session_store_failures_total").increment(1);
        return AppError::unavailable().into_response();
    }
    response
}

fn router(state: AppState) -> Router {
    let sessions = SessionManagerLayer::new(state.sessions.clone())
        .with_name(api::SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(state.settings.secure_cookies())
        .with_expiry(Expiry::OnInactivity(tower_sessions::cookie::time::Duration::days(7)));

    let leptos_options = state.leptos_options.clone();
    let routes = generate_route_list(frontrow_app::App);
    let engine = state.engine.clone();
    let site = frontrow_app::server::SiteUrl(state.settings.site_url());
    let map_settings = frontrow_app::seatmap::MapSettings {
        refresh: Duration::from_millis(state.settings.map_refresh_ms),
        overview_above: state.settings.overview_above,
        block_seats: state.settings.section_block_seats.max(1),
        ..Default::default()
    };
    let fan_limiter = state.fan_limiter.clone();
    let fan_limit = frontrow_app::server::FanLimit(Arc::new(move |fan: UserId| api::queue::check_fan(fan_limiter.as_deref(), fan)));
    let app_context = move || {
        leptos::prelude::provide_context(engine.clone());
        leptos::prelude::provide_context(fan_limit.clone());
        leptos::prelude::provide_context(site.clone());
        leptos::prelude::provide_context(map_settings);
        crate::gates::headers::record_page_nonce();
    };

    let kept_pages = crate::page_cache::KeptPages::new(state.settings.page_keep(), state.engine.clone()).map(Arc::new);
    let x_request_id = HeaderName::from_static("x-request-id");
    Router::new()
        .merge(api::router(state.clone()))
        .route("/bookings/{booking_id}/print", axum::routing::get(tickets::print_tickets))
        .route("/pkg/{file}", axum::routing::get(crate::assets::pkg_file))
        .route("/events/{event_id}/queue", axum::routing::get(waiting_room::page))
        .leptos_routes_with_context(&state, routes, app_context.clone(), {
            let options = leptos_options.clone();
            move || frontrow_app::shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(app_context, frontrow_app::shell))
        // Each group of layers is one stack, applied once: a layer applied
        // on its own wraps every route in a boxed service of its own, and
        // each request cloned the boxes below every one of them (about two
        // hundred allocations a request with a score of layers).
        //
        // Outermost first: the metrics that see the final answer, the bound
        // on work in flight, the rate limit, a failed server function's
        // status, then event pages shared by their viewers (rendered once
        // per short while, see page_cache).
        .route_layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn(api::track_metrics))
                .layer(axum::middleware::from_fn_with_state(state.in_flight.clone(), crate::gates::shed::shed_load))
                .layer(axum::middleware::from_fn_with_state(state.clone(), crate::gates::limits::rate_limit_server_fns))
                .layer(axum::middleware::from_fn(api::server_fn_status))
                .layer(axum::middleware::from_fn_with_state(kept_pages, crate::page_cache::kept_pages)),
        )
        .layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn(run_to_completion))
                // A bug that panics answers its one request with a 500, not a
                // dropped connection (and the panic is logged with the request's span).
                .layer(CatchPanicLayer::custom(|_panic: Box<dyn std::any::Any + Send>| {
                    metrics::counter!("frontrow_panics_total").increment(1);
                    AppError::internal().into_response()
                }))
                .layer(SetRequestIdLayer::new(x_request_id.clone(), MakeRequestUuid))
                .layer(TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                    let request_id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
                    tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %request_id)
                }))
                .layer(PropagateRequestIdLayer::new(x_request_id))
                // A 10,000-seat map is ~1.5 MB of repetitive SVG; compressed it is a
                // fraction of that (the README quotes the measured weight). Answers
                // made per request get gzip level 4, no brotli: at the default levels
                // compressing a seat-map page cost more than rendering it, the F5
                // storm's biggest expense, for a few percent of size. (The prepared
                // seat list carries its own gzip and brotli, made once per revision.)
                .layer(CompressionLayer::new().br(false).quality(tower_http::CompressionLevel::Precise(4)))
                // An event's page is rendered without its map, which this layer
                // puts in (in gzip deflated once per drawing, see map_page); other
                // answers pass through.
                .layer(axum::middleware::from_fn_with_state(Arc::new(crate::map_page::MapPieces::default()), crate::map_page::put_in_maps))
                .layer(axum::middleware::from_fn(crate::gates::body::limit_body))
                .layer(axum::extract::DefaultBodyLimit::max(crate::gates::body::MAX_BODY))
                .layer(axum::middleware::map_response(session_store_failure_is_unavailable))
                .layer(sessions)
                .layer(axum::middleware::from_fn_with_state(state.clone(), crate::gates::headers::security_headers))
                .layer(axum::middleware::from_fn_with_state(state.clone(), crate::gates::limits::client_address))
                .layer(axum::middleware::from_fn(crate::gates::csrf::csrf_guard)),
        )
        .with_state(state)
}
