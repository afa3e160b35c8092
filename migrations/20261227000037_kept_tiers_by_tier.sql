-- The tiers the waiting list keeps, found by asking each of the event's
-- tiers (at most 20) whether a fan waits for it: one probe of the waiting
-- index each. `DISTINCT` over the waiting entries read every one of them,
-- and a sold-out tier's list can hold every fan who came: that read ran in
-- every hold batch (the hottest statement there is) and every admission
-- round. Same answer: an entry's tier is always one of the event's tiers
-- (its foreign key). The probe is lateral with an order and a limit, which
-- the planner keeps as one look-up of the index per tier (an EXISTS it may
-- turn into reading every entry, grouped by tier). PL/pgSQL, not SQL, so
-- its plan is kept between calls rather than made again for each.
CREATE OR REPLACE FUNCTION waitlist_kept_tiers(p_event uuid) RETURNS text[]
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN ARRAY(SELECT t.tier
                   FROM price_tiers t JOIN events e USING (event_id)
                        CROSS JOIN LATERAL (SELECT 1 FROM waitlist_entries w
                                             WHERE w.event_id = p_event AND w.tier = t.tier AND w.hold_id IS NULL
                                             ORDER BY w.seq LIMIT 1) waiting
                  WHERE t.event_id = p_event AND NOT e.waitlist_paused
                  ORDER BY t.tier);
END;
$$;

-- hold_batch (as in 20261225000034) makes the same probe in place of its
-- read of the entries (it has checked the pause already); the rest of it is
-- unchanged, so it is rewritten from its stored definition rather than
-- copied out here.
DO $$
DECLARE
    old_read constant text := 'ARRAY(SELECT DISTINCT w.tier FROM waitlist_entries w WHERE w.event_id = p_event AND w.hold_id IS NULL)';
    new_read constant text := 'ARRAY(SELECT t.tier FROM price_tiers t CROSS JOIN LATERAL (SELECT 1 FROM waitlist_entries w WHERE w.event_id = p_event AND w.tier = t.tier AND w.hold_id IS NULL ORDER BY w.seq LIMIT 1) waiting WHERE t.event_id = p_event)';
    definition text := pg_get_functiondef('hold_batch(uuid, integer, jsonb)'::regprocedure);
BEGIN
    IF position(old_read IN definition) = 0 THEN
        RAISE EXCEPTION 'hold_batch no longer reads the waiting tiers as expected';
    END IF;
    EXECUTE replace(definition, old_read, new_read);
END;
$$;
