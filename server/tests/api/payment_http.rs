//! The HTTP payment provider adapter against a fake PaymentIntents API (the
//! shape Stripe made common): the adapter on its own, then the whole server
//! configured with `FRONTROW_PAYMENT_PROVIDER=http`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use frontrow_engine::payment::{HttpProvider, PaymentProvider, PaymentRequest, PaymentStatus, ProviderError, RefundStatus};
use serde_json::{json, Value};
use uuid::Uuid;

const API_KEY: &str = "sk_test_x";

// ---------------------------------------------------------------------------
// The fake provider
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Intent {
    id: String,
    status: String,
    amount: i64,
    currency: String,
    payment_method: String,
    description: String,
    frontrow_key: String,
    last_payment_error: Option<Value>,
}

#[derive(Debug, Clone)]
struct Refund {
    id: String,
    payment_intent: String,
    amount: i64,
}

#[derive(Debug, Default)]
struct Ledger {
    /// Intents by id.
    intents: HashMap<String, Intent>,
    /// Intent id by the Idempotency-Key it was created with.
    intent_by_idem: HashMap<String, String>,
    /// POST /v1/payment_intents calls per Idempotency-Key (replays included).
    create_calls: HashMap<String, u32>,
    /// Money captured, per metadata[frontrow_key]: must never exceed 1.
    charges: HashMap<String, u32>,
    refunds: HashMap<String, Refund>,
    refund_by_idem: HashMap<String, String>,
    searches: u32,
    unauthorized: u32,
    next_id: u64,
    /// The search finds nothing (a provider's search lags behind its charges).
    search_blind: bool,
    /// A create sent again under a key already used is refused with this
    /// status (a rotated key, a wrong URL, changed parameters), as a real
    /// provider may answer a re-sent payment it did take the first time.
    replay_refused: Option<u16>,
}

impl Ledger {
    fn new_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_{:06}{}", self.next_id, &Uuid::new_v4().simple().to_string()[..8])
    }
}

type Shared = Arc<Mutex<Ledger>>;

struct FakeProvider {
    url: String,
    ledger: Shared,
}

impl FakeProvider {
    async fn start() -> FakeProvider {
        let ledger: Shared = Arc::default();
        let router = Router::new()
            .route("/v1/payment_intents", post(create_intent))
            .route("/v1/payment_intents/search", get(search_intents))
            .route("/v1/payment_intents/{id}", get(retrieve_intent))
            .route("/v1/payment_intents/{id}/cancel", post(cancel_intent))
            .route("/v1/refunds", post(create_refund))
            .with_state(ledger.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binding the fake provider");
        let addr: SocketAddr = listener.local_addr().expect("fake provider address");
        tokio::spawn(async move {
            axum::serve(listener, router).await.expect("fake provider served");
        });
        FakeProvider { url: format!("http://{addr}"), ledger }
    }

    fn provider(&self) -> HttpProvider {
        HttpProvider::new(self.url.clone(), API_KEY, Duration::from_secs(5)).expect("provider")
    }

    fn charges(&self, frontrow_key: &str) -> u32 {
        self.ledger.lock().unwrap().charges.get(frontrow_key).copied().unwrap_or(0)
    }
    fn total_charges(&self) -> u32 {
        self.ledger.lock().unwrap().charges.values().sum()
    }
    fn create_calls(&self, idempotency_key: &str) -> u32 {
        self.ledger.lock().unwrap().create_calls.get(idempotency_key).copied().unwrap_or(0)
    }
    fn intent_count(&self) -> usize {
        self.ledger.lock().unwrap().intents.len()
    }
    fn intent_for(&self, frontrow_key: &str) -> Option<Intent> {
        self.ledger.lock().unwrap().intents.values().find(|i| i.frontrow_key == frontrow_key).cloned()
    }
    fn refund_count(&self) -> usize {
        self.ledger.lock().unwrap().refunds.len()
    }
    fn searches(&self) -> u32 {
        self.ledger.lock().unwrap().searches
    }
    fn unauthorized(&self) -> u32 {
        self.ledger.lock().unwrap().unauthorized
    }
}

type Answer = (StatusCode, Json<Value>);

fn api_error(status: StatusCode, kind: &str, code: &str, message: &str) -> Answer {
    (status, Json(json!({ "error": { "type": kind, "code": code, "message": message } })))
}

fn intent_json(i: &Intent) -> Value {
    json!({
        "id": i.id,
        "object": "payment_intent",
        "amount": i.amount,
        "currency": i.currency,
        "status": i.status,
        "payment_method": i.payment_method,
        "description": i.description,
        "metadata": { "frontrow_key": i.frontrow_key },
        "last_payment_error": i.last_payment_error,
    })
}

/// The answer a create (or its replay) gets for an intent.
fn intent_answer(i: &Intent) -> Answer {
    if i.status == "requires_payment_method" {
        let mut error = i.last_payment_error.clone().unwrap_or_else(|| json!({}));
        error["payment_intent"] = intent_json(i);
        (StatusCode::PAYMENT_REQUIRED, Json(json!({ "error": error })))
    } else {
        (StatusCode::OK, Json(intent_json(i)))
    }
}

fn authorised(ledger: &Shared, headers: &HeaderMap) -> Result<(), Answer> {
    let expected = format!("Bearer {API_KEY}");
    if headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(expected.as_str()) {
        Ok(())
    } else {
        ledger.lock().unwrap().unauthorized += 1;
        Err(api_error(StatusCode::UNAUTHORIZED, "invalid_request_error", "invalid_api_key", "Invalid API Key provided"))
    }
}

fn idempotency_key(headers: &HeaderMap) -> Result<String, Answer> {
    headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "missing_idempotency_key", "Idempotency-Key required"))
}

async fn create_intent(State(ledger): State<Shared>, headers: HeaderMap, Form(form): Form<HashMap<String, String>>) -> Answer {
    if let Err(a) = authorised(&ledger, &headers) {
        return a;
    }
    let key = match idempotency_key(&headers) {
        Ok(k) => k,
        Err(a) => return a,
    };
    let bad = |m: &str| api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "parameter_invalid", m);
    let Some(amount) = form.get("amount").and_then(|a| a.parse::<i64>().ok()).filter(|a| *a > 0) else {
        return bad("amount must be a positive integer");
    };
    let (Some(currency), Some(payment_method), Some(frontrow_key)) =
        (form.get("currency"), form.get("payment_method"), form.get("metadata[frontrow_key]"))
    else {
        return bad("currency, payment_method and metadata[frontrow_key] are required");
    };
    if form.get("confirm").map(String::as_str) != Some("true") {
        return bad("this fake only supports confirm=true");
    }

    let mut l = ledger.lock().unwrap();
    *l.create_calls.entry(key.clone()).or_default() += 1;
    if let Some(status) = l.replay_refused.filter(|_| l.intent_by_idem.contains_key(&key)) {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
        return api_error(status, "invalid_request_error", "refused_replay", "this request cannot be processed");
    }
    if let Some(id) = l.intent_by_idem.get(&key) {
        // A replay: the original intent, never a second charge.
        return intent_answer(&l.intents[id]);
    }
    let (status, error, lost) = match payment_method.as_str() {
        "pm_card_visa" => ("succeeded", None, false),
        "pm_card_lost" => ("succeeded", None, true),
        "pm_card_processing" => ("processing", None, false),
        "pm_card_chargeDeclined" => (
            "requires_payment_method",
            Some(json!({ "type": "card_error", "code": "card_declined", "decline_code": "generic_decline",
                         "message": "Your card was declined." })),
            false,
        ),
        _ => return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "resource_missing", "No such PaymentMethod"),
    };
    let intent = Intent {
        id: l.new_id("pi"),
        status: status.to_owned(),
        amount,
        currency: currency.clone(),
        payment_method: payment_method.clone(),
        description: form.get("description").cloned().unwrap_or_default(),
        frontrow_key: frontrow_key.clone(),
        last_payment_error: error,
    };
    if status == "succeeded" {
        *l.charges.entry(frontrow_key.clone()).or_default() += 1;
    }
    l.intent_by_idem.insert(key, intent.id.clone());
    l.intents.insert(intent.id.clone(), intent.clone());
    if lost {
        // The money is taken, but the reply never arrives.
        return api_error(StatusCode::INTERNAL_SERVER_ERROR, "api_error", "lost", "the reply was lost");
    }
    intent_answer(&intent)
}

async fn search_intents(State(ledger): State<Shared>, headers: HeaderMap, Query(params): Query<HashMap<String, String>>) -> Answer {
    if let Err(a) = authorised(&ledger, &headers) {
        return a;
    }
    let wanted = params.get("query").and_then(|q| q.strip_prefix("metadata['frontrow_key']:'")).and_then(|q| q.strip_suffix('\'')).map(str::to_owned);
    let Some(wanted) = wanted else {
        return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "parameter_invalid", "unsupported search query");
    };
    let mut l = ledger.lock().unwrap();
    l.searches += 1;
    let found = l.intents.values().find(|i| i.frontrow_key == wanted && !l.search_blind).map(|i| i.id.clone());
    let data = match found {
        Some(id) => {
            // A processing payment has settled by the time anyone asks again.
            let settles = l.intents[&id].status == "processing";
            if settles {
                l.intents.get_mut(&id).unwrap().status = "succeeded".into();
                *l.charges.entry(wanted.clone()).or_default() += 1;
            }
            vec![intent_json(&l.intents[&id])]
        }
        None => vec![],
    };
    (StatusCode::OK, Json(json!({ "object": "search_result", "data": data, "has_more": false })))
}

/// Reading an intent settles a processing one, as a search does.
async fn retrieve_intent(State(ledger): State<Shared>, headers: HeaderMap, Path(id): Path<String>) -> Answer {
    if let Err(a) = authorised(&ledger, &headers) {
        return a;
    }
    let mut l = ledger.lock().unwrap();
    let Some(intent) = l.intents.get(&id).cloned() else {
        return api_error(StatusCode::NOT_FOUND, "invalid_request_error", "resource_missing", &format!("No such payment_intent: '{id}'"));
    };
    if intent.status == "processing" {
        l.intents.get_mut(&id).unwrap().status = "succeeded".into();
        *l.charges.entry(intent.frontrow_key.clone()).or_default() += 1;
    }
    intent_answer(&l.intents[&id])
}

/// Only intents not yet captured nor processing can be cancelled.
async fn cancel_intent(State(ledger): State<Shared>, headers: HeaderMap, Path(id): Path<String>) -> Answer {
    if let Err(a) = authorised(&ledger, &headers) {
        return a;
    }
    let mut l = ledger.lock().unwrap();
    let Some(intent) = l.intents.get_mut(&id) else {
        return api_error(StatusCode::NOT_FOUND, "invalid_request_error", "resource_missing", &format!("No such payment_intent: '{id}'"));
    };
    match intent.status.as_str() {
        "requires_payment_method" | "requires_capture" | "requires_confirmation" | "requires_action" => {
            intent.status = "canceled".into();
            let answer = intent.clone();
            intent_answer(&answer)
        }
        _ => api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "payment_intent_unexpected_state", "cannot cancel in this state"),
    }
}

async fn create_refund(State(ledger): State<Shared>, headers: HeaderMap, Form(form): Form<HashMap<String, String>>) -> Answer {
    if let Err(a) = authorised(&ledger, &headers) {
        return a;
    }
    let key = match idempotency_key(&headers) {
        Ok(k) => k,
        Err(a) => return a,
    };
    let mut l = ledger.lock().unwrap();
    if let Some(id) = l.refund_by_idem.get(&key) {
        let r = &l.refunds[id];
        return (
            StatusCode::OK,
            Json(json!({ "id": r.id, "object": "refund", "status": "succeeded", "amount": r.amount, "payment_intent": r.payment_intent })),
        );
    }
    let intent_id = form.get("payment_intent").cloned().unwrap_or_default();
    let Some(intent) = l.intents.get(&intent_id).cloned() else {
        return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "resource_missing", &format!("No such payment_intent: '{intent_id}'"));
    };
    if intent.status != "succeeded" {
        return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "charge_not_captured", "this payment has not been captured");
    }
    let amount = form.get("amount").and_then(|a| a.parse::<i64>().ok()).unwrap_or(intent.amount);
    let already: i64 = l.refunds.values().filter(|r| r.payment_intent == intent.id).map(|r| r.amount).sum();
    if amount <= 0 || already + amount > intent.amount {
        return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "amount_too_large", "refund exceeds the captured amount");
    }
    let refund = Refund { id: l.new_id("re"), payment_intent: intent.id.clone(), amount };
    l.refund_by_idem.insert(key, refund.id.clone());
    l.refunds.insert(refund.id.clone(), refund.clone());
    (StatusCode::OK, Json(json!({ "id": refund.id, "object": "refund", "status": "succeeded", "amount": amount, "payment_intent": intent.id })))
}

// ---------------------------------------------------------------------------
// The adapter on its own
// ---------------------------------------------------------------------------

fn new_key() -> String {
    format!("frontrow-{}", Uuid::new_v4())
}

fn request(key: &str, token: &str) -> PaymentRequest {
    PaymentRequest {
        idempotency_key: key.to_owned(),
        amount_cents: 5000,
        currency: "eur".into(),
        payment_token: token.into(),
        description: "frontrow checkout test".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_approves_a_good_card() {
    let fake = FakeProvider::start().await;
    // A trailing slash on the base URL is tolerated.
    let provider = HttpProvider::new(format!("{}/", fake.url), API_KEY, Duration::from_secs(5)).unwrap();
    assert_eq!(provider.name(), "http");
    let key = new_key();

    let payment = provider.create_payment(&request(&key, "pm_card_visa")).await.expect("create");
    assert_eq!(payment.status, PaymentStatus::Succeeded);
    assert!(payment.provider_ref.starts_with("pi_"), "provider_ref: {}", payment.provider_ref);

    let intent = fake.intent_for(&key).expect("the fake recorded the intent");
    assert_eq!(intent.id, payment.provider_ref);
    assert_eq!(intent.amount, 5000);
    assert_eq!(intent.currency, "eur");
    assert_eq!(intent.payment_method, "pm_card_visa");
    assert_eq!(intent.description, "frontrow checkout test");
    assert_eq!(fake.charges(&key), 1);
    assert_eq!(fake.create_calls(&key), 1, "the Idempotency-Key header is the request's key");

    let found = provider.find_payment(&key).await.expect("find").expect("found");
    assert_eq!(found.provider_ref, payment.provider_ref);
    assert_eq!(found.status, PaymentStatus::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_reports_a_decline_with_its_reason() {
    let fake = FakeProvider::start().await;
    let provider = fake.provider();
    let key = new_key();

    let payment = provider.create_payment(&request(&key, "pm_card_chargeDeclined")).await.expect("a decline is an answer, not an error");
    match &payment.status {
        PaymentStatus::Declined { reason } => assert_eq!(reason, "Your card was declined."),
        other => panic!("expected Declined, got {other:?}"),
    }
    let intent = fake.intent_for(&key).expect("intent");
    assert_eq!(payment.provider_ref, intent.id, "the declined intent is named");
    assert_eq!(fake.charges(&key), 0, "nothing charged");

    // Looked up later, the intent still reads as declined, with its reason.
    let found = provider.find_payment(&key).await.expect("find").expect("found");
    assert_eq!(found.provider_ref, intent.id);
    assert_eq!(found.status, PaymentStatus::Declined { reason: "Your card was declined.".into() });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_reports_processing_then_settles_on_lookup() {
    let fake = FakeProvider::start().await;
    let provider = fake.provider();
    let key = new_key();

    let payment = provider.create_payment(&request(&key, "pm_card_processing")).await.expect("create");
    assert_eq!(payment.status, PaymentStatus::Processing);
    assert_eq!(fake.charges(&key), 0);

    let found = provider.find_payment(&key).await.expect("find").expect("found");
    assert_eq!(found.provider_ref, payment.provider_ref);
    assert_eq!(found.status, PaymentStatus::Succeeded);
    let again = provider.find_payment(&key).await.expect("find").expect("found");
    assert_eq!(again, found);
    assert_eq!(fake.charges(&key), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_treats_a_lost_reply_as_unknown_and_finds_the_payment_later() {
    let fake = FakeProvider::start().await;
    let provider = fake.provider();
    let key = new_key();

    let answer = provider.create_payment(&request(&key, "pm_card_lost")).await;
    assert!(matches!(answer, Err(ProviderError::Unreachable(_))), "a 500 leaves the outcome unknown: {answer:?}");
    assert_eq!(fake.charges(&key), 1, "the money was taken nonetheless");

    let found = provider.find_payment(&key).await.expect("find").expect("the provider has it");
    assert_eq!(found.status, PaymentStatus::Succeeded);
    assert_eq!(found.provider_ref, fake.intent_for(&key).unwrap().id);

    // Retrying the create with the same key returns the same payment, no second charge.
    let retried = provider.create_payment(&request(&key, "pm_card_lost")).await.expect("replay");
    assert_eq!(retried, found);
    assert_eq!(fake.charges(&key), 1);
    assert_eq!(fake.intent_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_create_is_idempotent() {
    let fake = FakeProvider::start().await;
    let provider = fake.provider();
    let key = new_key();

    let first = provider.create_payment(&request(&key, "pm_card_visa")).await.expect("first");
    let second = provider.create_payment(&request(&key, "pm_card_visa")).await.expect("second");
    assert_eq!(first, second);
    let same = request(&key, "pm_card_visa");
    let (third, fourth) = tokio::join!(provider.create_payment(&same), provider.create_payment(&same));
    assert_eq!(third.expect("third"), first);
    assert_eq!(fourth.expect("fourth"), first);
    assert_eq!(fake.create_calls(&key), 4);
    assert_eq!(fake.intent_count(), 1);
    assert_eq!(fake.charges(&key), 1, "charged once however often asked");

    // A declined create replays as the same decline.
    let declined_key = new_key();
    let d1 = provider.create_payment(&request(&declined_key, "pm_card_chargeDeclined")).await.expect("d1");
    let d2 = provider.create_payment(&request(&declined_key, "pm_card_chargeDeclined")).await.expect("d2");
    assert_eq!(d1, d2);
    assert!(matches!(d1.status, PaymentStatus::Declined { .. }));
    assert_eq!(fake.intent_count(), 2);
    assert_eq!(fake.total_charges(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_finds_nothing_for_an_unknown_key() {
    let fake = FakeProvider::start().await;
    let provider = fake.provider();
    provider.create_payment(&request(&new_key(), "pm_card_visa")).await.expect("another payment");

    let found = provider.find_payment(&new_key()).await.expect("find");
    assert_eq!(found, None);
    assert_eq!(fake.searches(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_refunds_idempotently() {
    let fake = FakeProvider::start().await;
    let provider = fake.provider();
    let key = new_key();
    let payment = provider.create_payment(&request(&key, "pm_card_visa")).await.expect("create");

    let refund_key = format!("{key}-refund");
    let refund = provider.refund(&payment.provider_ref, 5000, &refund_key).await.expect("refund");
    assert_eq!(refund.status, RefundStatus::Succeeded);
    assert!(refund.provider_ref.starts_with("re_"), "refund ref: {}", refund.provider_ref);

    let again = provider.refund(&payment.provider_ref, 5000, &refund_key).await.expect("refund replay");
    assert_eq!(again, refund, "the same refund, not a second one");
    assert_eq!(fake.refund_count(), 1);

    // Refunding what the provider never took is refused outright.
    let unknown = provider.refund("pi_does_not_exist", 5000, &new_key()).await;
    assert!(matches!(unknown, Err(ProviderError::Rejected(_))), "unknown intent: {unknown:?}");
    assert_eq!(fake.refund_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_with_a_wrong_key_is_rejected() {
    let fake = FakeProvider::start().await;
    let provider = HttpProvider::new(fake.url.clone(), "sk_test_wrong", Duration::from_secs(5)).unwrap();
    let key = new_key();

    let created = provider.create_payment(&request(&key, "pm_card_visa")).await;
    assert!(matches!(created, Err(ProviderError::Rejected(ref m)) if m.contains("401")), "create: {created:?}");
    let found = provider.find_payment(&key).await;
    assert!(matches!(found, Err(ProviderError::Rejected(_))), "find: {found:?}");
    let refund = provider.refund("pi_x", 5000, &new_key()).await;
    assert!(matches!(refund, Err(ProviderError::Rejected(_))), "refund: {refund:?}");

    assert_eq!(fake.unauthorized(), 3);
    assert_eq!(fake.intent_count(), 0);
    assert_eq!(fake.total_charges(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_reports_a_closed_port_as_unreachable() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    }; // dropped: nothing listens there any more
    let provider = HttpProvider::new(format!("http://{addr}"), API_KEY, Duration::from_secs(2)).unwrap();
    let key = new_key();

    let created = provider.create_payment(&request(&key, "pm_card_visa")).await;
    assert!(matches!(created, Err(ProviderError::Unreachable(_))), "create: {created:?}");
    let found = provider.find_payment(&key).await;
    assert!(matches!(found, Err(ProviderError::Unreachable(_))), "find: {found:?}");
    let refund = provider.refund("pi_x", 5000, &new_key()).await;
    assert!(matches!(refund, Err(ProviderError::Unreachable(_))), "refund: {refund:?}");
}

// ---------------------------------------------------------------------------
// The whole server on the HTTP provider
// ---------------------------------------------------------------------------

async fn spawn_app_on_fake(fake: &FakeProvider) -> TestApp {
    let url = fake.url.clone();
    spawn_app_with(move |s| {
        s.payment_provider = Some(frontrow_server::config::ProviderKind::Http);
        s.payment_api_url = Some(url);
        s.payment_api_key = Some(API_KEY.into());
    })
    .await
}

/// A fan holding one seat: (fan, hold_id, hold_token).
async fn fan_holding(app: &TestApp, event: Uuid, seat: &str) -> (Client, String, String) {
    let fan = app.fan().await;
    let r = fan.hold(event, &[seat]).await;
    assert_eq!(r.status, 201, "hold {seat}: {}", r.body);
    assert_eq!(r.body["total_cents"], 5000);
    let hold_id = r.body["hold_id"].as_str().expect("hold_id").to_owned();
    let token = r.body["hold_token"].as_str().expect("hold_token").to_owned();
    (fan, hold_id, token)
}

/// (provider_key, provider_ref, status, amount) of a checkout's payment intent.
async fn payment_row(app: &TestApp, checkout_id: Uuid) -> (String, Option<String>, String, i64) {
    sqlx::query_as("SELECT provider_key, provider_ref, status::text, amount_cents FROM payment_intents WHERE checkout_id = $1")
        .bind(checkout_id)
        .fetch_one(&app.pool)
        .await
        .expect("payment intent row")
}

async fn checkout_of_booking(app: &TestApp, booking_id: &str) -> Uuid {
    sqlx::query_scalar("SELECT checkout_id FROM checkouts WHERE booking_id = $1")
        .bind(booking_id.parse::<Uuid>().expect("booking uuid"))
        .fetch_one(&app.pool)
        .await
        .expect("checkout of booking")
}

/// A booking body (201 reply or checkout view) with exactly `seat` on one ticket.
fn assert_booking(booking: &Value, event: Uuid, seat: &str) {
    assert_eq!(booking["status"], "confirmed", "booking: {booking}");
    assert_eq!(booking["event_id"], event.to_string());
    assert_eq!(booking["seat_ids"], json!([seat]));
    assert_eq!(booking["total_cents"], 5000);
    let tickets = booking["tickets"].as_array().expect("tickets");
    assert_eq!(tickets.len(), 1, "one ticket: {booking}");
    assert_eq!(tickets[0]["seat_id"], seat);
    assert!(tickets[0]["code"].as_str().is_some_and(|c| !c.is_empty()), "ticket code: {booking}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_through_the_http_provider() {
    let fake = FakeProvider::start().await;
    let app = spawn_app_on_fake(&fake).await;
    let event = app.event(1, 6, 300, 4).await;

    // 1. A good card: confirmed at once, charged once.
    let (visa_fan, visa_hold, visa_token) = fan_holding(&app, event, "A-1-1").await;
    let r = visa_fan.checkout(&visa_hold, &visa_token, "pm_card_visa", "visa-1").await;
    assert_eq!(r.status, 201, "visa checkout: {}", r.body);
    assert_booking(&r.body, event, "A-1-1");
    let visa_booking = r.body["booking_id"].as_str().expect("booking_id").to_owned();
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "sold");
    let visa_checkout = checkout_of_booking(&app, &visa_booking).await;
    let (visa_key, visa_ref, visa_status, amount) = payment_row(&app, visa_checkout).await;
    assert_eq!(visa_key, format!("frontrow-{visa_checkout}"));
    assert_eq!(visa_status, "succeeded");
    assert_eq!(amount, 5000);
    let intent = fake.intent_for(&visa_key).expect("the fake saw the visa payment");
    assert_eq!(Some(intent.id.clone()), visa_ref, "the provider's reference is recorded");
    assert_eq!((intent.amount, intent.currency.as_str()), (5000, "eur"));
    // The same request again is answered from the stored outcome, without the provider.
    let replay = visa_fan.checkout(&visa_hold, &visa_token, "pm_card_visa", "visa-1").await;
    assert_eq!(replay.status, 201, "replay: {}", replay.body);
    assert_eq!(replay.body["booking_id"], visa_booking.as_str());
    assert_eq!(fake.create_calls(&visa_key), 1);

    // 2. A declined card: 402, nothing charged, the hold is still the fan's.
    let (declined_fan, declined_hold, declined_token) = fan_holding(&app, event, "A-1-2").await;
    let r = declined_fan.checkout(&declined_hold, &declined_token, "pm_card_chargeDeclined", "declined-1").await;
    assert_eq!(r.status, 402, "declined checkout: {}", r.body);
    assert_eq!(r.body["error"], "payment_declined");
    assert!(r.body["message"].as_str().is_some_and(|m| m.contains("Your card was declined.")), "message: {}", r.body);
    let declined_checkout: Uuid = r.body["checkout_id"].as_str().expect("checkout_id").parse().unwrap();
    let (declined_key, _, declined_status, _) = payment_row(&app, declined_checkout).await;
    assert_eq!(declined_status, "declined");
    assert_eq!(fake.create_calls(&declined_key), 1);
    assert_eq!(fake.charges(&declined_key), 0);
    assert_eq!(fake.intent_for(&declined_key).map(|i| i.status).as_deref(), Some("requires_payment_method"));
    let hold = declined_fan.get(&format!("/api/v1/holds/{declined_hold}")).await;
    assert_eq!(hold.status, 200, "hold: {}", hold.body);
    assert_eq!(hold.body["state"], "active", "the hold is kept: {}", hold.body);
    assert_eq!(seat_state(&app.pool, event, "A-1-2").await, "held");
    let view = declined_fan.get(&format!("/api/v1/checkouts/{declined_checkout}")).await;
    assert_eq!(view.status, 200);
    assert_eq!(view.body["status"], "failed", "view: {}", view.body);
    // ... and the fan can pay for the same hold with another card.
    let r = declined_fan.checkout(&declined_hold, &declined_token, "pm_card_visa", "declined-2").await;
    assert_eq!(r.status, 201, "retry with a good card: {}", r.body);
    assert_booking(&r.body, event, "A-1-2");
    let retry_checkout = checkout_of_booking(&app, r.body["booking_id"].as_str().unwrap()).await;
    let (retry_key, _, _, _) = payment_row(&app, retry_checkout).await;
    assert_ne!(retry_key, declined_key);
    assert_eq!(fake.charges(&retry_key), 1);

    // 3. The reply is lost: 202 pending, then reconciliation finds the payment.
    let (lost_fan, lost_hold, lost_token) = fan_holding(&app, event, "A-1-3").await;
    let r = lost_fan.checkout(&lost_hold, &lost_token, "pm_card_lost", "lost-1").await;
    assert_eq!(r.status, 202, "lost checkout: {}", r.body);
    assert_eq!(r.body["status"], "payment_pending");
    let lost_checkout: Uuid = r.body["checkout_id"].as_str().expect("checkout_id").parse().unwrap();
    let state = seat_state(&app.pool, event, "A-1-3").await;
    assert!(state == "payment_pending" || state == "sold", "seat reserved while the payment is unknown: {state}");
    let confirmed = eventually(10, "the lost payment to be reconciled", || async {
        let v = lost_fan.get(&format!("/api/v1/checkouts/{lost_checkout}")).await;
        assert_eq!(v.status, 200, "checkout view: {}", v.body);
        assert!(v.body["status"] == "payment_pending" || v.body["status"] == "confirmed", "view: {}", v.body);
        (v.body["status"] == "confirmed").then_some(v.body)
    })
    .await;
    assert_booking(&confirmed["booking"], event, "A-1-3");
    assert_eq!(seat_state(&app.pool, event, "A-1-3").await, "sold");
    let (lost_key, lost_ref, lost_status, _) = payment_row(&app, lost_checkout).await;
    assert_eq!(lost_status, "succeeded");
    assert_eq!(lost_ref, fake.intent_for(&lost_key).map(|i| i.id));
    assert_eq!(fake.create_calls(&lost_key), 1, "reconciliation asks, it does not charge again");
    assert_eq!(fake.charges(&lost_key), 1);
    assert!(fake.searches() >= 1);
    // The key now answers with the booking.
    let replay = lost_fan.checkout(&lost_hold, &lost_token, "pm_card_lost", "lost-1").await;
    assert_eq!(replay.status, 201, "replay after reconciliation: {}", replay.body);
    assert_eq!(replay.body["booking_id"], confirmed["booking"]["booking_id"]);

    // 4. Processing: 202 pending, settled by reconciliation.
    let (slow_fan, slow_hold, slow_token) = fan_holding(&app, event, "A-1-4").await;
    let r = slow_fan.checkout(&slow_hold, &slow_token, "pm_card_processing", "slow-1").await;
    assert_eq!(r.status, 202, "processing checkout: {}", r.body);
    let slow_checkout: Uuid = r.body["checkout_id"].as_str().expect("checkout_id").parse().unwrap();
    let confirmed = eventually(10, "the processing payment to be reconciled", || async {
        let v = slow_fan.get(&format!("/api/v1/checkouts/{slow_checkout}")).await;
        (v.body["status"] == "confirmed").then_some(v.body)
    })
    .await;
    assert_booking(&confirmed["booking"], event, "A-1-4");
    let (slow_key, _, _, _) = payment_row(&app, slow_checkout).await;
    assert_eq!(fake.create_calls(&slow_key), 1);
    assert_eq!(fake.charges(&slow_key), 1);

    // Exactly one charge per paid checkout, none for the declined one, no refunds.
    let rows: Vec<(Uuid, String, String)> =
        sqlx::query_as("SELECT checkout_id, provider_key, status::text FROM payment_intents ORDER BY created_at").fetch_all(&app.pool).await.unwrap();
    assert_eq!(rows.len(), 5, "payment intents: {rows:?}");
    for (checkout_id, key, status) in &rows {
        let expected = if *checkout_id == declined_checkout { 0 } else { 1 };
        assert_eq!(fake.charges(key), expected, "charges for checkout {checkout_id} ({status})");
        assert_eq!(fake.create_calls(key), 1, "provider calls for checkout {checkout_id}");
    }
    assert_eq!(fake.total_charges(), 4);
    assert_eq!(fake.intent_count(), 5);
    assert_eq!(fake.refund_count(), 0);
    assert_eq!(fake.unauthorized(), 0);

    let report = app.assert_invariants().await;
    assert_eq!(report.seats_sold, 4);
    assert_eq!(report.bookings, 4);
    assert_eq!(report.seats_held, 0);
    assert_eq!(report.seats_available, 2);
    assert_eq!(report.refunds_pending, 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_provider_retrieves_by_reference_and_cancels_only_what_it_may() {
    let fake = FakeProvider::start().await;
    let provider = HttpProvider::new(fake.url.clone(), API_KEY, Duration::from_secs(5)).unwrap();

    // Retrieve by reference settles a processing payment, like the real thing does over time.
    let key = new_key();
    let processing = provider.create_payment(&request(&key, "pm_card_processing")).await.expect("create");
    assert_eq!(processing.status, PaymentStatus::Processing);
    let read = provider.retrieve_payment(&processing.provider_ref).await.expect("retrieve");
    assert_eq!(read.status, PaymentStatus::Succeeded);
    assert_eq!(fake.charges(&key), 1);

    // A captured payment cannot be voided: cancel answers it as it stands.
    let after = provider.cancel_payment(&processing.provider_ref).await.expect("cancel answer");
    assert_eq!(after.status, PaymentStatus::Succeeded);

    // A declined (uncaptured) intent can be cancelled.
    let declined_key = new_key();
    let declined = provider.create_payment(&request(&declined_key, "pm_card_chargeDeclined")).await.expect("create");
    let cancelled = provider.cancel_payment(&declined.provider_ref).await.expect("cancel");
    assert_eq!(cancelled.status, PaymentStatus::Canceled);
    assert_eq!(fake.charges(&declined_key), 0);

    // An unknown reference is the provider refusing, not an unknown outcome.
    assert!(matches!(provider.retrieve_payment("pi_nope").await, Err(ProviderError::Rejected(_))));
}

/// A 4xx to a payment sent again is no proof that nothing was charged (the
/// first send may have been): the payment stays unsettled, its seats
/// reserved, asked about every round and listed for a person; once the
/// provider answers again the charge is found and booked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_sent_again_and_refused_by_the_provider_stays_under_watch() {
    let fake = FakeProvider::start().await;
    let app = spawn_app_on_fake(&fake).await;
    let event = app.event(1, 6, 300, 4).await;
    let staff = app.staff().await;
    fake.ledger.lock().unwrap().search_blind = true;
    let mut watched = Vec::new();
    // A rotated key, a wrong URL, changed parameters.
    for (n, refusal) in [401u16, 404, 400].into_iter().enumerate() {
        fake.ledger.lock().unwrap().replay_refused = Some(refusal);
        let seat = format!("A-1-{}", n + 1);
        // Charged, but the answer is lost: pending.
        let (fan, hold, token) = fan_holding(&app, event, &seat).await;
        let r = fan.checkout(&hold, &token, "pm_card_lost", &format!("lost-{n}")).await;
        assert_eq!(r.status, 202, "{}", r.body);
        let checkout: Uuid = r.body["checkout_id"].as_str().expect("checkout_id").parse().unwrap();
        let key = format!("frontrow-{checkout}");
        assert_eq!(fake.charges(&key), 1);
        // Reconciliation finds nothing, sends it again, is refused, and
        // keeps at it round after round.
        eventually(15, "the payment to be sent again, twice", || async { (fake.create_calls(&key) >= 3).then_some(()) }).await;
        let (_, _, status, _) = payment_row(&app, checkout).await;
        assert_eq!(status, "unknown", "{refusal}: a refused re-send closed the payment");
        let settled: bool = sqlx::query_scalar("SELECT settled_at IS NOT NULL FROM payment_intents WHERE checkout_id = $1")
            .bind(checkout)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert!(!settled, "{refusal}");
        let view = fan.get(&format!("/api/v1/checkouts/{checkout}")).await;
        assert_eq!(view.body["status"], "payment_pending", "{refusal}: {}", view.body);
        assert_eq!(seat_state(&app.pool, event, &seat).await, "payment_pending");
        // Listed for a person, with what the provider said.
        let listed = eventually(15, "the payment on the Payments page", || async {
            let r = staff.get("/api/v1/admin/payments").await;
            r.body["payments"].as_array()?.iter().find(|p| p["checkout_id"] == checkout.to_string()).cloned()
        })
        .await;
        assert!(listed["reason"].as_str().is_some_and(|m| m.contains(&refusal.to_string())), "{listed}");
        watched.push((fan, checkout, key, seat));
    }
    // The provider answers properly again: every charge is found and booked.
    {
        let mut l = fake.ledger.lock().unwrap();
        l.search_blind = false;
        l.replay_refused = None;
    }
    for (fan, checkout, key, seat) in &watched {
        let confirmed = eventually(15, "the charge to be found and booked", || async {
            let v = fan.get(&format!("/api/v1/checkouts/{checkout}")).await;
            (v.body["status"] == "confirmed").then_some(v.body)
        })
        .await;
        assert_booking(&confirmed["booking"], event, seat);
        assert_eq!(fake.charges(key), 1, "charged once");
    }
    assert_eq!(fake.refund_count(), 0);
    app.assert_invariants().await;
    app.stop().await;
}
