//! Fault injection for the crash tests: the process dies at a named point,
//! as a power cut would, and the test checks what a restart finds.
//!
//! Compiled into debug builds only (the tests run those). A release binary
//! has no fail-point and no way to set one, so no configuration can make a
//! production server abort.

use std::str::FromStr;

/// A point where a debug build may be told to die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailPoint {
    /// A sale is committed; the reply is not sent.
    AbortAfterCheckoutCommit,
    /// The seats are reserved for a payment not yet sent to the provider.
    AbortBeforePayment,
    /// One booking of a cancelled event is refunded, the others not yet.
    AbortMidCancellation,
    /// A fan's cancellation is committed; its refund not yet asked for.
    AbortBeforeRefund,
    /// A waiting-list round has written an offer, not committed it.
    AbortMidWaitlistRound,
}

impl FailPoint {
    const ALL: [FailPoint; 5] =
        [Self::AbortAfterCheckoutCommit, Self::AbortBeforePayment, Self::AbortMidCancellation, Self::AbortBeforeRefund, Self::AbortMidWaitlistRound];

    pub fn name(self) -> &'static str {
        match self {
            Self::AbortAfterCheckoutCommit => "abort_after_checkout_commit",
            Self::AbortBeforePayment => "abort_before_payment",
            Self::AbortMidCancellation => "abort_mid_cancellation",
            Self::AbortBeforeRefund => "abort_before_refund",
            Self::AbortMidWaitlistRound => "abort_mid_waitlist_round",
        }
    }
}

impl FromStr for FailPoint {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|point| point.name() == name).ok_or_else(|| {
            let known: Vec<_> = Self::ALL.iter().map(|point| point.name()).collect();
            format!("unknown fail-point {name:?} (known: {})", known.join(", "))
        })
    }
}

impl crate::Engine {
    /// Dies here if this (debug) build was told to; does nothing otherwise.
    #[cfg(debug_assertions)]
    pub fn fail_point(&self, point: FailPoint) {
        if self.settings().fail_point == Some(point) {
            tracing::error!(fail_point = point.name(), "fail-point reached: the process dies here");
            std::process::abort();
        }
    }

    /// Release builds carry no fail-points.
    #[cfg(not(debug_assertions))]
    #[inline(always)]
    pub fn fail_point(&self, _point: FailPoint) {}
}

#[cfg(test)]
mod tests {
    use super::FailPoint;

    #[test]
    fn every_point_reads_back_from_its_name_and_others_are_refused() {
        for point in FailPoint::ALL {
            assert_eq!(point.name().parse::<FailPoint>(), Ok(point));
        }
        let refused = "abort_everywhere".parse::<FailPoint>().unwrap_err();
        assert!(refused.contains("abort_before_payment"), "{refused}");
    }
}
