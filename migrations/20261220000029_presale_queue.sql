-- The presale's own waiting room.
--
-- An event's waiting room had one queue. A presale now has its own beside
-- the public sale's: its own tickets, pre-queue, draw and admissions, so
-- fans with a code who arrive before the presale opens are drawn at random
-- at its opening, as the public sale's early fans are at theirs. Each
-- queue is one of the event's sale phases.
--
-- An admission is for one phase: before the public sale a hold needs a
-- presale admission (where the waiting room is on), from the opening a
-- public one. A fan joining the presale's queue is put in the public
-- sale's pre-queue too, so a fan the presale did not serve has the same
-- chance in the public draw as one who waited for it alone.

CREATE TYPE sale_phase AS ENUM ('presale', 'public');

ALTER TABLE queues ADD COLUMN phase sale_phase NOT NULL DEFAULT 'public';
ALTER TABLE queues DROP CONSTRAINT queues_pkey;
ALTER TABLE queues ADD PRIMARY KEY (event_id, phase);

ALTER TABLE queue_entries ADD COLUMN phase sale_phase NOT NULL DEFAULT 'public';
ALTER TABLE queue_entries DROP CONSTRAINT queue_entries_pkey;
ALTER TABLE queue_entries ADD PRIMARY KEY (event_id, phase, user_id);
ALTER TABLE queue_entries DROP CONSTRAINT queue_entries_event_id_ticket_key;
ALTER TABLE queue_entries ADD UNIQUE (event_id, phase, ticket);
DROP INDEX queue_entries_active_idx;
CREATE INDEX queue_entries_active_idx ON queue_entries (event_id, phase, admission_expires_at) WHERE admission_id IS NOT NULL;

ALTER TABLE admission_ticks ADD COLUMN phase sale_phase NOT NULL DEFAULT 'public';
DROP INDEX admission_ticks_event_idx;
CREATE INDEX admission_ticks_event_idx ON admission_ticks (event_id, phase, at);

-- When a phase's queue opens (and draws its pre-queue): the public sale at
-- sale_opens_at, the presale at the earliest window of its codes that are
-- not withdrawn (NULL: the event has no presale).
CREATE FUNCTION queue_opens_at(p_event uuid, p_phase sale_phase) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT CASE p_phase
             WHEN 'public' THEN e.sale_opens_at
             ELSE (SELECT min(b.starts_at) FROM access_code_batches b
                    WHERE b.event_id = e.event_id AND b.revoked_at IS NULL AND b.starts_at < e.sale_opens_at)
           END
      FROM events e WHERE e.event_id = p_event
$$;

-- Whether a phase admits fans now: the presale from its opening until the
-- public sale, the public sale from its opening on.
CREATE FUNCTION queue_phase_open(p_event uuid, p_phase sale_phase) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(queue_opens_at(p_event, p_phase) <= now(), false)
           AND (p_phase = 'public' OR now() < (SELECT e.sale_opens_at FROM events e WHERE e.event_id = p_event))
$$;

DROP FUNCTION queue_draw(uuid);
-- As before, for one phase's queue. The caller holds its row lock.
CREATE FUNCTION queue_draw(p_event uuid, p_phase sale_phase) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    base  bigint;
    drawn bigint;
BEGIN
    SELECT next_ticket INTO base FROM queues WHERE event_id = p_event AND phase = p_phase AND drawn_at IS NULL;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    WITH shuffled AS (
        SELECT user_id, row_number() OVER (ORDER BY gen_random_uuid()) AS n
          FROM queue_entries WHERE event_id = p_event AND phase = p_phase AND ticket IS NULL
    )
    UPDATE queue_entries e SET ticket = base + s.n
      FROM shuffled s WHERE e.event_id = p_event AND e.phase = p_phase AND e.user_id = s.user_id;
    GET DIAGNOSTICS drawn = ROW_COUNT;
    UPDATE queues SET next_ticket = next_ticket + drawn, prequeue = 0, drawn_at = now()
     WHERE event_id = p_event AND phase = p_phase;
    RETURN drawn;
END;
$$;

DROP FUNCTION queue_active_shoppers(uuid, interval);
-- As in 20261208000016, counting one phase's admissions.
CREATE FUNCTION queue_active_shoppers(p_event uuid, p_phase sale_phase, p_window interval) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*)
      FROM queue_entries e
     WHERE e.event_id = p_event
       AND e.phase = p_phase
       AND e.admission_id IS NOT NULL
       AND NOT lease_lapsed(e.admission_expires_at)
       AND CASE
             WHEN EXISTS (SELECT 1 FROM holds h
                           WHERE h.user_id = e.user_id AND h.event_id = e.event_id
                             AND (h.state = 'checking_out' OR hold_live(h.state, h.expires_at)))
               THEN true
             -- Held and then released, lapsed or booked: done shopping.
             WHEN EXISTS (SELECT 1 FROM holds h
                           WHERE h.user_id = e.user_id AND h.event_id = e.event_id AND h.created_at >= e.admitted_at)
               THEN false
             ELSE e.last_seen_at > now() - p_window
           END
$$;

DROP FUNCTION queue_join_many(uuid, uuid[], text[]);
-- As in 20261213000021, into one phase's queue; a presale joiner is also
-- put in the public sale's pre-queue while it is not drawn.
CREATE FUNCTION queue_join_many(p_event uuid, p_phase sale_phase, p_users uuid[], p_tokens text[])
RETURNS TABLE (out_user uuid, out_token text, out_ticket bigint, out_admission_id uuid, out_live_admission boolean,
               out_admitted_through bigint, out_prequeue bigint, out_admit_rate float8)
LANGUAGE plpgsql AS $$
DECLARE
    q      queues%ROWTYPE;
    added  bigint;
BEGIN
    INSERT INTO queues (event_id, phase) VALUES (p_event, p_phase) ON CONFLICT (event_id, phase) DO NOTHING;
    SELECT * INTO q FROM queues qq WHERE qq.event_id = p_event AND qq.phase = p_phase FOR UPDATE;
    -- The first arrivals after the opening draw the pre-queue, if the
    -- admission loop has not yet.
    IF q.drawn_at IS NULL AND coalesce(queue_opens_at(p_event, p_phase) <= now(), false) THEN
        PERFORM queue_draw(p_event, p_phase);
        SELECT * INTO q FROM queues qq WHERE qq.event_id = p_event AND qq.phase = p_phase;
    END IF;
    WITH arrivals AS (
        SELECT DISTINCT ON (a.user_id) a.user_id, a.token, a.ord
          FROM unnest(p_users, p_tokens) WITH ORDINALITY AS a (user_id, token, ord)
         ORDER BY a.user_id, a.ord
    ), newcomers AS (
        SELECT a.user_id, a.token, row_number() OVER (ORDER BY a.ord) AS n
          FROM arrivals a
          LEFT JOIN queue_entries e ON e.event_id = p_event AND e.phase = p_phase AND e.user_id = a.user_id
         WHERE e.user_id IS NULL OR (e.admission_id IS NOT NULL AND e.admission_expires_at <= now())
    )
    INSERT INTO queue_entries AS e (event_id, phase, user_id, queue_token, ticket)
    SELECT p_event, p_phase, n.user_id, n.token, CASE WHEN q.drawn_at IS NULL THEN NULL ELSE q.next_ticket + n.n END
      FROM newcomers n
    ON CONFLICT (event_id, phase, user_id) DO UPDATE
        SET queue_token = EXCLUDED.queue_token, ticket = EXCLUDED.ticket, joined_at = now(),
            admission_id = NULL, admitted_at = NULL, admission_expires_at = NULL;
    GET DIAGNOSTICS added = ROW_COUNT;
    IF q.drawn_at IS NULL THEN
        UPDATE queues qq SET prequeue = qq.prequeue + added WHERE qq.event_id = p_event AND qq.phase = p_phase;
    ELSE
        UPDATE queues qq SET next_ticket = qq.next_ticket + added WHERE qq.event_id = p_event AND qq.phase = p_phase;
    END IF;
    IF p_phase = 'presale' THEN
        -- Locks taken presale row first, public row second; nothing takes
        -- them the other way round.
        INSERT INTO queues (event_id, phase) VALUES (p_event, 'public') ON CONFLICT (event_id, phase) DO NOTHING;
        PERFORM 1 FROM queues qq WHERE qq.event_id = p_event AND qq.phase = 'public' AND qq.drawn_at IS NULL FOR UPDATE;
        IF FOUND THEN
            INSERT INTO queue_entries (event_id, phase, user_id, queue_token)
            SELECT DISTINCT p_event, 'public'::sale_phase, u, replace(gen_random_uuid()::text, '-', '')
              FROM unnest(p_users) u
            ON CONFLICT (event_id, phase, user_id) DO NOTHING;
            GET DIAGNOSTICS added = ROW_COUNT;
            UPDATE queues qq SET prequeue = qq.prequeue + added WHERE qq.event_id = p_event AND qq.phase = 'public';
        END IF;
    END IF;
    -- A statement of its own, so it sees the rows just written.
    RETURN QUERY SELECT e.user_id, e.queue_token, e.ticket, e.admission_id, coalesce(e.admission_expires_at > now(), false),
                        qq.admitted_through, qq.prequeue, qq.admit_rate
                   FROM queue_entries e JOIN queues qq ON qq.event_id = e.event_id AND qq.phase = e.phase
                  WHERE e.event_id = p_event AND e.phase = p_phase AND e.user_id = ANY (p_users);
END;
$$;

DROP FUNCTION queue_admission_round(uuid, uuid, float8, float8, float8, text);
-- As in 20261219000028, for one phase's queue. A presale nobody joined, or
-- one the public sale has ended, has no rounds.
CREATE FUNCTION queue_admission_round(
    p_event uuid, p_phase sale_phase, p_instance uuid, p_lease_secs float8, p_shopping_secs float8, p_admission_secs float8, p_channel text)
RETURNS TABLE (out_remaining bigint, out_active bigint, out_target bigint, out_admitted bigint, out_through bigint)
LANGUAGE plpgsql AS $$
DECLARE
    lease    record;
    ev       record;
    v_open   boolean;
    v_remaining bigint;
    v_active    bigint;
    v_next      bigint;
    v_target    bigint;
    v_slots     bigint := 0;
    v_through   bigint;
    v_rate      float8;
    v_per_sec   float8;
BEGIN
    IF p_phase = 'presale' THEN
        IF NOT EXISTS (SELECT 1 FROM queues q JOIN events e USING (event_id)
                        WHERE q.event_id = p_event AND q.phase = 'presale' AND now() < e.sale_opens_at) THEN
            RETURN;
        END IF;
    ELSE
        INSERT INTO queues (event_id, phase) VALUES (p_event, p_phase) ON CONFLICT (event_id, phase) DO NOTHING;
    END IF;
    UPDATE queues q
       SET leader_id = p_instance, leader_until = now() + make_interval(secs => p_lease_secs), last_tick_at = now()
     WHERE q.event_id = p_event AND q.phase = p_phase
       AND (q.leader_id = p_instance OR q.leader_until IS NULL OR q.leader_until < now())
       AND (q.last_tick_at IS NULL OR q.last_tick_at <= now() - interval '900 milliseconds')
    RETURNING q.admitted_through, q.drawn_at, q.admit_rate,
              extract(epoch FROM now() - coalesce((SELECT max(t.at) FROM admission_ticks t
                                                    WHERE t.event_id = q.event_id AND t.phase = q.phase), now()))::float8 AS elapsed
      INTO lease;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT e.admission_paused, e.admission_factor, e.max_active, e.waiting_room_enabled
      INTO ev FROM events e WHERE e.event_id = p_event;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no event %', p_event;
    END IF;
    v_open := queue_phase_open(p_event, p_phase);
    IF v_open AND lease.drawn_at IS NULL THEN
        PERFORM queue_draw(p_event, p_phase);
    END IF;
    -- The presale admits for the seats its open codes open, not the hall.
    SELECT count(*) INTO v_remaining FROM seats s
     WHERE s.event_id = p_event AND seat_free(s.state, s.hold_expires_at, s.blocked_reason)
       AND NOT s.tier = ANY (waitlist_kept_tiers(p_event))
       AND (p_phase = 'public' OR EXISTS (
                SELECT 1 FROM access_code_batches b
                 WHERE b.event_id = p_event AND b.revoked_at IS NULL AND now() >= b.starts_at AND now() < b.ends_at
                   AND (b.tiers IS NULL OR s.tier = ANY (b.tiers))
                   AND (b.sections IS NULL OR s.section = ANY (b.sections))));
    v_active := queue_active_shoppers(p_event, p_phase, make_interval(secs => p_shopping_secs));
    SELECT q.next_ticket INTO v_next FROM queues q WHERE q.event_id = p_event AND q.phase = p_phase;
    v_target := least(ceil(ev.admission_factor * v_remaining)::bigint, ev.max_active::bigint);
    IF v_open AND NOT ev.admission_paused AND ev.waiting_room_enabled THEN
        v_slots := greatest(0, least(v_target - v_active, v_next - lease.admitted_through));
    END IF;
    v_through := lease.admitted_through + v_slots;
    IF v_slots > 0 THEN
        UPDATE queue_entries qe
           SET admission_id = gen_random_uuid(), admitted_at = now(), last_seen_at = now(),
               admission_expires_at = now() + make_interval(secs => p_admission_secs)
         WHERE qe.event_id = p_event AND qe.phase = p_phase
           AND qe.ticket > lease.admitted_through AND qe.ticket <= v_through AND qe.admission_id IS NULL;
    END IF;
    -- Smoothed rate: recent rounds weigh most, so ETAs follow the pace.
    v_per_sec := v_slots::float8 / greatest(lease.elapsed, 1.0);
    v_rate := CASE WHEN lease.admit_rate = 0 THEN v_per_sec ELSE 0.7 * lease.admit_rate + 0.3 * v_per_sec END;
    UPDATE queues q SET admitted_through = v_through, admit_rate = v_rate WHERE q.event_id = p_event AND q.phase = p_phase;
    INSERT INTO admission_ticks (event_id, phase, instance_id, remaining, active, admitted)
    VALUES (p_event, p_phase, p_instance, v_remaining, v_active, v_slots);
    PERFORM pg_notify(p_channel, json_build_object(
        'e', p_event, 'p', p_phase, 'a', v_through, 'r', v_rate, 's', v_remaining,
        'd', lease.drawn_at IS NOT NULL OR v_open)::text);
    RETURN QUERY SELECT v_remaining, v_active, v_target, v_slots, v_through;
END;
$$;

-- hold_batch as in 20261218000027, with the admission a hold needs by
-- phase: where the waiting room is on, a presale hold needs a presale
-- admission and a public one a public admission (`admitted`: the phase of
-- the fan's admission, if any).
CREATE OR REPLACE FUNCTION hold_batch(p_event uuid, p_lock integer, p_requests jsonb)
RETURNS TABLE (request_index integer, outcome text, seat_ids text[], lease_ends_at timestamptz, hold_total_cents bigint,
               hold_id uuid, hold_token text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    ev record;
    v_expires timestamptz;
    v_key integer;
    req jsonb;
    n integer;
    v_fan uuid;
    v_seats text[];
    v_free text[];
    v_already integer;
    v_total bigint;
    v_idem text;
    -- The batch's seats that are free now: {seat_id: price_cents}.
    v_available jsonb;
    -- Every seat the batch names or finds: {seat_id: [tier, section]}.
    v_scope jsonb := '{}';
    -- The codes the batch presents, locked: {code_id: {open, used, max, unit, tiers, sections}}.
    v_codes jsonb := '{}';
    v_code jsonb;
    v_need integer;
    -- Each fan's seats held, paying or ticketed for this event: {fan: n}.
    v_counts jsonb;
    -- The holds behind the idempotency keys taken: {"fan key": hold}, each
    -- hold as {hold, token, seats, expires, total, hash, live}.
    v_keys jsonb;
    v_earlier jsonb;
    v_sorted text[];
    -- The requests granted (0-based) and their totals (1-based, as ordinality).
    v_granted integer[] := '{}';
    v_totals bigint[] := '{}';
    -- One entry per granted seat, side by side (arrays, so the writes below
    -- find each seat by key rather than joining on a guessed row count).
    g_seats text[] := '{}';
    g_holds uuid[] := '{}';
    g_tokens text[] := '{}';
    g_tags text[] := '{}';
    g_fans uuid[] := '{}';
    v_all_seats text[];
    v_key_fans uuid[];
    v_key_values text[];
    -- Standing areas asked for: {area: [free place ids, in layout order]}.
    v_places jsonb := '{}';
    v_area text;
    v_found text[];
    v_prices jsonb;
    v_count integer;
    -- The seats each granted request holds: {request_index: [seat ids]}.
    v_granted_seats jsonb := '{}';
    -- The code each granted presale request used: {request_index: code_id}.
    v_granted_codes jsonb := '{}';
    -- Tiers whose seats coming back are kept for the waiting list (fans
    -- wait for them and the list is not paused), and the batch's seats
    -- that are free but kept so.
    v_listed text[];
    v_kept text[];
BEGIN
    SELECT e.published AND e.cancelled_at IS NULL AS open, e.sale_opens_at <= now() AS on_sale,
           e.waiting_room_enabled, e.hold_ttl_seconds, e.max_seats_per_order, e.waitlist_paused
      INTO ev
      FROM events e WHERE e.event_id = p_event;
    IF NOT coalesce(ev.open, false) THEN
        RETURN QUERY SELECT (o.i - 1)::integer, 'closed', NULL::text[], NULL::timestamptz, NULL::bigint, NULL::uuid, NULL::text
                       FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i);
        RETURN;
    END IF;
    v_expires := now() + make_interval(secs => ev.hold_ttl_seconds);
    v_listed := CASE WHEN ev.waitlist_paused THEN '{}'::text[]
                     ELSE ARRAY(SELECT DISTINCT w.tier FROM waitlist_entries w WHERE w.event_id = p_event AND w.hold_id IS NULL) END;

    -- Every lock up front, in one global order: fans (by lock key), then
    -- codes (by id), then seats (by id), so batches from any instance
    -- never deadlock.
    FOR v_key IN SELECT DISTINCT hashtext(p_event::text || (r->>'fan'))
                   FROM jsonb_array_elements(p_requests) r ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(p_lock, v_key);
    END LOOP;
    IF NOT ev.on_sale THEN
        -- Locked first, counted after: a statement reads with the snapshot
        -- it started with, so uses counted while waiting for the lock
        -- would miss the holds of the batch that held it.
        PERFORM FROM access_codes c
          WHERE c.event_id = p_event
            AND c.code_id IN (SELECT (r->>'code')::uuid FROM jsonb_array_elements(p_requests) r WHERE r->>'code' IS NOT NULL)
          ORDER BY c.code_id
            FOR UPDATE;
        SELECT coalesce(jsonb_object_agg(l.code_id, jsonb_build_object(
                   'open', l.revoked_at IS NULL AND now() >= l.starts_at AND now() < l.ends_at,
                   'used', access_code_uses(l.code_id, l.limit_unit), 'max', l.max_uses, 'unit', l.limit_unit,
                   'tiers', to_jsonb(l.tiers), 'sections', to_jsonb(l.sections))), '{}')
          INTO v_codes
          FROM (SELECT c.code_id, b.revoked_at, b.starts_at, b.ends_at, b.max_uses, b.limit_unit, b.tiers, b.sections
                  FROM access_codes c JOIN access_code_batches b USING (batch_id)
                 WHERE c.event_id = p_event
                   AND c.code_id IN (SELECT (r->>'code')::uuid FROM jsonb_array_elements(p_requests) r WHERE r->>'code' IS NOT NULL)) l;
    END IF;
    -- The seats, locked, and which are free.
    v_all_seats := ARRAY(SELECT DISTINCT jsonb_array_elements_text(r->'seats') FROM jsonb_array_elements(p_requests) r);
    SELECT coalesce(jsonb_object_agg(l.seat_id, l.price_cents)
                        FILTER (WHERE seat_free(l.state, l.hold_expires_at, l.blocked_reason) AND NOT l.tier = ANY (v_listed)), '{}'),
           coalesce(jsonb_object_agg(l.seat_id, jsonb_build_array(l.tier, l.section)) FILTER (WHERE NOT ev.on_sale), '{}'),
           coalesce(array_agg(l.seat_id) FILTER (WHERE seat_free(l.state, l.hold_expires_at, l.blocked_reason) AND l.tier = ANY (v_listed)), '{}')
      INTO v_available, v_scope, v_kept
      FROM (SELECT s.seat_id, s.price_cents, s.state, s.hold_expires_at, s.blocked_reason, s.tier, s.section
              FROM seats s
             WHERE s.event_id = p_event AND s.seat_id = ANY (v_all_seats)
             ORDER BY s.seat_id
               FOR UPDATE) l;
    -- Places of standing areas, as many as the batch asks for per area:
    -- free ones first, then lapsed holds (lazy expiry), skipping any place
    -- another transaction has locked.
    FOR v_area IN SELECT DISTINCT r->>'area' FROM jsonb_array_elements(p_requests) r WHERE r->>'area' IS NOT NULL LOOP
        v_need := (SELECT sum((r->>'count')::integer) FROM jsonb_array_elements(p_requests) r WHERE r->>'area' = v_area);
        SELECT coalesce(array_agg(f.seat_id ORDER BY f.position), '{}'), coalesce(jsonb_object_agg(f.seat_id, f.price_cents), '{}')
          INTO v_found, v_prices
          FROM (SELECT s.seat_id, s.position, s.price_cents
                  FROM seats s
                 WHERE s.event_id = p_event AND s.section = v_area AND s.kind = 'standing' AND s.state = 'available'
                   AND NOT s.tier = ANY (v_listed)
                 ORDER BY s.position
                 LIMIT v_need
                   FOR UPDATE SKIP LOCKED) f;
        v_available := v_available || v_prices;
        IF cardinality(v_found) < v_need THEN
            SELECT v_found || coalesce(array_agg(f.seat_id ORDER BY f.position), '{}'), coalesce(jsonb_object_agg(f.seat_id, f.price_cents), '{}')
              INTO v_found, v_prices
              FROM (SELECT s.seat_id, s.position, s.price_cents
                      FROM seats s
                     WHERE s.event_id = p_event AND s.section = v_area AND s.kind = 'standing'
                       AND s.state = 'held' AND seat_free(s.state, s.hold_expires_at, s.blocked_reason)
                       AND NOT s.tier = ANY (v_listed)
                     ORDER BY s.position
                     LIMIT v_need - cardinality(v_found)
                       FOR UPDATE SKIP LOCKED) f;
            v_available := v_available || v_prices;
        END IF;
        v_places := v_places || jsonb_build_object(v_area, to_jsonb(v_found));
        v_scope := v_scope || CASE WHEN ev.on_sale THEN '{}' ELSE coalesce((SELECT jsonb_object_agg(s.seat_id, jsonb_build_array(s.tier, s.section))
                                          FROM seats s WHERE s.event_id = p_event AND s.seat_id = ANY (v_found)), '{}') END;
    END LOOP;
    -- Each fan's seats so far (their advisory locks keep them still). The
    -- seats are found by holder and only then filtered: with the state test
    -- in WHERE the planner may walk every live hold of the event instead.
    SELECT coalesce(jsonb_object_agg(f.fan, f.seats), '{}')
      INTO v_counts
      FROM (SELECT fan,
                   (SELECT count(*) FILTER (WHERE seat_held(s.state, s.hold_expires_at))
                      FROM seats s
                     WHERE s.event_id = p_event AND s.holder_id = fan)
                 + (SELECT count(*) FROM tickets t JOIN bookings b USING (booking_id)
                     WHERE b.event_id = p_event AND b.user_id = fan AND t.voided_at IS NULL) AS seats
              FROM (SELECT DISTINCT (r->>'fan')::uuid AS fan FROM jsonb_array_elements(p_requests) r) fans) f;
    -- The holds behind the idempotency keys these fans have used already
    -- (found through the fans' keys index; the exact pairs are matched below).
    SELECT array_agg((r->>'fan')::uuid), array_agg(r->>'key')
      INTO v_key_fans, v_key_values
      FROM jsonb_array_elements(p_requests) r WHERE r->>'key' IS NOT NULL;
    v_keys := '{}';
    IF v_key_fans IS NOT NULL THEN
        SELECT coalesce(jsonb_object_agg(h.user_id::text || ' ' || h.idempotency_key,
                   jsonb_build_object('hold', h.hold_id, 'token', h.hold_token, 'seats', to_jsonb(h.seat_ids), 'expires', h.expires_at,
                                      'total', h.total_cents, 'hash', h.request_hash, 'live', hold_live(h.state, h.expires_at))), '{}')
          INTO v_keys
          FROM holds h
         WHERE h.user_id = ANY (v_key_fans) AND h.idempotency_key = ANY (v_key_values);
    END IF;

    -- Each request in turn, as if alone, seeing what the earlier ones took.
    n := 0;
    FOR req IN SELECT value FROM jsonb_array_elements(p_requests) LOOP
        request_index := n;
        n := n + 1;
        outcome := NULL; seat_ids := NULL; lease_ends_at := NULL; hold_total_cents := NULL; hold_id := NULL; hold_token := NULL;
        v_earlier := NULL;
        v_fan := (req->>'fan')::uuid;
        v_idem := CASE WHEN req->>'key' IS NOT NULL THEN v_fan::text || ' ' || (req->>'key') END;
        -- Before the public sale, the code the request presents (none: no presale).
        v_code := CASE WHEN NOT ev.on_sale AND req->>'code' IS NOT NULL THEN v_codes->(req->>'code') END;
        IF req->>'area' IS NOT NULL THEN
            -- Any `count` places of the area still free, first first.
            v_count := (req->>'count')::integer;
            v_seats := ARRAY(SELECT p.x FROM jsonb_array_elements_text(coalesce(v_places->(req->>'area'), '[]')) WITH ORDINALITY AS p(x, i)
                              WHERE v_available ? p.x ORDER BY p.i LIMIT v_count);
            v_free := v_seats;
        ELSE
            v_seats := ARRAY(SELECT jsonb_array_elements_text(req->'seats'));
            v_count := cardinality(v_seats);
            v_free := ARRAY(SELECT x FROM unnest(v_seats) x WHERE v_available ? x ORDER BY x);
        END IF;
        v_need := CASE WHEN v_code->>'unit' = 'orders' THEN 1 ELSE v_count END;

        IF NOT ev.on_sale AND req->>'code' IS NULL THEN
            outcome := 'not_open';
        ELSIF NOT ev.on_sale AND NOT coalesce((v_code->>'open')::boolean, false) THEN
            -- Not this event's code, revoked, or outside its window.
            outcome := 'code_closed';
        ELSIF ev.waiting_room_enabled
              AND req->>'admitted' IS DISTINCT FROM (CASE WHEN ev.on_sale THEN 'public' ELSE 'presale' END) THEN
            outcome := 'not_admitted';
        ELSIF v_idem IS NOT NULL AND v_keys ? v_idem THEN
            -- A key already used first: a retry is answered its own hold,
            -- never refused for the seats it holds.
            v_earlier := v_keys->v_idem;
            outcome := CASE WHEN v_earlier->>'hash' IS DISTINCT FROM req->>'hash' THEN 'key_reused'
                            WHEN NOT (v_earlier->>'live')::boolean THEN 'hold_ended'
                            ELSE 'earlier' END;
        ELSIF v_seats && v_kept THEN
            -- Free, but offered to the waiting list first.
            outcome := 'waitlist';
        ELSIF v_code IS NOT NULL AND (
                  (req->>'area' IS NOT NULL AND jsonb_typeof(v_code->'sections') = 'array' AND NOT (v_code->'sections') ? (req->>'area'))
               OR EXISTS (SELECT FROM unnest(v_seats) x
                           WHERE v_scope ? x
                             AND ((jsonb_typeof(v_code->'tiers') = 'array' AND NOT (v_code->'tiers') ? (v_scope->x->>0))
                               OR (jsonb_typeof(v_code->'sections') = 'array' AND NOT (v_code->'sections') ? (v_scope->x->>1))))) THEN
            outcome := 'code_scope';
        ELSIF v_code IS NOT NULL AND (v_code->>'used')::integer + v_need > (v_code->>'max')::integer THEN
            outcome := 'code_used_up';
        ELSE
            v_already := coalesce((v_counts->>v_fan::text)::integer, 0);
            IF v_already + v_count > ev.max_seats_per_order OR cardinality(v_free) < v_count THEN
                -- Refused, unless (without a key) this fan holds exactly
                -- these seats already under one live hold, granted earlier
                -- in this batch or before it: a retry. (Only then is none
                -- of them free; the common refusal looks no further.)
                IF req->>'area' IS NULL AND v_idem IS NULL AND cardinality(v_free) = 0 THEN
                    v_sorted := ARRAY(SELECT x FROM unnest(v_seats) x ORDER BY x);
                    v_earlier := (SELECT jsonb_build_object('hold', p_requests->i->'hold', 'token', p_requests->i->'token',
                                                            'seats', v_granted_seats->(i::text), 'expires', v_expires, 'total', v_totals[i + 1])
                                    FROM unnest(v_granted) i
                                   WHERE p_requests->i->>'fan' = req->>'fan'
                                     AND ARRAY(SELECT x FROM jsonb_array_elements_text(v_granted_seats->(i::text)) x ORDER BY x) = v_sorted
                                   LIMIT 1);
                    IF v_earlier IS NULL THEN
                        v_earlier := (SELECT jsonb_build_object('hold', h.hold_id, 'token', h.hold_token, 'seats', to_jsonb(h.seat_ids),
                                                                'expires', h.expires_at, 'total', h.total_cents)
                                        FROM holds h
                                       WHERE h.user_id = v_fan AND h.event_id = p_event AND hold_live(h.state, h.expires_at)
                                         AND ARRAY(SELECT x FROM unnest(h.seat_ids) x ORDER BY x) = v_sorted
                                       LIMIT 1);
                    END IF;
                END IF;
                IF v_earlier IS NOT NULL THEN
                    outcome := 'earlier';
                ELSIF v_already + v_count > ev.max_seats_per_order THEN
                    outcome := 'too_many';
                ELSIF req->>'area' IS NULL AND EXISTS (SELECT FROM unnest(v_seats) x
                                                        WHERE NOT EXISTS (SELECT FROM seats s WHERE s.event_id = p_event AND s.seat_id = x)) THEN
                    outcome := 'unknown';
                    seat_ids := ARRAY(SELECT x FROM unnest(v_seats) x
                                       WHERE NOT EXISTS (SELECT FROM seats s WHERE s.event_id = p_event AND s.seat_id = x));
                ELSE
                    outcome := 'conflict';
                    seat_ids := v_free;
                END IF;
            ELSE
                v_total := (SELECT sum((v_available->>x)::bigint) FROM unnest(v_seats) x);
                v_available := v_available - v_seats;
                v_counts := v_counts || jsonb_build_object(v_fan, v_already + cardinality(v_seats));
                IF v_idem IS NOT NULL THEN
                    v_keys := v_keys || jsonb_build_object(v_idem,
                        jsonb_build_object('hold', req->'hold', 'token', req->'token', 'seats', to_jsonb(v_seats),
                                           'expires', v_expires, 'total', v_total, 'hash', req->'hash', 'live', true));
                END IF;
                IF v_code IS NOT NULL THEN
                    -- The use is taken now: the next request sees it.
                    v_codes := jsonb_set(v_codes, ARRAY[req->>'code', 'used'], to_jsonb((v_code->>'used')::integer + v_need));
                    v_granted_codes := v_granted_codes || jsonb_build_object(request_index::text, req->>'code');
                END IF;
                v_granted := v_granted || request_index;
                v_granted_seats := v_granted_seats || jsonb_build_object(request_index::text, to_jsonb(v_seats));
                v_totals[n] := v_total;
                g_seats := g_seats || v_seats;
                g_holds := g_holds || array_fill((req->>'hold')::uuid, ARRAY[cardinality(v_seats)]);
                g_tokens := g_tokens || array_fill(req->>'token', ARRAY[cardinality(v_seats)]);
                g_tags := g_tags || array_fill(req->>'tag', ARRAY[cardinality(v_seats)]);
                g_fans := g_fans || array_fill(v_fan, ARRAY[cardinality(v_seats)]);
                outcome := 'held';
                seat_ids := v_seats;
                lease_ends_at := v_expires;
                hold_total_cents := v_total;
            END IF;
        END IF;
        IF outcome = 'earlier' THEN
            seat_ids := ARRAY(SELECT jsonb_array_elements_text(v_earlier->'seats'));
            lease_ends_at := (v_earlier->>'expires')::timestamptz;
            hold_total_cents := (v_earlier->>'total')::bigint;
            hold_id := (v_earlier->>'hold')::uuid;
            hold_token := v_earlier->>'token';
        END IF;
        RETURN NEXT;
    END LOOP;
    IF cardinality(v_granted) = 0 THEN
        RETURN;
    END IF;

    -- The granted holds, written together. (The keys were checked under the
    -- fans' locks: a clash here fails the batch, and the server then decides
    -- its requests one by one.)
    INSERT INTO holds (hold_id, event_id, user_id, hold_token, seat_ids, total_cents, expires_at, idempotency_key, request_hash, access_code_id)
    SELECT (o.r->>'hold')::uuid, p_event, (o.r->>'fan')::uuid, o.r->>'token',
           ARRAY(SELECT jsonb_array_elements_text(v_granted_seats->((o.i - 1)::text))), v_totals[o.i], v_expires, o.r->>'key', o.r->>'hash',
           (v_granted_codes->>((o.i - 1)::text))::uuid
      FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i)
     WHERE (o.i - 1)::integer = ANY (v_granted);

    -- Their seats, with an audit row each; the live maps hear of them below,
    -- once, not from the seats trigger.
    PERFORM set_config('frontrow.seat_notify', 'batch', true);
    WITH claimed AS (
        UPDATE seats s
           SET state = 'held', hold_id = g.hold_id, hold_token = g.token, holder_id = g.fan,
               hold_expires_at = v_expires, booking_id = NULL, version = nextval('seat_version_seq')
          FROM unnest(g_seats, g_holds, g_tokens, g_tags, g_fans) AS g(seat, hold_id, token, tag, fan), seats prior
         WHERE s.event_id = p_event AND s.seat_id = g.seat AND s.seat_id = ANY (g_seats)
           AND prior.event_id = p_event AND prior.seat_id = g.seat AND prior.seat_id = ANY (g_seats)
        RETURNING s.seat_id, s.version, prior.state AS prior_state, s.hold_expires_at, s.blocked_reason, g.hold_id, g.tag, g.fan
    ), logged AS (
        INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
        SELECT p_event, c.seat_id, c.version, c.prior_state, 'held', c.hold_id, c.tag, c.fan, 'hold'
          FROM claimed c
    )
    INSERT INTO seat_changes (event_id, message)
    SELECT p_event, json_build_object('e', p_event, 'c', json_agg(json_build_array(
               x.seat_id, x.version, 'held', (extract(epoch FROM x.hold_expires_at) * 1000)::bigint,
               x.blocked_reason IS NOT NULL, holder_tag(x.fan)) ORDER BY x.version))::text
      FROM (SELECT c.*, (row_number() OVER (ORDER BY c.version) - 1) / 60 AS chunk FROM claimed c) x
     GROUP BY x.chunk;
    PERFORM set_config('frontrow.seat_notify', '', true);
END;
$$;
