//! The live dashboard's figures: seats by tier from this instance's seat
//! map, money and the last hour's activity from the database.

use chrono::{DateTime, Utc};

use frontrow_model::{EventId, EventStats, MinutePoint, MinuteStats, QueueFigures, SeatStatus, TierStats, TypeStats, User};

use crate::accounts::require_staff;
use crate::error::Result;
use crate::Engine;

impl Engine {
    pub async fn event_stats(&self, staff: &User, event_id: EventId) -> Result<EventStats> {
        require_staff(staff)?;
        let board = self.board().snapshot(event_id).await?;
        let pool = self.pool();
        let money = sqlx::query!(
            r#"SELECT s.tier, coalesce(sum(CASE WHEN t.voided_at IS NULL THEN t.price_cents ELSE t.kept_cents END), 0)::bigint AS "revenue!",
                      count(*) FILTER (WHERE t.state = 'checked_in') AS "checked_in!"
               FROM tickets t JOIN seats s USING (event_id, seat_id)
               WHERE t.event_id = $1 AND (t.voided_at IS NULL OR t.kept_cents > 0) GROUP BY s.tier"#,
            event_id.as_uuid()
        )
        .fetch_all(pool)
        .await?;
        let mut tiers: Vec<TierStats> = board
            .event
            .tiers
            .iter()
            .map(|t| TierStats { tier: t.tier.clone(), sold: 0, held: 0, available: 0, blocked: 0, revenue_cents: 0 })
            .collect();
        for (i, status) in board.statuses.iter().enumerate() {
            let Some(tier) = tiers.get_mut(board.layout.seats[i].tier_index) else { continue };
            match status {
                SeatStatus::Available => tier.available += 1,
                SeatStatus::Held => tier.held += 1,
                SeatStatus::Sold => tier.sold += 1,
                SeatStatus::Blocked => tier.blocked += 1,
            }
        }
        for m in &money {
            if let Some(tier) = tiers.iter_mut().find(|t| t.tier == m.tier) {
                tier.revenue_cents = m.revenue;
            }
        }

        let by_type = sqlx::query!(
            r#"SELECT t.ticket_type AS "ticket_type!", count(*) FILTER (WHERE t.voided_at IS NULL) AS "sold!",
                      coalesce(sum(CASE WHEN t.voided_at IS NULL THEN t.price_cents ELSE t.kept_cents END), 0)::bigint AS "revenue!"
               FROM tickets t
               WHERE t.event_id = $1 AND t.ticket_type IS NOT NULL AND (t.voided_at IS NULL OR t.kept_cents > 0) GROUP BY t.ticket_type"#,
            event_id.as_uuid()
        )
        .fetch_all(pool)
        .await?;
        // Every type the event sells, in its order, then any it no longer does.
        let mut types: Vec<TypeStats> =
            board.event.ticket_types.iter().map(|t| TypeStats { ticket_type: t.name.clone(), sold: 0, revenue_cents: 0 }).collect();
        for row in by_type {
            match types.iter_mut().find(|t| t.ticket_type == row.ticket_type) {
                Some(t) => (t.sold, t.revenue_cents) = (row.sold, row.revenue),
                None => types.push(TypeStats { ticket_type: row.ticket_type, sold: row.sold, revenue_cents: row.revenue }),
            }
        }

        let minute = sqlx::query!(
            r#"SELECT
                 (SELECT count(DISTINCT hold_id) FROM seat_events WHERE event_id = $1 AND reason IN ('hold', 'counter_hold') AND at > now() - interval '1 minute') AS "holds!",
                 (SELECT count(DISTINCT hold_id) FROM seat_events WHERE event_id = $1 AND reason = 'expired' AND at > now() - interval '1 minute') AS "expired!",
                 (SELECT count(*) FROM checkouts WHERE event_id = $1 AND state = 'confirmed' AND updated_at > now() - interval '1 minute') AS "checkouts!",
                 (SELECT count(*) FROM checkouts WHERE event_id = $1 AND state IN ('declined', 'failed') AND updated_at > now() - interval '1 minute') AS "failures!",
                 (SELECT count(*) FROM refunds r JOIN payment_intents pi USING (payment_id) JOIN checkouts c USING (checkout_id)
                   WHERE c.event_id = $1 AND r.created_at > now() - interval '1 minute') AS "refunds!",
                 (SELECT coalesce(sum(admitted), 0)::bigint FROM admission_ticks WHERE event_id = $1 AND at > now() - interval '1 minute') AS "admitted!""#,
            event_id.as_uuid()
        )
        .fetch_one(pool)
        .await?;
        let queue = self.queue_stats(event_id).await?;

        // The last hour, minute by minute (oldest first), for the charts.
        let series = sqlx::query!(
            r#"WITH minutes AS (
                   SELECT generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()), interval '1 minute') AS at
               ), seats AS (
                   SELECT date_trunc('minute', at) AS at,
                          count(DISTINCT hold_id) FILTER (WHERE reason IN ('hold', 'counter_hold')) AS holds,
                          count(DISTINCT hold_id) FILTER (WHERE reason = 'expired') AS expired,
                          count(*) FILTER (WHERE reason = 'sale') AS sold
                     FROM seat_events WHERE event_id = $1 AND at > now() - interval '1 hour' GROUP BY 1
               ), failures AS (
                   SELECT date_trunc('minute', updated_at) AS at, count(*) AS n
                     FROM checkouts WHERE event_id = $1 AND state IN ('declined', 'failed') AND updated_at > now() - interval '1 hour' GROUP BY 1
               ), admitted AS (
                   SELECT date_trunc('minute', at) AS at, sum(admitted)::bigint AS n
                     FROM admission_ticks WHERE event_id = $1 AND at > now() - interval '1 hour' GROUP BY 1
               )
               SELECT m.at AS "at!: DateTime<Utc>", coalesce(s.holds, 0) AS "holds!", coalesce(s.expired, 0) AS "expired!",
                      coalesce(s.sold, 0) AS "sold!", coalesce(f.n, 0) AS "failures!", coalesce(a.n, 0)::bigint AS "admitted!"
                 FROM minutes m LEFT JOIN seats s USING (at) LEFT JOIN failures f USING (at) LEFT JOIN admitted a USING (at)
                ORDER BY m.at"#,
            event_id.as_uuid()
        )
        .fetch_all(pool)
        .await?;

        Ok(EventStats {
            seats_available: board.count(SeatStatus::Available),
            seats_held: board.count(SeatStatus::Held),
            seats_sold: board.count(SeatStatus::Sold),
            seats_blocked: board.count(SeatStatus::Blocked),
            checked_in: money.iter().map(|m| m.checked_in).sum(),
            revenue_cents: money.iter().map(|m| m.revenue).sum(),
            tiers,
            types,
            last_minute: MinuteStats {
                holds: minute.holds,
                holds_expired: minute.expired,
                checkouts: minute.checkouts,
                payment_failures: minute.failures,
                refunds: minute.refunds,
            },
            queue: QueueFigures { waiting: queue.counts.queue_length, active: queue.counts.active_shoppers, admitted_per_minute: minute.admitted },
            waitlist: self.waitlist_figures(event_id).await?,
            last_hour: series
                .into_iter()
                .map(|p| MinutePoint {
                    at: p.at,
                    holds: p.holds,
                    expired: p.expired,
                    sold: p.sold,
                    payment_failures: p.failures,
                    admitted: p.admitted,
                })
                .collect(),
        })
    }
}
