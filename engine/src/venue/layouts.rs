//! Saved venue layouts: a seating plan staff build once and seat events
//! with.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use frontrow_model::{Layout, LayoutId, NewLayout, NewSection, User};
use uuid::Uuid;

use crate::changelog;
use crate::error::{EngineError, Result};
use crate::venue::catalogue::{check_text, check_tier, validate_sections, MAX_TEXT_LEN};
use crate::Engine;

/// The tiers a plan's rows and standing areas name, in the order they
/// first appear.
pub fn tiers_of(sections: &[NewSection]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut tiers = Vec::new();
    let named = sections.iter().flat_map(|s| s.standing.iter().map(|a| a.tier.as_str()).chain(s.rows.iter().map(|r| r.tier.as_str())));
    for tier in named {
        if seen.insert(tier) {
            tiers.push(tier.to_owned());
        }
    }
    tiers
}

/// Checks a plan on its own (its rows' tiers are whatever they name).
pub fn validate_layout(sections: &[NewSection]) -> Result<i64> {
    let tiers = tiers_of(sections);
    for t in &tiers {
        check_tier(t)?;
    }
    if tiers.len() > 20 {
        return Err(EngineError::invalid("a layout may use at most 20 price tiers"));
    }
    validate_sections(sections, &tiers.iter().map(String::as_str).collect())
}

impl Engine {
    pub async fn save_layout(&self, actor: &User, new: &NewLayout) -> Result<Layout> {
        crate::accounts::require_staff(actor)?;
        check_text("name", &new.name, MAX_TEXT_LEN)?;
        let seats_total = validate_layout(&new.sections)?;
        crate::venue::catalogue::validate_stage(new.stage.as_ref())?;
        let stage = new.stage.as_ref().map(serde_json::to_value).transpose().map_err(|e| EngineError::Internal(format!("encoding a stage: {e}")))?;
        let sections = serde_json::to_value(&new.sections).map_err(|e| EngineError::Internal(format!("encoding a layout: {e}")))?;
        let tiers = tiers_of(&new.sections);
        let layout_id = Uuid::new_v4();
        let mut tx = crate::db::begin(self.pool()).await?;
        let created_at = sqlx::query_scalar!(
            r#"INSERT INTO layouts (layout_id, name, sections, tiers, seats_total, created_by, stage)
               VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at AS "at: DateTime<Utc>""#,
            layout_id,
            new.name.trim(),
            sections,
            &tiers,
            seats_total as i32,
            actor.user_id.as_uuid(),
            stage,
        )
        .fetch_one(&mut *tx)
        .await?;
        changelog::record(&mut tx, None, actor.user_id, "layout_saved", &[], &format!("{} ({seats_total} seats)", new.name.trim())).await?;
        tx.commit().await?;
        Ok(Layout {
            layout_id: layout_id.into(),
            name: new.name.trim().to_owned(),
            tiers,
            seats_total,
            sections: new.sections.clone(),
            stage: new.stage.clone(),
            created_at,
        })
    }

    pub async fn layouts(&self) -> Result<Vec<Layout>> {
        sqlx::query_as!(
            StoredLayout,
            r#"SELECT layout_id, name, sections, tiers, seats_total, stage, created_at AS "created_at: DateTime<Utc>"
               FROM layouts ORDER BY created_at DESC"#
        )
        .fetch_all(self.pool())
        .await?
        .into_iter()
        .map(Layout::try_from)
        .collect()
    }

    pub async fn layout(&self, layout_id: LayoutId) -> Result<Layout> {
        sqlx::query_as!(
            StoredLayout,
            r#"SELECT layout_id, name, sections, tiers, seats_total, stage, created_at AS "created_at: DateTime<Utc>"
               FROM layouts WHERE layout_id = $1"#,
            layout_id.as_uuid()
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?
        .try_into()
    }
}

/// A `layouts` row as stored: the plan and the stage are JSON.
struct StoredLayout {
    layout_id: LayoutId,
    name: String,
    sections: serde_json::Value,
    tiers: Vec<String>,
    seats_total: i32,
    stage: Option<serde_json::Value>,
    created_at: DateTime<Utc>,
}

impl TryFrom<StoredLayout> for Layout {
    type Error = EngineError;

    fn try_from(r: StoredLayout) -> Result<Self> {
        Ok(Layout {
            layout_id: r.layout_id,
            name: r.name,
            tiers: r.tiers,
            seats_total: i64::from(r.seats_total),
            sections: serde_json::from_value(r.sections).map_err(|e| EngineError::Internal(format!("a stored layout: {e}")))?,
            stage: r.stage.and_then(|s| serde_json::from_value(s).ok()),
            created_at: r.created_at,
        })
    }
}
