-- Every status column is a PostgreSQL enum, as the Rust side reads it: no
-- free text where a fixed set of values is meant.

CREATE TYPE booking_status AS ENUM ('confirmed', 'partially_refunded', 'refunded', 'cancelled');
ALTER TABLE bookings DROP CONSTRAINT bookings_status_check;
ALTER TABLE bookings ALTER COLUMN status DROP DEFAULT;
ALTER TABLE bookings ALTER COLUMN status TYPE booking_status USING status::booking_status;
ALTER TABLE bookings ALTER COLUMN status SET DEFAULT 'confirmed';

CREATE TYPE refund_state AS ENUM ('pending', 'succeeded', 'failed');
DROP INDEX refunds_pending_idx;
ALTER TABLE refunds DROP CONSTRAINT refunds_status_check;
ALTER TABLE refunds ALTER COLUMN status DROP DEFAULT;
ALTER TABLE refunds ALTER COLUMN status TYPE refund_state USING status::refund_state;
ALTER TABLE refunds ALTER COLUMN status SET DEFAULT 'pending';
CREATE INDEX refunds_pending_idx ON refunds (created_at) WHERE status <> 'succeeded';

-- Why a seat changed, in the change log.
CREATE TYPE seat_change_reason AS ENUM (
    'hold', 'release', 'checkout', 'sale', 'payment_not_taken', 'payment_deadline', 'expired');
ALTER TABLE seat_events ALTER COLUMN reason TYPE seat_change_reason USING reason::seat_change_reason;

-- A ticket knows its price (refunds can be per ticket) and where it stands.
CREATE TYPE ticket_state AS ENUM ('valid', 'checked_in', 'refunded', 'void');
ALTER TABLE tickets
    ADD COLUMN price_cents integer NOT NULL DEFAULT 0,
    ADD COLUMN state ticket_state NOT NULL DEFAULT 'valid',
    ADD COLUMN checked_in_at timestamptz;
UPDATE tickets t SET price_cents = s.price_cents FROM seats s WHERE s.event_id = t.event_id AND s.seat_id = t.seat_id;
UPDATE tickets SET state = 'void' WHERE voided_at IS NOT NULL;
ALTER TABLE tickets ALTER COLUMN price_cents DROP DEFAULT;
-- A live ticket is one whose seat is taken by it.
ALTER TABLE tickets ADD CONSTRAINT tickets_live_state CHECK ((voided_at IS NULL) = (state IN ('valid', 'checked_in')));

CREATE TYPE sales_channel AS ENUM ('online', 'box_office');
ALTER TABLE bookings
    ADD COLUMN channel sales_channel NOT NULL DEFAULT 'online',
    ADD COLUMN refunded_cents bigint NOT NULL DEFAULT 0;
