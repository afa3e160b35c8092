-- The checkout's two batch functions as in 20261224000033, finding a
-- hold's seats by the hold alone and testing their state after.
--
-- With the state in the condition (`state = 'held'`, `'payment_pending'`)
-- the planner may take the partial index of held seats instead, read whole
-- and filtered by hold: its statistics come from before the sale, when no
-- seat was held, so it looks empty. In a purchases run the sale of a hold
-- read every held or paying seat of the table, so each checkout cost more
-- as the sale went on. By `hold_id` alone there is only the holds' index.
-- The seats are locked from the start of the call, so the writes after the
-- counts take exactly the seats counted.

-- p_requests and outcomes as in 20261216000025.
CREATE OR REPLACE FUNCTION checkout_reserve(p_requests jsonb)
RETURNS TABLE (request_index integer, outcome text, amount_cents bigint, answer jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    req record;
    v_checkouts uuid[];
    v_checkout uuid;
    v_hold_id uuid;
    v_holds uuid[] := '{}';
    v_hold record;
    v_live integer;
    v_paying integer;
    v_answer jsonb;
    v_types jsonb;
    v_priced jsonb;
    v_priced_count integer;
    v_amount bigint;
BEGIN
    SELECT array_agg((r->>'checkout')::uuid) INTO v_checkouts FROM jsonb_array_elements(p_requests) AS r;
    FOR v_checkout IN SELECT DISTINCT x FROM unnest(v_checkouts) x ORDER BY x LOOP
        SELECT c.hold_id INTO v_hold_id FROM checkouts c WHERE c.checkout_id = v_checkout FOR UPDATE;
        v_holds := v_holds || v_hold_id;
    END LOOP;
    PERFORM 1 FROM seats s WHERE s.hold_id = ANY (v_holds) ORDER BY s.event_id, s.seat_id FOR UPDATE;

    FOR req IN SELECT (o.i - 1)::integer AS i, (o.r->>'checkout')::uuid AS checkout, o.r->>'token' AS token, o.r->>'tag' AS tag,
                      (o.r->>'payment')::uuid AS payment, o.r->>'provider' AS provider, o.r->>'key' AS key,
                      o.r->>'payment_token' AS payment_token, (o.r->>'grace_seconds')::float8 AS grace_seconds,
                      (o.r->>'lease_seconds')::float8 AS lease_seconds, o.r->'expired' AS expired
                 FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i) ORDER BY o.i
    LOOP
        -- The claim on the key must still be this request's: one so slow that
        -- its claim was closed meanwhile stops here.
        UPDATE checkouts c SET lease_until = now() + make_interval(secs => req.lease_seconds), updated_at = now()
         WHERE c.checkout_id = req.checkout AND c.state = 'processing' AND c.response_body IS NULL;
        IF NOT FOUND THEN
            SELECT c.response_body INTO v_answer FROM checkouts c WHERE c.checkout_id = req.checkout;
            RETURN QUERY SELECT req.i, CASE WHEN v_answer IS NULL THEN 'in_use' ELSE 'answered' END, NULL::bigint, v_answer;
            CONTINUE;
        END IF;
        SELECT h.hold_id, h.total_cents, cardinality(h.seat_ids) AS seat_count INTO v_hold
          FROM checkouts c JOIN holds h USING (hold_id) WHERE c.checkout_id = req.checkout;
        -- All of the hold's seats, or none: each still held under this token
        -- with its lease live. (Found by the hold alone, tested after.)
        SELECT count(*) FILTER (WHERE s.hold_token = req.token AND s.state = 'held' AND NOT lease_lapsed(s.hold_expires_at)),
               count(*) FILTER (WHERE s.hold_token = req.token AND s.state = 'payment_pending')
          INTO v_live, v_paying
          FROM seats s WHERE s.hold_id = v_hold.hold_id;
        IF v_live = 0 OR v_live <> v_hold.seat_count THEN
            IF v_paying > 0 THEN
                -- Another checkout (another key) is paying for this hold: this
                -- key is given back unused, to retry once that one settles.
                DELETE FROM checkouts c WHERE c.checkout_id = req.checkout AND c.response_body IS NULL
                   AND NOT EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.checkout_id = c.checkout_id);
                RETURN QUERY SELECT req.i, 'in_progress', NULL::bigint, NULL::jsonb;
            ELSE
                UPDATE checkouts c SET state = 'expired', response_body = req.expired, lease_until = now(), updated_at = now()
                 WHERE c.checkout_id = req.checkout;
                RETURN QUERY SELECT req.i, 'expired', NULL::bigint, req.expired;
            END IF;
            CONTINUE;
        END IF;
        SELECT c.ticket_types INTO v_types FROM checkouts c WHERE c.checkout_id = req.checkout;
        v_amount := v_hold.total_cents;
        IF v_types IS NOT NULL THEN
            SELECT count(*), coalesce(sum(p.price_cents), 0),
                   jsonb_object_agg(s.seat_id, jsonb_build_object('ticket_type', p.ticket_type, 'price_cents', p.price_cents))
              INTO v_priced_count, v_amount, v_priced
              FROM seats s JOIN ticket_prices p ON p.event_id = s.event_id AND p.tier = s.tier AND p.ticket_type = v_types->>s.seat_id
             WHERE s.hold_id = v_hold.hold_id AND s.hold_token = req.token;
            IF v_priced_count <> v_hold.seat_count THEN
                -- The key is given back unused, to choose again.
                DELETE FROM checkouts c WHERE c.checkout_id = req.checkout AND c.response_body IS NULL
                   AND NOT EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.checkout_id = c.checkout_id);
                RETURN QUERY SELECT req.i, 'bad_types', NULL::bigint, NULL::jsonb;
                CONTINUE;
            END IF;
            UPDATE checkouts c SET ticket_prices = v_priced WHERE c.checkout_id = req.checkout;
        END IF;
        -- Exactly the seats counted above: locked since, all held and live.
        WITH moved AS (
            UPDATE seats s
               SET state = 'payment_pending', hold_expires_at = now() + make_interval(secs => req.grace_seconds),
                   version = nextval('seat_version_seq')
             WHERE s.hold_id = v_hold.hold_id AND s.hold_token = req.token
         RETURNING s.event_id, s.seat_id, s.version, s.holder_id
        )
        INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
        SELECT m.event_id, m.seat_id, m.version, 'held', 'payment_pending', v_hold.hold_id, req.tag, m.holder_id, 'checkout' FROM moved m;
        INSERT INTO payment_intents (payment_id, checkout_id, provider, provider_key, amount_cents, payment_token)
        VALUES (req.payment, req.checkout, req.provider, req.key, v_amount, req.payment_token);
        UPDATE holds h SET state = 'checking_out' WHERE h.hold_id = v_hold.hold_id;
        RETURN QUERY SELECT req.i, 'reserved', v_amount, NULL::jsonb;
    END LOOP;
END
$$;

-- p_requests: [{checkout, provider_ref, booking}]; outcomes sold, settled
-- and unsellable, as in 20261216000025.
CREATE OR REPLACE FUNCTION checkout_sell(p_requests jsonb)
RETURNS TABLE (request_index integer, outcome text, answer jsonb, seats_sold integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    req record;
    v_checkouts uuid[];
    v_checkout uuid;
    v_hold_id uuid;
    v_holds uuid[] := '{}';
    c record;
    v_payable integer;
    v_answer jsonb;
BEGIN
    SELECT array_agg((r->>'checkout')::uuid) INTO v_checkouts FROM jsonb_array_elements(p_requests) AS r;
    FOR v_checkout IN SELECT DISTINCT x FROM unnest(v_checkouts) x ORDER BY x LOOP
        SELECT ch.hold_id INTO v_hold_id FROM checkouts ch JOIN payment_intents pi USING (checkout_id)
         WHERE ch.checkout_id = v_checkout FOR UPDATE;
        v_holds := v_holds || v_hold_id;
    END LOOP;
    PERFORM 1 FROM seats s WHERE s.hold_id = ANY (v_holds) ORDER BY s.event_id, s.seat_id FOR UPDATE;
    PERFORM 1 FROM queue_entries q
      WHERE (q.event_id, q.user_id) IN (SELECT h.event_id, h.user_id FROM holds h WHERE h.hold_id = ANY (v_holds))
        AND q.admission_expires_at > now()
      ORDER BY q.event_id, q.user_id FOR UPDATE;

    FOR req IN SELECT (o.i - 1)::integer AS i, (o.r->>'checkout')::uuid AS checkout, o.r->>'provider_ref' AS provider_ref,
                      (o.r->>'booking')::uuid AS booking
                 FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS o(r, i) ORDER BY o.i
    LOOP
        SELECT ch.response_body, pi.settled_at IS NOT NULL AS settled, h.hold_id, h.hold_token, h.event_id, h.user_id,
               pi.amount_cents AS total_cents, ch.ticket_prices, h.channel, h.customer_name, h.customer_email, cardinality(h.seat_ids) AS seat_count
          INTO c
          FROM checkouts ch JOIN payment_intents pi USING (checkout_id) JOIN holds h USING (hold_id)
         WHERE ch.checkout_id = req.checkout;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'checkout % has no payment intent to settle', req.checkout;
        END IF;
        IF c.settled THEN
            RETURN QUERY SELECT req.i, 'settled', c.response_body, 0;
            CONTINUE;
        END IF;
        SELECT count(*) FILTER (WHERE s.hold_token = c.hold_token AND s.state = 'payment_pending') INTO v_payable
          FROM seats s WHERE s.hold_id = c.hold_id;
        IF v_payable = 0 OR v_payable <> c.seat_count THEN
            RETURN QUERY SELECT req.i, 'unsellable', NULL::jsonb, 0;
            CONTINUE;
        END IF;

        INSERT INTO bookings (booking_id, event_id, user_id, hold_id, total_cents, channel, customer_name, customer_email)
        VALUES (req.booking, c.event_id, c.user_id, c.hold_id, c.total_cents, c.channel, c.customer_name, c.customer_email);
        -- Exactly the seats counted above: locked since, all paying.
        WITH sold AS (
            UPDATE seats s
               SET state = 'sold', booking_id = req.booking, hold_id = NULL, hold_token = NULL, holder_id = NULL,
                   hold_expires_at = NULL, blocked_reason = NULL, version = nextval('seat_version_seq')
             WHERE s.hold_id = c.hold_id AND s.hold_token = c.hold_token
         RETURNING s.event_id, s.seat_id, s.version, s.price_cents
        ), logged AS (
            INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
            SELECT so.event_id, so.seat_id, so.version, 'payment_pending', 'sold', c.hold_id,
                   substr(encode(sha256(convert_to(c.hold_token, 'UTF8')), 'hex'), 1, 12), c.user_id, 'sale'
              FROM sold so
        )
        INSERT INTO tickets (ticket_id, booking_id, event_id, seat_id, code, price_cents, ticket_type)
        SELECT gen_random_uuid(), req.booking, so.event_id, so.seat_id, ticket_code(),
               coalesce((c.ticket_prices->so.seat_id->>'price_cents')::integer, so.price_cents), c.ticket_prices->so.seat_id->>'ticket_type'
          FROM sold so;
        -- A fan who has bought is through the waiting room: their place
        -- among the admitted goes to the next in line now.
        UPDATE queue_entries q SET admission_expires_at = now()
         WHERE q.event_id = c.event_id AND q.user_id = c.user_id AND q.admission_expires_at > now();
        UPDATE payment_intents pi SET status = 'succeeded', provider_ref = req.provider_ref, settled_at = now(), updated_at = now()
         WHERE pi.checkout_id = req.checkout;
        UPDATE holds h SET state = 'converted', ended_at = now() WHERE h.hold_id = c.hold_id;
        -- The answer replayed to a retry: the booking as the API shows it
        -- (frontrow_model::Booking), tickets in seat order.
        SELECT jsonb_build_object('outcome', 'confirmed', 'booking', jsonb_build_object(
                   'booking_id', b.booking_id, 'event_id', b.event_id,
                   'seat_ids', jsonb_agg(t.seat_id ORDER BY t.seat_id),
                   'total_cents', b.total_cents, 'refunded_cents', b.refunded_cents, 'status', b.status,
                   'channel', b.channel, 'created_at', b.created_at,
                   'tickets', jsonb_agg(jsonb_build_object('ticket_id', t.ticket_id, 'seat_id', t.seat_id, 'code', t.code,
                                                           'state', t.state, 'price_cents', t.price_cents,
                                                           'ticket_type', t.ticket_type) ORDER BY t.seat_id)))
          INTO v_answer
          FROM bookings b JOIN tickets t USING (booking_id)
         WHERE b.booking_id = req.booking
         GROUP BY b.booking_id;
        UPDATE checkouts ch SET state = 'confirmed', response_body = v_answer, booking_id = req.booking,
                                lease_until = now(), updated_at = now()
         WHERE ch.checkout_id = req.checkout;
        RETURN QUERY SELECT req.i, 'sold', v_answer, c.seat_count;
    END LOOP;
END
$$;
