//! Presales: access codes that open an event's seats (some tiers or
//! sections, a number of uses each) in a window before its public sale.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{AccessCodeBatchId, EventId};

/// What a code's uses count: seats (or places) held with it, or holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "code_limit_unit", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum CodeLimitUnit {
    #[default]
    Tickets,
    Orders,
}

impl CodeLimitUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            CodeLimitUnit::Tickets => "tickets",
            CodeLimitUnit::Orders => "orders",
        }
    }
}

/// Staff ask for a batch of presale codes: one `code` they choose, shared
/// by everyone who is given it (a fan club's), or `count` unique random
/// codes, one per fan (a card holder's). Every code of the batch opens the
/// same seats in the same window, up to `max_uses` each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewAccessCodes {
    /// Whom the presale is for, as fans and staff read it ("Fan club").
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 80))]
    pub label: String,
    /// The shared code (4 to 40 letters, digits or dashes); give this or `count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_length = 4, max_length = 40, pattern = "^[A-Za-z0-9-]+$"))]
    pub code: Option<String>,
    /// How many unique codes to make; give this or `code`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10000))]
    pub count: Option<u32>,
    /// Uses per code, counted in `limit_unit`.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100000))]
    pub max_uses: i32,
    #[serde(default)]
    pub limit_unit: CodeLimitUnit,
    /// The tiers the codes open, each once; none: every tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// The sections (or standing areas) the codes open, each once; none:
    /// every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<String>>,
    /// The presale's window; it must end by the public sale's opening.
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
}

/// A batch of presale codes as staff see it, with its uses now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AccessCodeBatch {
    pub batch_id: AccessCodeBatchId,
    pub event_id: EventId,
    pub label: String,
    /// One code shared by many fans, or unique codes.
    pub shared: bool,
    /// The shared code's first characters (it is stored only hashed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// How many codes the batch has.
    pub codes: i64,
    pub max_uses: i32,
    pub limit_unit: CodeLimitUnit,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<String>>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
    /// Uses taken now, over all its codes (live holds, paying or paid).
    pub uses: i64,
    /// Codes with at least one use now.
    pub codes_used: i64,
}

/// A batch just made, with its codes: the shared one as given, or the
/// unique ones (also in the batch's CSV export).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedAccessCodes {
    pub batch: AccessCodeBatch,
    pub codes: Vec<String>,
}

/// One unique code of a batch and its uses now (a row of the CSV export).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessCodeUses {
    pub code: String,
    pub uses: i64,
}

/// A presale as fans read it on the event's page (never its codes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Presale {
    pub label: String,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
}

impl Presale {
    pub fn is_open(&self, now: DateTime<Utc>) -> bool {
        self.starts_at <= now && now < self.ends_at
    }
}

/// A fan enters a presale code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PresaleCodeEntry {
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub code: String,
}

/// What a valid presale code lets its fan do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PresalePass {
    pub event_id: EventId,
    pub label: String,
    /// When the code opens seats (it may be entered before, to queue).
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// The tiers it opens; none: every tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// The sections it opens; none: every section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<String>>,
    pub max_uses: i32,
    pub limit_unit: CodeLimitUnit,
}

impl PresalePass {
    /// Does the code open its seats at `now`?
    pub fn is_open(&self, now: DateTime<Utc>) -> bool {
        self.starts_at <= now && now < self.ends_at
    }

    /// What the code opens, in words: "Stalls tier, up to 2 tickets".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(tiers) = &self.tiers {
            parts.push(format!("tier {}", tiers.join(", ")));
        }
        if let Some(sections) = &self.sections {
            parts.push(format!("section {}", sections.join(", ")));
        }
        if parts.is_empty() {
            parts.push("every seat".to_owned());
        }
        let unit = match (self.limit_unit, self.max_uses) {
            (CodeLimitUnit::Tickets, 1) => "ticket",
            (CodeLimitUnit::Tickets, _) => "tickets",
            (CodeLimitUnit::Orders, 1) => "order",
            (CodeLimitUnit::Orders, _) => "orders",
        };
        format!("{}, up to {} {unit}", parts.join("; "), self.max_uses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_says_what_it_opens() {
        let pass = PresalePass {
            event_id: EventId::from_uuid(uuid::Uuid::nil()),
            label: "Fan club".into(),
            starts_at: Utc::now(),
            ends_at: Utc::now(),
            tiers: Some(vec!["Front".into()]),
            sections: None,
            max_uses: 1,
            limit_unit: CodeLimitUnit::Orders,
        };
        assert_eq!(pass.describe(), "tier Front, up to 1 order");
        let every = PresalePass { tiers: None, max_uses: 4, limit_unit: CodeLimitUnit::Tickets, ..pass };
        assert_eq!(every.describe(), "every seat, up to 4 tickets");
    }
}
