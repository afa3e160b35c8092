-- Bookings found by event, in the order they were made. Cancelling an event
-- refunds its bookings one a transaction, each taken as the event's oldest
-- still to refund: without this index every one of them read the whole
-- bookings table (a stadium's 50,000 bookings, 50,000 times). The event's
-- sales figures and the staff's booking list of an event read them so too.
CREATE INDEX bookings_event_idx ON bookings (event_id, created_at);
-- The staff's booking list over all events, newest first (200 at a time).
CREATE INDEX bookings_created_idx ON bookings (created_at DESC);
