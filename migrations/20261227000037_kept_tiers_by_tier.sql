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

-- Its callers, rewritten from their stored definitions with only that
-- expression changed (the rest of each is as its last migration left it,
-- not copied out here):
-- - hold_batch (20261225000034) makes the same probe in place of its read
--   of the entries (it has checked the pause already);
-- - queue_admission_round (20261220000029) counted the seats left with the
--   function called for every free seat (0.4-0.9 s a round for 80,000
--   seats, measured); as a subquery it is asked once (13 ms).
DO $$
DECLARE
    patch record;
    definition text;
BEGIN
    FOR patch IN
        SELECT * FROM (VALUES
            ('hold_batch(uuid, integer, jsonb)',
             'ARRAY(SELECT DISTINCT w.tier FROM waitlist_entries w WHERE w.event_id = p_event AND w.hold_id IS NULL)',
             'ARRAY(SELECT t.tier FROM price_tiers t CROSS JOIN LATERAL (SELECT 1 FROM waitlist_entries w WHERE w.event_id = p_event AND w.tier = t.tier AND w.hold_id IS NULL ORDER BY w.seq LIMIT 1) waiting WHERE t.event_id = p_event)'),
            ('queue_admission_round(uuid, sale_phase, uuid, double precision, double precision, double precision, text)',
             'NOT s.tier = ANY (waitlist_kept_tiers(p_event))',
             'NOT s.tier = ANY (coalesce((SELECT waitlist_kept_tiers(p_event)), ''{}''))')
        ) AS p(fn, old_text, new_text)
    LOOP
        definition := pg_get_functiondef(patch.fn::regprocedure);
        IF position(patch.old_text IN definition) = 0 THEN
            RAISE EXCEPTION '% no longer reads the waiting tiers as expected', patch.fn;
        END IF;
        EXECUTE replace(definition, patch.old_text, patch.new_text);
    END LOOP;
END;
$$;
