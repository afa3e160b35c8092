//! An adapter for a PaymentIntents-style HTTP API (the shape Stripe made
//! common): form-encoded requests, bearer key, `Idempotency-Key` headers,
//! payment intents looked up by metadata search.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::*;

pub struct HttpProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
}

impl HttpProvider {
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>, timeout: Duration) -> Result<Self, ProviderError> {
        let client =
            reqwest::Client::builder().timeout(timeout).build().map_err(|e| ProviderError::Rejected(format!("building HTTP client: {e}")))?;
        Ok(Self { client, base_url: base_url.into().trim_end_matches('/').to_owned(), api_key: api_key.into() })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }
}

#[derive(Debug, Deserialize)]
struct IntentBody {
    id: String,
    status: String,
    #[serde(default)]
    last_payment_error: Option<ErrorDetail>,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    payment_intent: Option<Box<IntentBody>>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct SearchBody {
    data: Vec<IntentBody>,
}

#[derive(Debug, Deserialize)]
struct RefundBody {
    id: String,
    status: String,
    #[serde(default)]
    failure_reason: Option<String>,
}

fn intent_to_payment(intent: IntentBody) -> ProviderPayment {
    let status = match intent.status.as_str() {
        "succeeded" => PaymentStatus::Succeeded,
        "processing" | "requires_capture" => PaymentStatus::Processing,
        // The checkout has no step for customer action (3-D Secure and the
        // like), so such a payment can never complete: treat it as declined.
        "requires_action" | "requires_confirmation" => PaymentStatus::Declined { reason: "the payment needs customer action".into() },
        "canceled" => PaymentStatus::Canceled,
        _ => PaymentStatus::Declined {
            reason: intent.last_payment_error.and_then(|e| e.message.or(e.code)).unwrap_or_else(|| "payment declined".to_owned()),
        },
    };
    ProviderPayment { provider_ref: intent.id, status }
}

/// A 2xx answer carrying a payment intent; anything else is an error.
async fn intent_of(response: reqwest::Response) -> Result<ProviderPayment, ProviderError> {
    if !response.status().is_success() {
        return Err(error_of(response).await);
    }
    let intent: IntentBody = response.json().await.map_err(transport)?;
    Ok(intent_to_payment(intent))
}

fn transport(e: reqwest::Error) -> ProviderError {
    ProviderError::Unreachable(e.to_string())
}

/// Answers that say nothing definite about the request (timeouts, 5xx, 429)
/// leave the outcome unknown.
async fn error_of(response: reqwest::Response) -> ProviderError {
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS || status == reqwest::StatusCode::CONFLICT {
        ProviderError::Unreachable(format!("{status}: {text}"))
    } else {
        ProviderError::Rejected(format!("{status}: {text}"))
    }
}

#[async_trait]
impl PaymentProvider for HttpProvider {
    fn name(&self) -> &'static str {
        "http"
    }

    async fn create_payment(&self, request: &PaymentRequest) -> Result<ProviderPayment, ProviderError> {
        let amount = request.amount_cents.to_string();
        let form = [
            ("amount", amount.as_str()),
            ("currency", request.currency.as_str()),
            ("payment_method", request.payment_token.as_str()),
            ("confirm", "true"),
            ("description", request.description.as_str()),
            ("metadata[frontrow_key]", request.idempotency_key.as_str()),
        ];
        let response = self
            .client
            .post(self.url("/v1/payment_intents"))
            .bearer_auth(&self.api_key)
            .header("Idempotency-Key", &request.idempotency_key)
            .form(&form)
            .send()
            .await
            .map_err(transport)?;
        if response.status() == reqwest::StatusCode::PAYMENT_REQUIRED {
            // A card error: the body names the intent and why it was declined.
            let body: ErrorBody = response.json().await.map_err(transport)?;
            let reason = body.error.message.clone().or(body.error.code.clone()).unwrap_or_else(|| "card declined".into());
            let provider_ref = body.error.payment_intent.map(|i| i.id).unwrap_or_default();
            return Ok(ProviderPayment { provider_ref, status: PaymentStatus::Declined { reason } });
        }
        intent_of(response).await
    }

    async fn find_payment(&self, idempotency_key: &str) -> Result<Option<ProviderPayment>, ProviderError> {
        let query = format!("metadata['frontrow_key']:'{}'", idempotency_key.replace('\'', ""));
        let response = self
            .client
            .get(self.url("/v1/payment_intents/search"))
            .bearer_auth(&self.api_key)
            .query(&[("query", query.as_str())])
            .send()
            .await
            .map_err(transport)?;
        if !response.status().is_success() {
            return Err(error_of(response).await);
        }
        let body: SearchBody = response.json().await.map_err(transport)?;
        Ok(body.data.into_iter().next().map(intent_to_payment))
    }

    async fn retrieve_payment(&self, provider_ref: &str) -> Result<ProviderPayment, ProviderError> {
        let response =
            self.client.get(self.url(&format!("/v1/payment_intents/{provider_ref}"))).bearer_auth(&self.api_key).send().await.map_err(transport)?;
        intent_of(response).await
    }

    async fn cancel_payment(&self, provider_ref: &str) -> Result<ProviderPayment, ProviderError> {
        let response = self
            .client
            .post(self.url(&format!("/v1/payment_intents/{provider_ref}/cancel")))
            .bearer_auth(&self.api_key)
            .header("Idempotency-Key", format!("cancel-{provider_ref}"))
            .send()
            .await
            .map_err(transport)?;
        if response.status() == reqwest::StatusCode::BAD_REQUEST {
            // Not cancellable in its state: the payment as it stands decides.
            return self.retrieve_payment(provider_ref).await;
        }
        intent_of(response).await
    }

    async fn refund(&self, provider_ref: &str, amount_cents: i64, idempotency_key: &str) -> Result<ProviderRefund, ProviderError> {
        let amount = amount_cents.to_string();
        let response = self
            .client
            .post(self.url("/v1/refunds"))
            .bearer_auth(&self.api_key)
            .header("Idempotency-Key", idempotency_key)
            .form(&[("payment_intent", provider_ref), ("amount", amount.as_str())])
            .send()
            .await
            .map_err(transport)?;
        if !response.status().is_success() {
            return Err(error_of(response).await);
        }
        let body: RefundBody = response.json().await.map_err(transport)?;
        let status = match body.status.as_str() {
            "succeeded" => RefundStatus::Succeeded,
            "pending" | "requires_action" => RefundStatus::Pending,
            _ => RefundStatus::Failed { reason: body.failure_reason.unwrap_or(body.status) },
        };
        Ok(ProviderRefund { provider_ref: body.id, status })
    }
}
