-- The virtual waiting room.
--
-- Each fan who joins an event's queue gets a ticket number; the admission
-- loop admits tickets in order by moving a cursor, so a fan's position is
-- simply ticket - cursor (no counting). Fans who join before the sale opens
-- wait in a pre-queue without a ticket; at the opening their order is drawn
-- at random, once, then later arrivals are numbered first come, first served.

ALTER TABLE events
    ADD COLUMN admission_factor double precision NOT NULL DEFAULT 1.5
        CHECK (admission_factor > 0 AND admission_factor <= 20),
    ADD COLUMN max_active integer NOT NULL DEFAULT 2000 CHECK (max_active BETWEEN 1 AND 1000000),
    ADD COLUMN admission_paused boolean NOT NULL DEFAULT false;

CREATE TABLE queues (
    event_id      uuid PRIMARY KEY REFERENCES events (event_id) ON DELETE CASCADE,
    -- Tickets 1..next_ticket have been handed out.
    next_ticket   bigint NOT NULL DEFAULT 0,
    -- Tickets 1..admitted_through have been admitted.
    admitted_through bigint NOT NULL DEFAULT 0 CHECK (admitted_through <= next_ticket),
    -- Fans waiting for the opening draw.
    prequeue      bigint NOT NULL DEFAULT 0,
    drawn_at      timestamptz,
    -- The admission loop's lease: one instance admits for the event at a time.
    leader_id     uuid,
    leader_until  timestamptz,
    last_tick_at  timestamptz,
    -- Admissions per second, smoothed over recent ticks (for ETAs).
    admit_rate    double precision NOT NULL DEFAULT 0
);

CREATE TABLE queue_entries (
    event_id      uuid NOT NULL REFERENCES events (event_id) ON DELETE CASCADE,
    user_id       uuid NOT NULL REFERENCES users (user_id),
    queue_token   text NOT NULL UNIQUE,
    -- NULL while in the pre-queue.
    ticket        bigint,
    joined_at     timestamptz NOT NULL DEFAULT now(),
    admission_id  uuid,
    admitted_at   timestamptz,
    admission_expires_at timestamptz,
    PRIMARY KEY (event_id, user_id),
    UNIQUE (event_id, ticket),
    CHECK ((admission_id IS NULL) = (admission_expires_at IS NULL))
);
-- Active shoppers: admissions not yet lapsed.
CREATE INDEX queue_entries_active_idx ON queue_entries (event_id, admission_expires_at) WHERE admission_id IS NOT NULL;

-- Every admission round, for staff figures and for checking that one
-- instance admits per tick.
CREATE TABLE admission_ticks (
    id          bigserial PRIMARY KEY,
    event_id    uuid NOT NULL REFERENCES events (event_id) ON DELETE CASCADE,
    instance_id uuid NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    remaining   bigint NOT NULL,
    active      bigint NOT NULL,
    admitted    bigint NOT NULL
);
CREATE INDEX admission_ticks_event_idx ON admission_ticks (event_id, at);

-- Draws the pre-queue's order at random (gen_random_uuid: a CSPRNG), once.
-- The caller holds the queue row lock.
CREATE FUNCTION queue_draw(p_event uuid) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    base  bigint;
    drawn bigint;
BEGIN
    SELECT next_ticket INTO base FROM queues WHERE event_id = p_event AND drawn_at IS NULL;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    WITH shuffled AS (
        SELECT user_id, row_number() OVER (ORDER BY gen_random_uuid()) AS n
          FROM queue_entries WHERE event_id = p_event AND ticket IS NULL
    )
    UPDATE queue_entries e SET ticket = base + s.n
      FROM shuffled s WHERE e.event_id = p_event AND e.user_id = s.user_id;
    GET DIAGNOSTICS drawn = ROW_COUNT;
    UPDATE queues SET next_ticket = next_ticket + drawn, prequeue = 0, drawn_at = now() WHERE event_id = p_event;
    RETURN drawn;
END;
$$;

-- Joins a batch of fans (each server instance coalesces the joins that
-- arrive together into one call, so a burst costs one commit per batch, not
-- per fan). A fan already in the queue keeps their place and token, unless
-- their admission lapsed: then they go to the back with a fresh token. A
-- newcomer gets the next ticket, in arrival order, or waits for the draw if
-- the sale has not opened yet.
CREATE FUNCTION queue_join_many(p_event uuid, p_users uuid[], p_tokens text[])
RETURNS TABLE (out_user uuid, out_token text)
LANGUAGE plpgsql AS $$
DECLARE
    q      queues%ROWTYPE;
    opens  timestamptz;
    added  bigint;
BEGIN
    SELECT ev.sale_opens_at INTO opens FROM events ev WHERE ev.event_id = p_event;
    INSERT INTO queues (event_id) VALUES (p_event) ON CONFLICT (event_id) DO NOTHING;
    SELECT * INTO q FROM queues qq WHERE qq.event_id = p_event FOR UPDATE;
    -- The first arrivals after the opening draw the pre-queue, if the
    -- admission loop has not yet.
    IF q.drawn_at IS NULL AND now() >= opens THEN
        PERFORM queue_draw(p_event);
        SELECT * INTO q FROM queues qq WHERE qq.event_id = p_event;
    END IF;
    WITH arrivals AS (
        SELECT DISTINCT ON (a.user_id) a.user_id, a.token, a.ord
          FROM unnest(p_users, p_tokens) WITH ORDINALITY AS a (user_id, token, ord)
         ORDER BY a.user_id, a.ord
    ), newcomers AS (
        SELECT a.user_id, a.token, row_number() OVER (ORDER BY a.ord) AS n
          FROM arrivals a
          LEFT JOIN queue_entries e ON e.event_id = p_event AND e.user_id = a.user_id
         WHERE e.user_id IS NULL OR (e.admission_id IS NOT NULL AND e.admission_expires_at <= now())
    )
    INSERT INTO queue_entries AS e (event_id, user_id, queue_token, ticket)
    SELECT p_event, n.user_id, n.token, CASE WHEN q.drawn_at IS NULL THEN NULL ELSE q.next_ticket + n.n END
      FROM newcomers n
    ON CONFLICT (event_id, user_id) DO UPDATE
        SET queue_token = EXCLUDED.queue_token, ticket = EXCLUDED.ticket, joined_at = now(),
            admission_id = NULL, admitted_at = NULL, admission_expires_at = NULL;
    GET DIAGNOSTICS added = ROW_COUNT;
    IF q.drawn_at IS NULL THEN
        UPDATE queues qq SET prequeue = qq.prequeue + added WHERE qq.event_id = p_event;
    ELSE
        UPDATE queues qq SET next_ticket = qq.next_ticket + added WHERE qq.event_id = p_event;
    END IF;
    RETURN QUERY SELECT e.user_id, e.queue_token FROM queue_entries e WHERE e.event_id = p_event AND e.user_id = ANY (p_users);
END;
$$;
