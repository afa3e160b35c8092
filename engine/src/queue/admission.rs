//! Admission tokens: proof that the waiting room let a fan in.
//!
//! `event.phase.user.admission.expiry.binding.mac`, where the MAC is HMAC-SHA256
//! under the server secret over everything before it. The binding is a
//! random value kept in the fan's session, so a token copied into another
//! session (or another fan's) is refused; the expiry keeps it short-lived
//! (the fan's page renews it while they shop). The phase says which sale's
//! queue let the fan in: a presale admission holds nothing once the public
//! sale opens.

use frontrow_model::{EventId, SalePhase, UserId};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

use crate::Engine;

type HmacSha256 = Hmac<Sha256>;

const DOMAIN: &[u8] = b"frontrow admission v2\n";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionClaims {
    pub event_id: EventId,
    pub phase: SalePhase,
    pub user_id: UserId,
    pub admission_id: Uuid,
    /// Unix seconds.
    pub expires_at: i64,
    pub binding: String,
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed admission token")]
    Malformed,
    #[error("admission token signature does not match")]
    Forged,
    #[error("admission token has expired")]
    Expired,
    #[error("admission token is for another event")]
    OtherEvent,
    #[error("admission token belongs to another fan or session")]
    OtherHolder,
}

fn mac(secret: &[u8], body: &str) -> HmacSha256 {
    // HMAC takes keys of any length.
    let mut mac = HmacSha256::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(DOMAIN);
    mac.update(body.as_bytes());
    mac
}

pub(crate) fn sign(secret: &[u8], c: &AdmissionClaims) -> String {
    let body = format!(
        "{}.{}.{}.{}.{}.{}",
        c.event_id.as_uuid().simple(),
        c.phase.as_str(),
        c.user_id.as_uuid().simple(),
        c.admission_id.simple(),
        c.expires_at,
        c.binding
    );
    let tag = hex::encode(mac(secret, &body).finalize().into_bytes());
    format!("{body}.{tag}")
}

/// Checks the token for this event, fan and session binding at `now`
/// (Unix seconds).
pub(crate) fn verify(secret: &[u8], token: &str, event_id: EventId, user_id: UserId, binding: &str, now: i64) -> Result<AdmissionClaims, TokenError> {
    let (body, tag) = token.rsplit_once('.').ok_or(TokenError::Malformed)?;
    let tag = hex::decode(tag).map_err(|_| TokenError::Malformed)?;
    mac(secret, body).verify_slice(&tag).map_err(|_| TokenError::Forged)?;
    let parts: Vec<&str> = body.split('.').collect();
    let [event, phase, user, admission, expires, bound] = parts.as_slice() else { return Err(TokenError::Malformed) };
    let phase = match *phase {
        "presale" => SalePhase::Presale,
        "public" => SalePhase::Public,
        _ => return Err(TokenError::Malformed),
    };
    let claims = AdmissionClaims {
        event_id: event.parse().map_err(|_| TokenError::Malformed)?,
        phase,
        user_id: user.parse().map_err(|_| TokenError::Malformed)?,
        admission_id: admission.parse().map_err(|_| TokenError::Malformed)?,
        expires_at: expires.parse().map_err(|_| TokenError::Malformed)?,
        binding: (*bound).to_owned(),
    };
    if claims.expires_at <= now {
        return Err(TokenError::Expired);
    }
    if claims.event_id != event_id {
        return Err(TokenError::OtherEvent);
    }
    if claims.user_id != user_id || claims.binding != binding {
        return Err(TokenError::OtherHolder);
    }
    Ok(claims)
}

/// Proof that the waiting room admitted a fan to an event. Only
/// [`Engine::admission`] makes one, from a token that verifies for the fan
/// and their session; holds on an event with its waiting room on ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    event_id: EventId,
    phase: SalePhase,
    user_id: UserId,
}

impl Admission {
    pub fn event_id(&self) -> EventId {
        self.event_id
    }

    /// Which sale's queue let the fan in.
    pub fn phase(&self) -> SalePhase {
        self.phase
    }

    /// The sale this admission lets `fan` into `event_id` for, if it is theirs.
    pub fn admits(&self, event_id: EventId, fan: UserId) -> Option<SalePhase> {
        (self.event_id == event_id && self.user_id == fan).then_some(self.phase)
    }
}

impl Engine {
    /// Checks an admission token presented by `fan` for `event_id` from the
    /// session whose binding value is `binding`.
    pub fn admission(&self, token: &str, event_id: EventId, fan: UserId, binding: &str) -> Result<Admission, TokenError> {
        let claims = verify(&self.settings().admission_secret, token, event_id, fan, binding, chrono::Utc::now().timestamp())?;
        Ok(Admission { event_id: claims.event_id, phase: claims.phase, user_id: claims.user_id })
    }

    /// Signs a fan's admission (the waiting room hands it out; see `queue`).
    pub(crate) fn sign_admission(&self, claims: &AdmissionClaims) -> String {
        sign(&self.settings().admission_secret, claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> AdmissionClaims {
        AdmissionClaims {
            event_id: EventId::from(Uuid::new_v4()),
            phase: SalePhase::Presale,
            user_id: UserId::from(Uuid::new_v4()),
            admission_id: Uuid::new_v4(),
            expires_at: 1_000,
            binding: "b1".into(),
        }
    }

    #[test]
    fn a_signed_token_verifies_for_its_event_fan_and_session_only() {
        let c = claims();
        let token = sign(b"secret", &c);
        assert_eq!(verify(b"secret", &token, c.event_id, c.user_id, "b1", 999), Ok(c.clone()));
        assert_eq!(verify(b"secret", &token, c.event_id, c.user_id, "b1", 1_000), Err(TokenError::Expired));
        assert_eq!(verify(b"secret", &token, EventId::from(Uuid::new_v4()), c.user_id, "b1", 999), Err(TokenError::OtherEvent));
        assert_eq!(verify(b"secret", &token, c.event_id, UserId::from(Uuid::new_v4()), "b1", 999), Err(TokenError::OtherHolder));
        assert_eq!(verify(b"secret", &token, c.event_id, c.user_id, "b2", 999), Err(TokenError::OtherHolder));
        assert_eq!(verify(b"other secret", &token, c.event_id, c.user_id, "b1", 999), Err(TokenError::Forged));
    }

    #[test]
    fn tampering_with_any_field_breaks_the_signature() {
        let c = claims();
        let token = sign(b"secret", &c);
        let later = token.replacen(".1000.", ".99999.", 1);
        assert_eq!(verify(b"secret", &later, c.event_id, c.user_id, "b1", 999), Err(TokenError::Forged));
        assert_eq!(verify(b"secret", "junk", c.event_id, c.user_id, "b1", 999), Err(TokenError::Malformed));
        assert_eq!(verify(b"secret", "a.b.zz", c.event_id, c.user_id, "b1", 999), Err(TokenError::Malformed));
        // The phase is signed: a presale admission cannot be passed off as a public one.
        let public = token.replacen(".presale.", ".public.", 1);
        assert_eq!(verify(b"secret", &public, c.event_id, c.user_id, "b1", 999), Err(TokenError::Forged));
    }
}
