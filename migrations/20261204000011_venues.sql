-- Venues drawn as venues, and standing areas.
--
-- Each event's sections are listed with where they sit on the map (a
-- placement: position, rotation, rows straight or curved around a focal
-- point) and whether they are seats in rows or a standing area. A standing
-- area's places are seats of the area (kind 'standing', row 'GA', numbered
-- 1..capacity), so every seat rule holds for them unchanged: the same
-- compare-and-swap hold with its lease and fencing token, one live ticket
-- per place, the audit, the reaper, refunds, counter sales, check-in.

CREATE TYPE section_kind AS ENUM ('seated', 'standing');

CREATE TABLE event_sections (
    event_id  uuid NOT NULL REFERENCES events (event_id) ON DELETE CASCADE,
    section   text NOT NULL,
    -- The order staff listed them in.
    position  integer NOT NULL,
    kind      section_kind NOT NULL DEFAULT 'seated',
    -- Where the middle of the front row sits (of a standing area, its
    -- centre); NULL: the default grid facing a stage along the top.
    x         double precision,
    y         double precision,
    rotation  double precision NOT NULL DEFAULT 0,
    -- Rows are arcs around a point this far in front; NULL: straight.
    curve     double precision,
    -- A standing area's outline.
    width     double precision,
    depth     double precision,
    PRIMARY KEY (event_id, section),
    CHECK ((x IS NULL) = (y IS NULL)),
    CHECK ((kind = 'standing') = (width IS NOT NULL AND depth IS NOT NULL))
);

-- Every event so far: its sections in layout order, on the default grid.
INSERT INTO event_sections (event_id, section, position)
SELECT event_id, section, (row_number() OVER (PARTITION BY event_id ORDER BY min(position)))::integer
  FROM seats GROUP BY event_id, section;

-- What the sections face (a stage, a pitch), for events and saved layouts;
-- NULL: a stage along the top of the map.
ALTER TABLE events ADD COLUMN stage jsonb;
ALTER TABLE layouts ADD COLUMN stage jsonb;

-- A hold for N places of a standing area finds free ones by this.
CREATE INDEX seats_free_places_idx ON seats (event_id, section, position) WHERE state = 'available' AND kind = 'standing';

-- hold_batch, now also for places of a standing area by count: a request
-- may name an `area` and a `count` instead of `seats`. Each area's free
-- places are locked up front like the named seats, but with SKIP LOCKED,
-- after them: a place another batch has locked is that batch's to give, so
-- no batch waits on another for places and the one global lock order
-- (fans, then named seats by id) still holds. A request for places takes
-- the first free ones in layout order, all of them or none.
--
-- Otherwise as in 20261203000009 (same arguments and outcomes), but for
-- one order: a key already used is answered before the per-fan limit, so
-- a retry of a hold that holds most of the limit gets its hold back, not
-- "too many seats". A granted request's `free_seat_ids` are the seats or
-- places it holds.

CREATE OR REPLACE FUNCTION hold_batch(p_event uuid, p_lock integer, p_requests jsonb)
RETURNS TABLE (request_index integer, outcome text, free_seat_ids text[], lease_ends_at timestamptz, hold_total_cents bigint)
LANGUAGE plpgsql AS $$
DECLARE
    ev record;
    v_refusal text;
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
    -- Each fan's seats held, paying or ticketed for this event: {fan: n}.
    v_counts jsonb;
    -- "fan key" of every idempotency key taken: {"fan key": true}.
    v_keys jsonb;
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
    v_messages text[];
    message text;
    -- Standing areas asked for: {area: [free place ids, in layout order]}.
    v_places jsonb := '{}';
    v_area text;
    v_need integer;
    v_found text[];
    v_prices jsonb;
    v_count integer;
    -- The seats each granted request holds: {request_index: [seat ids]}.
    v_granted_seats jsonb := '{}';
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
    -- seats (by id), so batches from any instance never deadlock.
    FOR v_key IN SELECT DISTINCT hashtext(p_event::text || (r->>'fan'))
                   FROM jsonb_array_elements(p_requests) r ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(p_lock, v_key);
    END LOOP;
    -- The seats, locked, and which are free (a lapsed lease is free).
    v_all_seats := ARRAY(SELECT DISTINCT jsonb_array_elements_text(r->'seats') FROM jsonb_array_elements(p_requests) r);
    SELECT coalesce(jsonb_object_agg(l.seat_id, l.price_cents) FILTER (WHERE l.free), '{}')
      INTO v_available
      FROM (SELECT s.seat_id, s.price_cents,
                   s.state = 'available' OR (s.state = 'held' AND s.hold_expires_at <= now() AND s.blocked_reason IS NULL) AS free
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
                 ORDER BY s.position
                 LIMIT v_need
                   FOR UPDATE SKIP LOCKED) f;
        v_available := v_available || v_prices;
        IF cardinality(v_found) < v_need THEN
            SELECT v_found || coalesce(array_agg(f.seat_id ORDER BY f.position), '{}'), coalesce(jsonb_object_agg(f.seat_id, f.price_cents), '{}')
              INTO v_found, v_prices
              FROM (SELECT s.seat_id, s.position, s.price_cents
                      FROM seats s
                     WHERE s.event_id = p_event AND s.state = 'held' AND s.hold_expires_at <= now()
                       AND s.section = v_area AND s.kind = 'standing' AND s.blocked_reason IS NULL
                     ORDER BY s.position
                     LIMIT v_need - cardinality(v_found)
                       FOR UPDATE SKIP LOCKED) f;
            v_available := v_available || v_prices;
        END IF;
        v_places := v_places || jsonb_build_object(v_area, to_jsonb(v_found));
    END LOOP;
    -- Each fan's seats so far (their advisory locks keep them still). The
    -- seats are found by holder and only then filtered: with the state test
    -- in WHERE the planner may walk every live hold of the event instead.
    SELECT coalesce(jsonb_object_agg(f.fan, f.seats), '{}')
      INTO v_counts
      FROM (SELECT fan,
                   (SELECT count(*) FILTER (WHERE s.state = 'payment_pending' OR (s.state = 'held' AND s.hold_expires_at > now()))
                      FROM seats s
                     WHERE s.event_id = p_event AND s.holder_id = fan)
                 + (SELECT count(*) FROM tickets t JOIN bookings b USING (booking_id)
                     WHERE b.event_id = p_event AND b.user_id = fan AND t.voided_at IS NULL) AS seats
              FROM (SELECT DISTINCT (r->>'fan')::uuid AS fan FROM jsonb_array_elements(p_requests) r) fans) f;
    -- The idempotency keys these fans have used already (found through the
    -- fans' keys index; the exact pairs are matched below).
    SELECT array_agg((r->>'fan')::uuid), array_agg(r->>'key')
      INTO v_key_fans, v_key_values
      FROM jsonb_array_elements(p_requests) r WHERE r->>'key' IS NOT NULL;
    v_keys := '{}';
    IF v_key_fans IS NOT NULL THEN
        SELECT coalesce(jsonb_object_agg(h.user_id::text || ' ' || h.idempotency_key, true), '{}')
          INTO v_keys
          FROM holds h
         WHERE h.user_id = ANY (v_key_fans) AND h.idempotency_key = ANY (v_key_values);
    END IF;

    -- Each request in turn, as if alone, seeing what the earlier ones took.
    n := 0;
    FOR req IN SELECT value FROM jsonb_array_elements(p_requests) LOOP
        request_index := n;
        n := n + 1;
        outcome := NULL; free_seat_ids := NULL; lease_ends_at := NULL; hold_total_cents := NULL;
        v_fan := (req->>'fan')::uuid;
        v_idem := CASE WHEN req->>'key' IS NOT NULL THEN v_fan::text || ' ' || (req->>'key') END;
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

        IF ev.waiting_room_enabled AND NOT coalesce((req->>'admitted')::boolean, false) THEN
            outcome := 'not_admitted';
        ELSE
            v_already := coalesce((v_counts->>v_fan::text)::integer, 0);
            -- A key already used first: a retry is answered its own hold
            -- (the server finds it), never refused for the seats it holds.
            IF v_idem IS NOT NULL AND v_keys ? v_idem THEN
                outcome := 'key_in_use';
            ELSIF v_already + v_count > ev.max_seats_per_order THEN
                outcome := 'too_many';
            ELSIF cardinality(v_free) < v_count THEN
                outcome := 'conflict';
                free_seat_ids := v_free;
            ELSE
                v_total := (SELECT sum((v_available->>x)::bigint) FROM unnest(v_seats) x);
                v_available := v_available - v_seats;
                v_counts := v_counts || jsonb_build_object(v_fan, v_already + cardinality(v_seats));
                IF v_idem IS NOT NULL THEN
                    v_keys := v_keys || jsonb_build_object(v_idem, true);
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
                free_seat_ids := v_seats;
                lease_ends_at := v_expires;
                hold_total_cents := v_total;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF cardinality(v_granted) = 0 THEN
        RETURN;
    END IF;

    -- The granted holds, written together. (The keys were checked under the
    -- fans' locks: a clash here fails the batch, and the server then decides
    -- its requests one by one.)
    INSERT INTO holds (hold_id, event_id, user_id, hold_token, seat_ids, total_cents, expires_at, idempotency_key, request_hash)
    SELECT (o.r->>'hold')::uuid, p_event, (o.r->>'fan')::uuid, o.r->>'token',
           ARRAY(SELECT jsonb_array_elements_text(v_granted_seats->((o.i - 1)::text))), v_totals[o.i], v_expires, o.r->>'key', o.r->>'hash'
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
    SELECT coalesce(array_agg(m.message), '{}')
      INTO v_messages
      FROM (SELECT json_build_object('e', p_event, 'c', json_agg(json_build_array(
                       x.seat_id, x.version, 'held', (extract(epoch FROM x.hold_expires_at) * 1000)::bigint,
                       x.blocked_reason IS NOT NULL) ORDER BY x.version))::text AS message
              FROM (SELECT c.*, (row_number() OVER (ORDER BY c.version) - 1) / 60 AS chunk FROM claimed c) x
             GROUP BY x.chunk) m;
    PERFORM set_config('frontrow.seat_notify', '', true);
    FOREACH message IN ARRAY v_messages LOOP
        PERFORM pg_notify('frontrow_seats', message);
    END LOOP;
END;
$$;
