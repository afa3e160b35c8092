//! An event's change log: every seat transition (`seat_events`, written by
//! [`crate::sale::seats`]) and every staff action (`staff_actions`, written here,
//! in the same transaction as the action), read back together, newest first.

use std::fmt::Write;

use chrono::{DateTime, Utc};
use frontrow_model::{EventId, UserId};
pub use frontrow_model::{LogEntry, LogFilter};
use sqlx::PgConnection;

use crate::error::Result;
use crate::Engine;

/// Records a staff action in the event's change log.
pub(crate) async fn record(
    conn: &mut PgConnection,
    event_id: Option<EventId>,
    actor: UserId,
    kind: &str,
    seat_ids: &[String],
    detail: &str,
) -> Result<()> {
    sqlx::query!(
        "INSERT INTO staff_actions (event_id, actor_id, kind, seat_ids, detail) VALUES ($1, $2, $3, $4, $5)",
        event_id.map(|id| id.as_uuid()),
        actor.as_uuid(),
        kind,
        seat_ids,
        detail
    )
    .execute(conn)
    .await?;
    Ok(())
}

impl Engine {
    /// The event's change log, newest first.
    pub async fn change_log(&self, event_id: EventId, filter: &LogFilter) -> Result<Vec<LogEntry>> {
        filter.check()?;
        let limit = filter.limit.unwrap_or(200);
        let rows = sqlx::query!(
            r#"SELECT at AS "at!: DateTime<Utc>", kind AS "kind!", seat_ids AS "seat_ids!", actor, detail AS "detail!" FROM (
                   SELECT 1 AS source, max(se.at) AS at, se.reason::text AS kind, array_agg(se.seat_id ORDER BY se.seat_id) AS seat_ids,
                          u.email AS actor,
                          CASE WHEN se.token_tag IS NOT NULL THEN 'hold ' || left(se.hold_id::text, 8) || ', token ' || se.token_tag ELSE '' END
                            || ' (' || se.from_state::text || ' → ' || se.to_state::text || ')' AS detail
                     FROM seat_events se LEFT JOIN users u ON u.user_id = se.actor_id
                    WHERE se.event_id = $1
                      AND ($2::text IS NULL OR se.seat_id = $2)
                      AND ($3::text IS NULL OR se.reason::text = $3)
                      AND ($4::timestamptz IS NULL OR se.at >= $4)
                      AND ($5::timestamptz IS NULL OR se.at < $5)
                    GROUP BY se.at, se.reason, se.hold_id, se.token_tag, se.actor_id, u.email, se.from_state, se.to_state
                   UNION ALL
                   SELECT 0, a.at, a.kind, a.seat_ids, u.email, a.detail
                     FROM staff_actions a JOIN users u ON u.user_id = a.actor_id
                    WHERE a.event_id = $1
                      AND ($2::text IS NULL OR $2 = ANY (a.seat_ids))
                      AND ($3::text IS NULL OR a.kind = $3)
                      AND ($4::timestamptz IS NULL OR a.at >= $4)
                      AND ($5::timestamptz IS NULL OR a.at < $5)
               ) entries
               -- A staff action first, then the seat changes it made at the same instant.
               ORDER BY at DESC, source
               LIMIT $6"#,
            event_id.as_uuid(),
            filter.seat_id.as_deref(),
            filter.kind.as_deref(),
            filter.since as Option<DateTime<Utc>>,
            filter.until as Option<DateTime<Utc>>,
            limit,
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(|r| LogEntry { at: r.at, kind: r.kind, seat_ids: r.seat_ids, actor: r.actor, detail: r.detail }).collect())
    }
}

/// Quotes a CSV field when it needs it (RFC 4180), and defuses cells a
/// spreadsheet would run as a formula.
pub fn csv_field(value: &str) -> String {
    let value = if value.starts_with(['=', '+', '-', '@']) { format!("'{value}") } else { value.to_owned() };
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

/// The change log as CSV.
pub fn log_csv(entries: &[LogEntry]) -> String {
    let mut out = String::from("at,kind,seat_ids,actor,detail\n");
    for e in entries {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            e.at.to_rfc3339(),
            csv_field(&e.kind),
            csv_field(&e.seat_ids.join(" ")),
            csv_field(e.actor.as_deref().unwrap_or("")),
            csv_field(&e.detail)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=SUM(A1)"), "'=SUM(A1)");
    }
}
