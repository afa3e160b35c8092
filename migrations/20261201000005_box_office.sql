-- The box office, part one: events can be unpublished and cancelled, and a
-- seat can be blocked (kept off sale by staff). The new seat state is added
-- alone: PostgreSQL lets a migration use an enum value only once committed.

ALTER TABLE events
    ADD COLUMN published boolean NOT NULL DEFAULT true,
    ADD COLUMN cancelled_at timestamptz;

ALTER TYPE seat_state ADD VALUE 'blocked';
