-- The box office, part two: publishing and cancelling events, blocked and
-- accessible seats, saved venue layouts, counter sales, refunds per ticket,
-- staff accounts that can be disabled, and the staff action log.

ALTER TABLE events
    ADD COLUMN published boolean NOT NULL DEFAULT true,
    ADD COLUMN cancelled_at timestamptz,
    ADD COLUMN cancel_reason text;

-- Seats: what kind of place each is, where aisles run, and blocks. A
-- blocked seat keeps its reason while a counter sale holds it, so if that
-- sale falls through the seat goes back to blocked, never on sale.
CREATE TYPE seat_kind AS ENUM ('standard', 'wheelchair', 'companion');
ALTER TABLE seats
    ADD COLUMN kind seat_kind NOT NULL DEFAULT 'standard',
    ADD COLUMN aisle_before boolean NOT NULL DEFAULT false,
    ADD COLUMN blocked_reason text;
ALTER TABLE seats DROP CONSTRAINT seats_check;
ALTER TABLE seats ADD CONSTRAINT seats_idle_has_no_claim
    CHECK ((state IN ('available', 'blocked')) = (hold_id IS NULL AND booking_id IS NULL));
ALTER TABLE seats ADD CONSTRAINT seats_blocked_has_reason CHECK (state <> 'blocked' OR blocked_reason IS NOT NULL);

-- Saved venue layouts: events reuse them.
CREATE TABLE layouts (
    layout_id   uuid PRIMARY KEY,
    name        text NOT NULL,
    -- The sections as the API describes them (rows, tiers, aisles, places).
    sections    jsonb NOT NULL,
    tiers       text[] NOT NULL,
    seats_total integer NOT NULL,
    created_by  uuid REFERENCES users (user_id),
    created_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE users ADD COLUMN disabled_at timestamptz;

-- A counter sale is a hold by a staff member for a customer, paid in cash
-- or by card through the same checkout as online.
ALTER TABLE holds
    ADD COLUMN channel sales_channel NOT NULL DEFAULT 'online',
    ADD COLUMN customer_name text,
    ADD COLUMN customer_email text;
ALTER TABLE bookings
    ADD COLUMN customer_name text,
    ADD COLUMN customer_email text;

-- Refunds: per ticket or whole booking, by staff, by a cancellation, or of
-- money that arrived for seats already let go. Each refunded ticket is
-- refunded once (its state changes in the same transaction); the money
-- goes back through the provider, idempotent by the refund's id.
CREATE TYPE refund_kind AS ENUM ('unsellable', 'staff', 'cancel');
ALTER TABLE refunds DROP CONSTRAINT refunds_payment_id_key;
ALTER TABLE refunds
    ADD COLUMN kind refund_kind NOT NULL DEFAULT 'unsellable',
    ADD COLUMN booking_id uuid REFERENCES bookings (booking_id),
    ADD COLUMN ticket_ids uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN actor_id uuid REFERENCES users (user_id);
-- Late money for let-go seats is refunded once per payment.
CREATE UNIQUE INDEX refunds_unsellable_once ON refunds (payment_id) WHERE kind = 'unsellable';
CREATE INDEX refunds_booking_idx ON refunds (booking_id) WHERE booking_id IS NOT NULL;

-- The simulated provider's refunds, idempotent by key, partial allowed.
CREATE TABLE sim_provider_refunds (
    idempotency_key text PRIMARY KEY,
    provider_ref    text NOT NULL,
    amount_cents    bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- Check-in: a ticket is admitted once.
CREATE INDEX tickets_event_state_idx ON tickets (event_id, state);

-- What staff did, for the event's change log (seat transitions are in
-- seat_events; this holds the actions that are not one).
CREATE TABLE staff_actions (
    id        bigserial PRIMARY KEY,
    event_id  uuid REFERENCES events (event_id) ON DELETE CASCADE,
    at        timestamptz NOT NULL DEFAULT now(),
    actor_id  uuid NOT NULL REFERENCES users (user_id),
    kind      text NOT NULL,
    seat_ids  text[] NOT NULL DEFAULT '{}',
    detail    text NOT NULL DEFAULT ''
);
CREATE INDEX staff_actions_event_idx ON staff_actions (event_id, at DESC);
CREATE INDEX seat_events_event_at_idx ON seat_events (event_id, at DESC);

-- The live seat maps learn of blocks too (a lapsed counter hold on a
-- blocked seat reads as blocked, not free).
CREATE OR REPLACE FUNCTION notify_seat_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    message text;
BEGIN
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

-- Box-office requests that move money or seats (refunds) answer a retry
-- with the same key as they answered the first time: the answer is stored
-- in the same transaction as the change.
CREATE TABLE staff_requests (
    user_id         uuid NOT NULL REFERENCES users (user_id),
    idempotency_key text NOT NULL,
    request_hash    text NOT NULL,
    response        jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, idempotency_key)
);
