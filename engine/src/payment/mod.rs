//! Payment providers. The engine talks to a provider only through this trait,
//! and never while a database transaction is open.

mod http;
mod refund;
mod simulated;

pub use http::HttpProvider;
pub(crate) use refund::attempt_refund;
pub use simulated::{SimulatedProvider, SimulatedSettings};

use async_trait::async_trait;

/// The provider name recorded for money taken in cash at the counter (no
/// provider is asked; refunds are handed over at the counter too).
pub(crate) const CASH: &str = "cash";

/// One charge request. `idempotency_key` is unique per checkout, so however
/// often the engine retries, the provider takes the money at most once.
#[derive(Debug, Clone)]
pub struct PaymentRequest {
    pub idempotency_key: String,
    pub amount_cents: i64,
    pub currency: String,
    pub payment_token: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentStatus {
    /// The money is captured.
    Succeeded,
    /// Accepted, outcome not known yet; ask again later.
    Processing,
    /// Refused; nothing was charged.
    Declined { reason: String },
    /// Voided before capture; nothing was charged.
    Canceled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderPayment {
    pub provider_ref: String,
    pub status: PaymentStatus,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundStatus {
    Succeeded,
    Pending,
    Failed { reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRefund {
    pub provider_ref: String,
    pub status: RefundStatus,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The request may or may not have reached the provider: the outcome is
    /// unknown and must be settled by asking again (reconciliation).
    #[error("payment provider unreachable: {0}")]
    Unreachable(String),
    /// The provider understood and refused the request itself.
    #[error("payment provider refused the request: {0}")]
    Rejected(String),
}

#[async_trait]
pub trait PaymentProvider: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    /// Creates and confirms a payment (authorise and capture).
    async fn create_payment(&self, request: &PaymentRequest) -> Result<ProviderPayment, ProviderError>;
    /// Looks a payment up by the idempotency key it was created with;
    /// `None` when the provider never received it.
    async fn find_payment(&self, idempotency_key: &str) -> Result<Option<ProviderPayment>, ProviderError>;
    /// Reads a payment by the provider's own reference.
    async fn retrieve_payment(&self, provider_ref: &str) -> Result<ProviderPayment, ProviderError>;
    /// Voids a payment that has not been captured. Answers the payment as it
    /// stands afterwards: `Canceled`, or its unchanged status when it can no
    /// longer be cancelled (captured, or processing at the bank).
    async fn cancel_payment(&self, provider_ref: &str) -> Result<ProviderPayment, ProviderError>;
    /// Refunds a captured payment in full; idempotent by `idempotency_key`.
    async fn refund(&self, provider_ref: &str, amount_cents: i64, idempotency_key: &str) -> Result<ProviderRefund, ProviderError>;
}
