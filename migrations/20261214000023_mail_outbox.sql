-- The transactional outbox of mail to buyers. A row is written by a trigger
-- in the very transaction that confirms a booking (online, at the counter
-- with an address, by reconciliation) or records a refund, so a mail is
-- queued if and only if that change committed, and at most once for it
-- (the unique key). A sender claims due rows, sends, and marks them sent;
-- a failure is retried later, with a growing pause.
CREATE TYPE mail_kind AS ENUM ('tickets', 'refund', 'event_cancelled');
CREATE TYPE mail_state AS ENUM ('queued', 'sent', 'failed');

CREATE TABLE mail_outbox (
    mail_id         bigserial PRIMARY KEY,
    booking_id      uuid NOT NULL REFERENCES bookings (booking_id),
    kind            mail_kind NOT NULL,
    -- What in the booking's life the mail is about: '' for its confirmation,
    -- the refund's id, or a staff re-send's own id.
    about           text NOT NULL DEFAULT '',
    state           mail_state NOT NULL DEFAULT 'queued',
    attempts        integer NOT NULL DEFAULT 0,
    -- When it is next due; a sender that claims it moves this on by its
    -- lease, so a sender that dies mid-send leaves it due again later.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    recipient       text,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    UNIQUE (booking_id, kind, about)
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE state = 'queued';

CREATE FUNCTION queue_booking_mail() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A counter sale without an address has nobody to mail.
    IF NEW.channel = 'online' OR NEW.customer_email IS NOT NULL THEN
        INSERT INTO mail_outbox (booking_id, kind) VALUES (NEW.booking_id, 'tickets')
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER bookings_queue_mail AFTER INSERT ON bookings
    FOR EACH ROW EXECUTE FUNCTION queue_booking_mail();

CREATE FUNCTION queue_refund_mail() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.booking_id IS NOT NULL AND NEW.kind IN ('staff', 'cancel') THEN
        INSERT INTO mail_outbox (booking_id, kind, about)
        SELECT NEW.booking_id, CASE NEW.kind WHEN 'cancel' THEN 'event_cancelled' ELSE 'refund' END::mail_kind, NEW.refund_id::text
          FROM bookings b
         WHERE b.booking_id = NEW.booking_id AND (b.channel = 'online' OR b.customer_email IS NOT NULL)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER refunds_queue_mail AFTER INSERT ON refunds
    FOR EACH ROW EXECUTE FUNCTION queue_refund_mail();
