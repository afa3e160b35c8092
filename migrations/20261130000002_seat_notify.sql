-- Live seat maps: every committed change to seats is announced on the
-- `frontrow_seats` channel, so each server instance can update its in-memory
-- seat map and push the change to its WebSocket viewers.
--
-- One notification per statement and event (a hold of six seats is one
-- message), cut into chunks that stay under PostgreSQL's 8000-byte payload
-- limit. NOTIFY is transactional: listeners hear only what committed.
-- Payload: {"e": event_id, "c": [[seat_id, version, state, hold_expires_at_ms|null], ...]}
CREATE FUNCTION notify_seat_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    message text;
BEGIN
    FOR message IN
        SELECT json_build_object(
                   'e', event_id,
                   'c', json_agg(json_build_array(
                            seat_id, version, state,
                            (extract(epoch FROM hold_expires_at) * 1000)::bigint)
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

CREATE TRIGGER seats_notify_changes
    AFTER UPDATE ON seats
    REFERENCING NEW TABLE AS changed_seats
    FOR EACH STATEMENT EXECUTE FUNCTION notify_seat_changes();

COMMENT ON COLUMN seats.position IS
    'Order of the seat in the event''s layout: by section, then row, then number, as staff listed them.';
