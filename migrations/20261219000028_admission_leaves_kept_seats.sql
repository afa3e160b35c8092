-- The waiting room admits no fan for seats the waiting list keeps.
--
-- While fans wait on an event's waiting list for a tier (and the list is
-- not paused), that tier's seats that come back are offered to them, not
-- sold to whoever holds first (see the migration that made the list). The
-- admission round counted them as remaining all the same, and so let fans
-- in from the queue to seats they could not hold. It now leaves them out.

-- The tiers whose returning seats the event's waiting list keeps.
CREATE FUNCTION waitlist_kept_tiers(p_event uuid) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(DISTINCT w.tier), '{}')
      FROM waitlist_entries w JOIN events e USING (event_id)
     WHERE w.event_id = p_event AND w.hold_id IS NULL AND NOT e.waitlist_paused
$$;

CREATE OR REPLACE FUNCTION queue_admission_round(
    p_event uuid, p_instance uuid, p_lease_secs float8, p_shopping_secs float8, p_admission_secs float8, p_channel text)
RETURNS TABLE (out_remaining bigint, out_active bigint, out_target bigint, out_admitted bigint, out_through bigint)
LANGUAGE plpgsql AS $$
DECLARE
    lease    record;
    ev       record;
    v_remaining bigint;
    v_active    bigint;
    v_next      bigint;
    v_target    bigint;
    v_slots     bigint := 0;
    v_through   bigint;
    v_rate      float8;
    v_per_sec   float8;
BEGIN
    INSERT INTO queues (event_id) VALUES (p_event) ON CONFLICT (event_id) DO NOTHING;
    UPDATE queues q
       SET leader_id = p_instance, leader_until = now() + make_interval(secs => p_lease_secs), last_tick_at = now()
     WHERE q.event_id = p_event
       AND (q.leader_id = p_instance OR q.leader_until IS NULL OR q.leader_until < now())
       AND (q.last_tick_at IS NULL OR q.last_tick_at <= now() - interval '900 milliseconds')
    RETURNING q.admitted_through, q.drawn_at, q.admit_rate,
              extract(epoch FROM now() - coalesce((SELECT max(t.at) FROM admission_ticks t WHERE t.event_id = q.event_id), now()))::float8 AS elapsed
      INTO lease;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT e.sale_opens_at <= now() AS open, e.admission_paused, e.admission_factor, e.max_active, e.waiting_room_enabled
      INTO ev FROM events e WHERE e.event_id = p_event;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no event %', p_event;
    END IF;
    IF ev.open AND lease.drawn_at IS NULL THEN
        PERFORM queue_draw(p_event);
    END IF;
    SELECT count(*) INTO v_remaining FROM seats s
     WHERE s.event_id = p_event AND seat_free(s.state, s.hold_expires_at, s.blocked_reason)
       AND NOT s.tier = ANY (waitlist_kept_tiers(p_event));
    v_active := queue_active_shoppers(p_event, make_interval(secs => p_shopping_secs));
    SELECT q.next_ticket INTO v_next FROM queues q WHERE q.event_id = p_event;
    v_target := least(ceil(ev.admission_factor * v_remaining)::bigint, ev.max_active::bigint);
    IF ev.open AND NOT ev.admission_paused AND ev.waiting_room_enabled THEN
        v_slots := greatest(0, least(v_target - v_active, v_next - lease.admitted_through));
    END IF;
    v_through := lease.admitted_through + v_slots;
    IF v_slots > 0 THEN
        UPDATE queue_entries qe
           SET admission_id = gen_random_uuid(), admitted_at = now(), last_seen_at = now(),
               admission_expires_at = now() + make_interval(secs => p_admission_secs)
         WHERE qe.event_id = p_event AND qe.ticket > lease.admitted_through AND qe.ticket <= v_through AND qe.admission_id IS NULL;
    END IF;
    -- Smoothed rate: recent rounds weigh most, so ETAs follow the pace.
    v_per_sec := v_slots::float8 / greatest(lease.elapsed, 1.0);
    v_rate := CASE WHEN lease.admit_rate = 0 THEN v_per_sec ELSE 0.7 * lease.admit_rate + 0.3 * v_per_sec END;
    UPDATE queues q SET admitted_through = v_through, admit_rate = v_rate WHERE q.event_id = p_event;
    INSERT INTO admission_ticks (event_id, instance_id, remaining, active, admitted)
    VALUES (p_event, p_instance, v_remaining, v_active, v_slots);
    PERFORM pg_notify(p_channel, json_build_object(
        'e', p_event, 'a', v_through, 'r', v_rate, 's', v_remaining,
        'd', lease.drawn_at IS NOT NULL OR ev.open)::text);
    RETURN QUERY SELECT v_remaining, v_active, v_target, v_slots, v_through;
END;
$$;
