-- hold_batch as in 20261223000032, deciding the common batch of an open
-- sale in a few statements over the whole batch instead of request by
-- request. The loop costs each request some statements of its own (about
-- 45 us a request in a holds run, the largest share of the call after the
-- writes); when the requests cannot touch one another (distinct fans,
-- disjoint named seats, no presale code, no key used before, nothing kept
-- for the waiting list) and each is either granted or not admitted, every
-- answer is the one the loop would give, so the batch is answered at once.
-- Any other batch (a refusal, a key seen before, an area, a presale, one
-- fan twice) takes the loop, unchanged.
CREATE OR REPLACE FUNCTION hold_batch(p_event uuid, p_lock integer, p_requests jsonb)
RETURNS TABLE (request_index integer, outcome text, seat_ids text[], lease_ends_at timestamptz, hold_total_cents bigint,
               hold_id uuid, hold_token text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    ev record;
    v_expires timestamptz;
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
    -- Whether the request's presale code leaves out any of its seats.
    v_out_of_scope boolean;
    -- The fans of the batch, once each.
    v_fans uuid[];
    -- Whether every request can be decided on its own (see below).
    v_simple boolean;
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
    PERFORM pg_advisory_xact_lock(p_lock, k.key)
       FROM (SELECT DISTINCT hashtext(p_event::text || (r->>'fan')) AS key
               FROM jsonb_array_elements(p_requests) r ORDER BY 1) k;
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
    v_fans := ARRAY(SELECT DISTINCT (r->>'fan')::uuid FROM jsonb_array_elements(p_requests) r);
    -- Each fan's seats so far (their advisory locks keep them still). The
    -- seats are found by holder and only then filtered: with the state test
    -- in WHERE the planner may walk every live hold of the event instead.
    SELECT coalesce(jsonb_object_agg(f.fan, f.seats), '{}')
      INTO v_counts
      FROM (SELECT fan,
                   (SELECT count(*) FILTER (WHERE seat_held(s.state, s.hold_expires_at))
                      FROM seats s
                     WHERE s.event_id = p_event AND s.holder_id = fan)
                 + (SELECT count(*) FILTER (WHERE t.voided_at IS NULL) FROM tickets t JOIN bookings b USING (booking_id)
                     WHERE b.event_id = p_event AND b.user_id = fan) AS seats
              FROM unnest(v_fans) AS fans(fan)) f;
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

    -- The common batch of an open sale: distinct fans, seats named (no
    -- area) and no two requests naming the same seat, no presale, no key
    -- used before, nothing kept for the waiting list, and every request
    -- either not admitted or granted (its seats free, its fan within the
    -- limit). Then no request's answer depends on another's, so the batch
    -- is decided by a few statements over all of it, not request by request:
    -- the same answers the loop below gives. Anything else takes the loop.
    v_simple := false;
    IF ev.on_sale AND cardinality(v_kept) = 0 AND v_keys = '{}' THEN
        SELECT count(*) = cardinality(v_fans) AND sum(o.n) = cardinality(v_all_seats)
               AND bool_and(o.r->>'area' IS NULL AND o.n > 0
                            AND (NOT o.admitted
                                 OR (coalesce((v_counts->>(o.r->>'fan'))::integer, 0) + o.n <= ev.max_seats_per_order
                                     AND v_available ?& ARRAY(SELECT jsonb_array_elements_text(o.r->'seats')))))
          INTO v_simple
          FROM (SELECT r, jsonb_array_length(r->'seats') AS n,
                       NOT ev.waiting_room_enabled OR r->>'admitted' IS NOT DISTINCT FROM 'public' AS admitted
                  FROM jsonb_array_elements(p_requests) r) o;
    END IF;
    IF coalesce(v_simple, false) THEN
        SELECT coalesce(array_agg((o.i - 1)::integer ORDER BY o.i) FILTER (WHERE o.admitted), '{}'),
               coalesce(jsonb_object_agg((o.i - 1)::text, o.r->'seats') FILTER (WHERE o.admitted), '{}'),
               array_agg(CASE WHEN o.admitted THEN (SELECT sum((v_available->>x)::bigint) FROM jsonb_array_elements_text(o.r->'seats') x) END
                         ORDER BY o.i)
          INTO v_granted, v_granted_seats, v_totals
          FROM (SELECT r, i, NOT ev.waiting_room_enabled OR r->>'admitted' IS NOT DISTINCT FROM 'public' AS admitted
                  FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS x(r, i)) o;
        SELECT coalesce(array_agg(x.seat), '{}'), coalesce(array_agg((o.r->>'hold')::uuid), '{}'), coalesce(array_agg(o.r->>'token'), '{}'),
               coalesce(array_agg(o.r->>'tag'), '{}'), coalesce(array_agg((o.r->>'fan')::uuid), '{}')
          INTO g_seats, g_holds, g_tokens, g_tags, g_fans
          FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i), jsonb_array_elements_text(o.r->'seats') AS x(seat)
         WHERE (o.i - 1)::integer = ANY (v_granted);
        RETURN QUERY
        SELECT (o.i - 1)::integer, CASE WHEN o.i - 1 = ANY (v_granted) THEN 'held' ELSE 'not_admitted' END,
               CASE WHEN o.i - 1 = ANY (v_granted) THEN ARRAY(SELECT jsonb_array_elements_text(o.r->'seats')) END,
               CASE WHEN o.i - 1 = ANY (v_granted) THEN v_expires END, v_totals[o.i], NULL::uuid, NULL::text
          FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i)
         ORDER BY o.i;
    ELSE
        -- Each request in turn, as if alone, seeing what the earlier ones took.
        -- A request's named seats and their total come with it, from the seats
        -- free when the loop starts: a request granted below finds all of its
        -- seats still free, so its total is theirs.
        n := 0;
        FOR req, v_seats, v_total IN
            SELECT o.r, ARRAY(SELECT jsonb_array_elements_text(o.r->'seats')),
                   (SELECT sum((v_available->>x)::bigint) FROM jsonb_array_elements_text(o.r->'seats') x)
              FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i)
             ORDER BY o.i LOOP
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
                v_total := (SELECT sum((v_available->>x)::bigint) FROM unnest(v_seats) x);
            ELSE
                v_count := cardinality(v_seats);
            END IF;
            v_need := CASE WHEN v_code->>'unit' = 'orders' THEN 1 ELSE v_count END;
            v_out_of_scope := false;
            IF v_code IS NOT NULL THEN
                v_out_of_scope := (req->>'area' IS NOT NULL AND jsonb_typeof(v_code->'sections') = 'array' AND NOT (v_code->'sections') ? (req->>'area'))
                   OR EXISTS (SELECT FROM unnest(v_seats) x
                               WHERE v_scope ? x
                                 AND ((jsonb_typeof(v_code->'tiers') = 'array' AND NOT (v_code->'tiers') ? (v_scope->x->>0))
                                   OR (jsonb_typeof(v_code->'sections') = 'array' AND NOT (v_code->'sections') ? (v_scope->x->>1))));
            END IF;

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
            ELSIF v_out_of_scope THEN
                outcome := 'code_scope';
            ELSIF v_code IS NOT NULL AND (v_code->>'used')::integer + v_need > (v_code->>'max')::integer THEN
                outcome := 'code_used_up';
            ELSE
                v_already := coalesce((v_counts->>v_fan::text)::integer, 0);
                IF v_already + v_count > ev.max_seats_per_order OR cardinality(v_seats) < v_count OR NOT v_available ?& v_seats THEN
                    -- Which of them are free, for the answer (an area's places
                    -- found are all free).
                    v_free := CASE WHEN req->>'area' IS NOT NULL THEN v_seats
                                   ELSE ARRAY(SELECT x FROM unnest(v_seats) x WHERE v_available ? x ORDER BY x) END;
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
    END IF;
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
