-- Holds in one round trip, many at a time.
--
-- The server gathers the hold requests that arrive for one event while the
-- previous batch is in flight and sends them together: one call, one
-- transaction, one commit (and so one wait on the commit of the live-map
-- notifications) for the whole batch. The event's rules are read here, from
-- its row, so what the server remembered of them is never the last word.
-- Every lock the batch needs is taken first, in one order for everybody
-- (the fans' advisory locks by key, then the seats by id), so two batches
-- from two instances wait for each other but never deadlock. Then the
-- requests are decided one after another in the order given, exactly as
-- if each ran alone: the per-fan limit, the seats checked free, the hold
-- row (refused if its idempotency key is taken), then the compare-and-swap
-- of the seats with its audit rows. A request that cannot have every seat
-- it asked for changes nothing. The live maps
-- hear of the whole batch at once: one notification (per 60 seats) at the
-- end, instead of one per request from the seats trigger.
--
-- p_requests: [{"fan", "seats": [..], "hold", "token", "tag", "key"|null,
--               "hash", "admitted": bool}, ...]  ("admitted": the fan showed
--               a valid admission to this event's waiting room)
-- One row per request: outcome 'held' (seat ids, lease end, total),
-- 'conflict' (the seats that were free), 'too_many', 'key_in_use',
-- 'not_admitted', 'not_open', or 'closed' (unpublished or cancelled).
CREATE FUNCTION hold_batch(p_event uuid, p_lock integer, p_requests jsonb)
RETURNS TABLE (request_index integer, outcome text, free_seat_ids text[], lease_ends_at timestamptz, hold_total_cents bigint)
LANGUAGE plpgsql AS $$
DECLARE
    req jsonb;
    n integer;
    v_fan uuid;
    v_seats text[];
    v_hold uuid;
    v_free text[];
    v_total bigint;
    v_already bigint;
    v_expires timestamptz;
    v_changes jsonb := '[]';
    message text;
    ev record;
    v_refusal text;
    v_key integer;
    v_all_seats text[];
BEGIN
    SELECT e.published AND e.cancelled_at IS NULL AS open, e.sale_opens_at <= now() AS on_sale,
           e.waiting_room_enabled, e.hold_ttl_seconds, e.max_seats_per_order
      INTO ev
      FROM events e WHERE e.event_id = p_event;
    v_refusal := CASE WHEN NOT coalesce(ev.open, false) THEN 'closed' WHEN NOT ev.on_sale THEN 'not_open' END;
    IF v_refusal IS NOT NULL THEN
        RETURN QUERY SELECT (o.i - 1)::integer, v_refusal, NULL::text[], NULL::timestamptz, NULL::bigint
                       FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i);
        RETURN;
    END IF;
    v_expires := now() + make_interval(secs => ev.hold_ttl_seconds);

    -- Every lock up front, in one global order: fans (by lock key), then
    -- seats (by id). A request's own locks below are then already held.
    FOR v_key IN SELECT DISTINCT hashtext(p_event::text || (r->>'fan'))
                   FROM jsonb_array_elements(p_requests) r ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(p_lock, v_key);
    END LOOP;
    -- (An array, so the seats are found by key, not by scanning the event.)
    v_all_seats := ARRAY(SELECT DISTINCT jsonb_array_elements_text(r->'seats') FROM jsonb_array_elements(p_requests) r);
    PERFORM 1 FROM seats s
     WHERE s.event_id = p_event AND s.seat_id = ANY (v_all_seats)
     ORDER BY s.seat_id
       FOR UPDATE;

    -- This transaction's seat changes are announced below, not by the trigger.
    PERFORM set_config('frontrow.seat_notify', 'batch', true);
    n := 0;
    FOR req IN SELECT value FROM jsonb_array_elements(p_requests) LOOP
        request_index := n;
        n := n + 1;
        outcome := NULL; free_seat_ids := NULL; lease_ends_at := NULL; hold_total_cents := NULL;
        v_fan := (req->>'fan')::uuid;
        v_hold := (req->>'hold')::uuid;
        v_seats := ARRAY(SELECT jsonb_array_elements_text(req->'seats'));

        IF ev.waiting_room_enabled AND NOT coalesce((req->>'admitted')::boolean, false) THEN
            outcome := 'not_admitted';
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- The fan's advisory lock (taken above) keeps two holds of one fan,
        -- from any instance, from both passing the limit.
        SELECT (SELECT count(*) FROM seats s
                 WHERE s.event_id = p_event AND s.holder_id = v_fan
                   AND (s.state = 'payment_pending' OR (s.state = 'held' AND s.hold_expires_at > now())))
             + (SELECT count(*) FROM tickets t JOIN bookings b USING (booking_id)
                 WHERE b.event_id = p_event AND b.user_id = v_fan AND t.voided_at IS NULL)
          INTO v_already;
        IF v_already + cardinality(v_seats) > ev.max_seats_per_order THEN
            outcome := 'too_many';
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- The seats that are free (a lapsed lease is free); locked above.
        SELECT coalesce(array_agg(f.seat_id), '{}'), coalesce(sum(f.price_cents), 0)
          INTO v_free, v_total
          FROM (SELECT s.seat_id, s.price_cents FROM seats s
                 WHERE s.event_id = p_event AND s.seat_id = ANY (v_seats)
                   AND (s.state = 'available'
                        OR (s.state = 'held' AND s.hold_expires_at <= now() AND s.blocked_reason IS NULL))
                 ORDER BY s.seat_id) f;
        IF cardinality(v_free) < cardinality(v_seats) THEN
            outcome := 'conflict';
            free_seat_ids := v_free;
            RETURN NEXT;
            CONTINUE;
        END IF;

        INSERT INTO holds (hold_id, event_id, user_id, hold_token, seat_ids, total_cents, expires_at, idempotency_key, request_hash)
        VALUES (v_hold, p_event, v_fan, req->>'token', v_seats, v_total, v_expires, req->>'key', req->>'hash')
        ON CONFLICT (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
        IF NOT FOUND THEN
            outcome := 'key_in_use';
            RETURN NEXT;
            CONTINUE;
        END IF;

        WITH claimed AS (
            UPDATE seats s
               SET state = 'held', hold_id = v_hold, hold_token = req->>'token', holder_id = v_fan,
                   hold_expires_at = v_expires, booking_id = NULL, version = nextval('seat_version_seq')
              FROM seats prior
             WHERE s.event_id = p_event AND s.seat_id = ANY (v_seats)
               AND prior.event_id = s.event_id AND prior.seat_id = s.seat_id
            RETURNING s.seat_id, s.version, prior.state AS prior_state, s.hold_expires_at, s.blocked_reason
        ), logged AS (
            INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
            SELECT p_event, c.seat_id, c.version, c.prior_state, 'held', v_hold, req->>'tag', v_fan, 'hold'
              FROM claimed c
        )
        SELECT v_changes || coalesce(jsonb_agg(jsonb_build_array(
                   c.seat_id, c.version, 'held', (extract(epoch FROM c.hold_expires_at) * 1000)::bigint,
                   c.blocked_reason IS NOT NULL) ORDER BY c.version), '[]')
          INTO v_changes
          FROM claimed c;

        outcome := 'held';
        free_seat_ids := v_seats;
        lease_ends_at := v_expires;
        hold_total_cents := v_total;
        RETURN NEXT;
    END LOOP;
    PERFORM set_config('frontrow.seat_notify', '', true);
    FOR message IN
        SELECT json_build_object('e', p_event, 'c', jsonb_agg(x.change ORDER BY x.i))::text
          FROM jsonb_array_elements(v_changes) WITH ORDINALITY AS x(change, i)
         GROUP BY (x.i - 1) / 60
    LOOP
        PERFORM pg_notify('frontrow_seats', message);
    END LOOP;
END;
$$;

-- The seats trigger as before, except inside hold_batch (which announces
-- its own changes, once).
CREATE OR REPLACE FUNCTION notify_seat_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    message text;
BEGIN
    IF current_setting('frontrow.seat_notify', true) = 'batch' THEN
        RETURN NULL;
    END IF;
    FOR message IN
        SELECT json_build_object(
                   'e', event_id,
                   'c', json_agg(json_build_array(
                            seat_id, version, state,
                            (extract(epoch FROM hold_expires_at) * 1000)::bigint,
                            blocked_reason IS NOT NULL)
                        ORDER BY version))::text
          FROM (SELECT n.*, (row_number() OVER (PARTITION BY n.event_id ORDER BY n.version) - 1) / 60 AS chunk
                  FROM changed_seats n) numbered
         GROUP BY event_id, chunk
    LOOP
        PERFORM pg_notify('frontrow_seats', message);
    END LOOP;
    RETURN NULL;
END;
$$;

-- Holds read the event's rules, and the events page its list, from each
-- instance's memory (the live board), which re-reads them when told: tell
-- it about every new event and every change, whoever makes it.
CREATE FUNCTION notify_event_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('frontrow_events', NEW.event_id::text);
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_notify_changes
    AFTER INSERT OR UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION notify_event_change();
