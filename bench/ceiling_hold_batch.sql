-- For `scripts/profile_holds.sh --ceiling` only, never a migration: a
-- hold_batch that does the least a batch of one-seat holds can do, each
-- seat's conditional UPDATE (as pgbench's) in one statement and one commit,
-- with no hold row, audit row, change-log row, fan count or lock. What the
-- load generator then measures is the ceiling the HTTP path and the batching
-- leave on this machine, whatever the database does (bench/PROFILE.md).
CREATE OR REPLACE FUNCTION hold_batch(p_event uuid, p_lock integer, p_requests jsonb)
RETURNS TABLE (request_index integer, outcome text, seat_ids text[], lease_ends_at timestamptz, hold_total_cents bigint,
               hold_id uuid, hold_token text)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('frontrow.seat_notify', 'batch', true);
    RETURN QUERY
    WITH wanted AS (
        SELECT (o.i - 1)::integer AS i, o.r->'seats'->>0 AS seat, (o.r->>'hold')::uuid AS hold, o.r->>'token' AS token, (o.r->>'fan')::uuid AS fan
          FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i)
    ), taken AS (
        UPDATE seats s
           SET state = 'held', hold_id = w.hold, hold_token = w.token, holder_id = w.fan,
               hold_expires_at = now() + interval '10 minutes', version = s.version + 1
          FROM wanted w
         WHERE s.event_id = p_event AND s.seat_id = w.seat AND s.state = 'available'
        RETURNING w.i, s.seat_id, s.hold_expires_at, s.price_cents
    )
    SELECT w.i, CASE WHEN t.i IS NULL THEN 'conflict' ELSE 'held' END, ARRAY[w.seat], t.hold_expires_at, t.price_cents::bigint,
           NULL::uuid, NULL::text
      FROM wanted w LEFT JOIN taken t USING (i)
     ORDER BY w.i;
END;
$$;
