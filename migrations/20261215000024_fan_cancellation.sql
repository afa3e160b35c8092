-- Fans cancelling their own tickets, on terms staff set per event.
--
-- cancel_until_hours: fans may cancel until this many hours before the
-- start; NULL (the default) offers no self-service cancelling at all (staff
-- can still refund). Of each cancelled ticket the seller keeps
-- cancel_keep_percent of its price plus cancel_fee_cents, never more than
-- the price.
ALTER TABLE events
    ADD COLUMN cancel_until_hours integer CHECK (cancel_until_hours BETWEEN 0 AND 8760),
    ADD COLUMN cancel_keep_percent integer NOT NULL DEFAULT 0 CHECK (cancel_keep_percent BETWEEN 0 AND 100),
    ADD COLUMN cancel_fee_cents integer NOT NULL DEFAULT 0 CHECK (cancel_fee_cents BETWEEN 0 AND 10000000);

-- A fan's own cancellation, and what the seller kept of it (the mail and
-- the books say so).
ALTER TYPE refund_kind ADD VALUE 'fan';
ALTER TABLE refunds ADD COLUMN kept_cents bigint NOT NULL DEFAULT 0 CHECK (kept_cents >= 0);
-- Per ticket too: what the seller kept of a cancelled ticket is still
-- takings in the figures and sales reports.
ALTER TABLE tickets ADD COLUMN kept_cents bigint NOT NULL DEFAULT 0 CHECK (kept_cents >= 0);

-- A fan's cancellation is mailed like a refund by staff. (PL/pgSQL reads
-- the new enum value when the trigger first runs, after this commits.)
CREATE OR REPLACE FUNCTION queue_refund_mail() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.booking_id IS NOT NULL AND NEW.kind::text IN ('staff', 'cancel', 'fan') THEN
        INSERT INTO mail_outbox (booking_id, kind, about)
        SELECT NEW.booking_id, CASE NEW.kind::text WHEN 'cancel' THEN 'event_cancelled' ELSE 'refund' END::mail_kind, NEW.refund_id::text
          FROM bookings b
         WHERE b.booking_id = NEW.booking_id AND (b.channel = 'online' OR b.customer_email IS NOT NULL)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
