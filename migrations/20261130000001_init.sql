-- frontrow schema. Every hot statement is a point update by primary key or an
-- index range scan; see the comments on each index for the statement it serves.

CREATE TYPE user_role AS ENUM ('fan', 'staff', 'admin');
CREATE TYPE seat_state AS ENUM ('available', 'held', 'payment_pending', 'sold');

CREATE TABLE users (
    user_id       uuid PRIMARY KEY,
    email         text NOT NULL,
    name          text NOT NULL,
    password_hash text NOT NULL,
    role          user_role NOT NULL DEFAULT 'fan',
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE events (
    event_id             uuid PRIMARY KEY,
    name                 text NOT NULL,
    kind                 text NOT NULL,
    venue                text NOT NULL,
    starts_at            timestamptz NOT NULL,
    sale_opens_at        timestamptz NOT NULL,
    hold_ttl_seconds     integer NOT NULL CHECK (hold_ttl_seconds BETWEEN 1 AND 3600),
    max_seats_per_order  integer NOT NULL CHECK (max_seats_per_order BETWEEN 1 AND 50),
    waiting_room_enabled boolean NOT NULL DEFAULT false,
    created_by           uuid REFERENCES users (user_id),
    created_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE price_tiers (
    event_id    uuid NOT NULL REFERENCES events (event_id) ON DELETE CASCADE,
    tier        text NOT NULL,
    price_cents integer NOT NULL CHECK (price_cents >= 0),
    PRIMARY KEY (event_id, tier)
);

-- Every change to any seat takes the next number of this one sequence, so a
-- seat's version is also a monotonic event-wide version without a hot counter row.
CREATE SEQUENCE seat_version_seq;

-- The system of record for a seat. hold_* describe the current claim (held or
-- payment_pending); for payment_pending, hold_expires_at is the payment deadline.
CREATE TABLE seats (
    event_id        uuid NOT NULL REFERENCES events (event_id) ON DELETE CASCADE,
    seat_id         text NOT NULL,
    section         text NOT NULL,
    row_label       text NOT NULL,
    number          integer NOT NULL,
    position        integer NOT NULL,
    tier            text NOT NULL,
    price_cents     integer NOT NULL,
    state           seat_state NOT NULL DEFAULT 'available',
    version         bigint NOT NULL DEFAULT nextval('seat_version_seq'),
    hold_id         uuid,
    hold_token      text,
    holder_id       uuid,
    hold_expires_at timestamptz,
    booking_id      uuid,
    PRIMARY KEY (event_id, seat_id),
    FOREIGN KEY (event_id, tier) REFERENCES price_tiers (event_id, tier),
    CHECK ((state = 'available') = (hold_id IS NULL AND booking_id IS NULL)),
    CHECK (state NOT IN ('held', 'payment_pending')
           OR (hold_id IS NOT NULL AND hold_token IS NOT NULL AND holder_id IS NOT NULL AND hold_expires_at IS NOT NULL)),
    CHECK ((state = 'sold') = (booking_id IS NOT NULL))
);
-- Reaper: find lapsed holds without scanning the event.
CREATE INDEX seats_held_expiry_idx ON seats (event_id, hold_expires_at) WHERE state IN ('held', 'payment_pending');
-- Release, checkout and the per-fan seat limit look seats up by their hold.
CREATE INDEX seats_hold_idx ON seats (hold_id) WHERE hold_id IS NOT NULL;
CREATE INDEX seats_holder_idx ON seats (event_id, holder_id) WHERE holder_id IS NOT NULL;
-- Seat-map version: max(version) for one event.
CREATE INDEX seats_version_idx ON seats (event_id, version);

CREATE TYPE hold_state AS ENUM ('active', 'released', 'checking_out', 'converted', 'expired');

CREATE TABLE holds (
    hold_id      uuid PRIMARY KEY,
    event_id     uuid NOT NULL REFERENCES events (event_id),
    user_id      uuid NOT NULL REFERENCES users (user_id),
    hold_token   text NOT NULL,
    seat_ids     text[] NOT NULL,
    total_cents  bigint NOT NULL,
    expires_at   timestamptz NOT NULL,
    state        hold_state NOT NULL DEFAULT 'active',
    created_at   timestamptz NOT NULL DEFAULT now(),
    ended_at     timestamptz
);
CREATE INDEX holds_user_event_idx ON holds (user_id, event_id);

CREATE TABLE bookings (
    booking_id  uuid PRIMARY KEY,
    event_id    uuid NOT NULL REFERENCES events (event_id),
    user_id     uuid NOT NULL REFERENCES users (user_id),
    hold_id     uuid NOT NULL UNIQUE REFERENCES holds (hold_id),
    total_cents bigint NOT NULL,
    status      text NOT NULL DEFAULT 'confirmed' CHECK (status IN ('confirmed', 'refunded')),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bookings_user_idx ON bookings (user_id, created_at DESC);

CREATE TABLE tickets (
    ticket_id  uuid PRIMARY KEY,
    booking_id uuid NOT NULL REFERENCES bookings (booking_id),
    event_id   uuid NOT NULL,
    seat_id    text NOT NULL,
    code       text NOT NULL UNIQUE,
    voided_at  timestamptz,
    FOREIGN KEY (event_id, seat_id) REFERENCES seats (event_id, seat_id)
);
-- The last backstop: the database itself refuses a second live ticket for a seat.
CREATE UNIQUE INDEX tickets_one_per_seat ON tickets (event_id, seat_id) WHERE voided_at IS NULL;
CREATE INDEX tickets_booking_idx ON tickets (booking_id);

CREATE TYPE checkout_state AS ENUM
    ('processing', 'payment_pending', 'confirmed', 'declined', 'expired', 'refunded', 'failed');

-- One row per (fan, Idempotency-Key): the claim on the key, the request's
-- fingerprint, and the response to replay.
CREATE TABLE checkouts (
    checkout_id     uuid PRIMARY KEY,
    user_id         uuid NOT NULL REFERENCES users (user_id),
    idempotency_key text NOT NULL,
    request_hash    text NOT NULL,
    hold_id         uuid NOT NULL REFERENCES holds (hold_id),
    event_id        uuid NOT NULL REFERENCES events (event_id),
    state           checkout_state NOT NULL DEFAULT 'processing',
    -- While processing, another request with the key is "in use" until this passes
    -- (a crashed worker's claim lapses and a retry resumes the checkout).
    lease_until     timestamptz NOT NULL,
    response_status integer,
    response_body   jsonb,
    booking_id      uuid REFERENCES bookings (booking_id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, idempotency_key)
);
CREATE INDEX checkouts_hold_idx ON checkouts (hold_id);

CREATE TYPE payment_status AS ENUM
    ('created', 'processing', 'succeeded', 'declined', 'canceled', 'unknown');

CREATE TABLE payment_intents (
    payment_id      uuid PRIMARY KEY,
    checkout_id     uuid NOT NULL UNIQUE REFERENCES checkouts (checkout_id),
    provider        text NOT NULL,
    -- Sent to the provider as its idempotency key: one charge per checkout.
    provider_key    text NOT NULL UNIQUE,
    provider_ref    text,
    amount_cents    bigint NOT NULL,
    payment_token   text NOT NULL,
    status          payment_status NOT NULL DEFAULT 'created',
    -- Set when the seats were let go before the payment settled (recorded decision).
    seats_released_at timestamptz,
    settled_at      timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- Reconciliation walks the unsettled payments only.
CREATE INDEX payment_intents_unsettled_idx ON payment_intents (updated_at) WHERE settled_at IS NULL;

CREATE TABLE refunds (
    refund_id    uuid PRIMARY KEY,
    payment_id   uuid NOT NULL UNIQUE REFERENCES payment_intents (payment_id),
    amount_cents bigint NOT NULL,
    reason       text NOT NULL,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    provider_ref text,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_pending_idx ON refunds (created_at) WHERE status <> 'succeeded';

-- Append-only: who changed which seat, when, from what to what, under which hold.
CREATE TABLE seat_events (
    id          bigserial PRIMARY KEY,
    event_id    uuid NOT NULL,
    seat_id     text NOT NULL,
    version     bigint NOT NULL,
    from_state  seat_state,
    to_state    seat_state NOT NULL,
    hold_id     uuid,
    -- A fingerprint of the fencing token, never the token itself.
    token_tag   text,
    actor_id    uuid,
    reason      text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX seat_events_event_version_idx ON seat_events (event_id, version);

-- The built-in simulated payment provider keeps its own ledger, as a real
-- provider would on its side: it survives our crashes and honours its
-- idempotency keys. The engine never writes here except through the provider.
CREATE TABLE sim_provider_payments (
    provider_ref    text PRIMARY KEY,
    idempotency_key text NOT NULL UNIQUE,
    amount_cents    bigint NOT NULL,
    payment_token   text NOT NULL,
    status          text NOT NULL,
    settles_at      timestamptz,
    refunded_cents  bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now()
);
