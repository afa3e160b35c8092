-- The freed seat, written once for every way a seat is let go (a release,
-- staff freeing a stuck hold, an unpaid reservation past its deadline, the
-- reaper): back on sale, or blocked again if staff had blocked it before the
-- hold; the claim's fields cleared; a new version for the live maps.
-- Used as `UPDATE seats SET (state, hold_id, hold_token, holder_id,
-- hold_expires_at, version) = (SELECT * FROM seat_freed(blocked_reason))`.
CREATE FUNCTION seat_freed(p_blocked_reason text)
RETURNS TABLE (state seat_state, hold_id uuid, hold_token text, holder_id uuid, hold_expires_at timestamptz, version bigint)
LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN p_blocked_reason IS NULL THEN 'available'::seat_state ELSE 'blocked'::seat_state END,
           NULL::uuid, NULL::text, NULL::uuid, NULL::timestamptz, nextval('seat_version_seq')
$$;
