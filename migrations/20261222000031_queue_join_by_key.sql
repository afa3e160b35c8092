-- A joiner's entry found by its key, whatever the statistics say.
--
-- A queue fills within seconds of opening, long before autovacuum analyses
-- its entries again, so the planner takes an event's queue for a row or
-- two. `queue_join_many` found the joiners' entries by the event and phase
-- and then the fan, and with both indexes on (event, phase, ...) looking
-- equally cheap it read the whole queue through the tickets' index for
-- every batch, filtering by fan (`auto_explain`: 9,886 entries read for a
-- batch of 10): a join cost more the longer the line.
--
-- The tickets' uniqueness now covers only entries that have a ticket (a
-- pre-queue entry has none, and NULLs never clashed), so the index serves
-- only statements about tickets; and each joiner is looked up on its own,
-- by (event, phase, fan), the primary key.
ALTER TABLE queue_entries DROP CONSTRAINT queue_entries_event_id_phase_ticket_key;
CREATE UNIQUE INDEX queue_entries_ticket_idx ON queue_entries (event_id, phase, ticket) WHERE ticket IS NOT NULL;

CREATE OR REPLACE FUNCTION queue_join_many(p_event uuid, p_phase sale_phase, p_users uuid[], p_tokens text[])
RETURNS TABLE (out_user uuid, out_token text, out_ticket bigint, out_admission_id uuid, out_live_admission boolean,
               out_admitted_through bigint, out_prequeue bigint, out_admit_rate float8)
LANGUAGE plpgsql AS $$
DECLARE
    q      queues%ROWTYPE;
    added  bigint;
BEGIN
    INSERT INTO queues (event_id, phase) VALUES (p_event, p_phase) ON CONFLICT (event_id, phase) DO NOTHING;
    SELECT * INTO q FROM queues qq WHERE qq.event_id = p_event AND qq.phase = p_phase FOR UPDATE;
    -- The first arrivals after the opening draw the pre-queue, if the
    -- admission loop has not yet.
    IF q.drawn_at IS NULL AND coalesce(queue_opens_at(p_event, p_phase) <= now(), false) THEN
        PERFORM queue_draw(p_event, p_phase);
        SELECT * INTO q FROM queues qq WHERE qq.event_id = p_event AND qq.phase = p_phase;
    END IF;
    WITH arrivals AS (
        SELECT DISTINCT ON (a.user_id) a.user_id, a.token, a.ord
          FROM unnest(p_users, p_tokens) WITH ORDINALITY AS a (user_id, token, ord)
         ORDER BY a.user_id, a.ord
    ), newcomers AS (
        SELECT a.user_id, a.token, row_number() OVER (ORDER BY a.ord) AS n
          FROM arrivals a
          LEFT JOIN LATERAL (SELECT e.user_id, e.admission_id, e.admission_expires_at
                               FROM queue_entries e
                              WHERE e.event_id = p_event AND e.phase = p_phase AND e.user_id = a.user_id
                              LIMIT 1) e ON true
         WHERE e.user_id IS NULL OR (e.admission_id IS NOT NULL AND e.admission_expires_at <= now())
    )
    INSERT INTO queue_entries AS e (event_id, phase, user_id, queue_token, ticket)
    SELECT p_event, p_phase, n.user_id, n.token, CASE WHEN q.drawn_at IS NULL THEN NULL ELSE q.next_ticket + n.n END
      FROM newcomers n
    ON CONFLICT (event_id, phase, user_id) DO UPDATE
        SET queue_token = EXCLUDED.queue_token, ticket = EXCLUDED.ticket, joined_at = now(),
            admission_id = NULL, admitted_at = NULL, admission_expires_at = NULL;
    GET DIAGNOSTICS added = ROW_COUNT;
    IF q.drawn_at IS NULL THEN
        UPDATE queues qq SET prequeue = qq.prequeue + added WHERE qq.event_id = p_event AND qq.phase = p_phase;
    ELSE
        UPDATE queues qq SET next_ticket = qq.next_ticket + added WHERE qq.event_id = p_event AND qq.phase = p_phase;
    END IF;
    IF p_phase = 'presale' THEN
        -- Locks taken presale row first, public row second; nothing takes
        -- them the other way round.
        INSERT INTO queues (event_id, phase) VALUES (p_event, 'public') ON CONFLICT (event_id, phase) DO NOTHING;
        PERFORM 1 FROM queues qq WHERE qq.event_id = p_event AND qq.phase = 'public' AND qq.drawn_at IS NULL FOR UPDATE;
        IF FOUND THEN
            INSERT INTO queue_entries (event_id, phase, user_id, queue_token)
            SELECT DISTINCT p_event, 'public'::sale_phase, u, replace(gen_random_uuid()::text, '-', '')
              FROM unnest(p_users) u
            ON CONFLICT (event_id, phase, user_id) DO NOTHING;
            GET DIAGNOSTICS added = ROW_COUNT;
            UPDATE queues qq SET prequeue = qq.prequeue + added WHERE qq.event_id = p_event AND qq.phase = 'public';
        END IF;
    END IF;
    -- A statement of its own, so it sees the rows just written.
    RETURN QUERY SELECT e.user_id, e.queue_token, e.ticket, e.admission_id, coalesce(e.admission_expires_at > now(), false),
                        qq.admitted_through, qq.prequeue, qq.admit_rate
                   FROM (SELECT DISTINCT u FROM unnest(p_users) u) j
                   CROSS JOIN LATERAL (SELECT x.* FROM queue_entries x
                                        WHERE x.event_id = p_event AND x.phase = p_phase AND x.user_id = j.u
                                        LIMIT 1) e
                   JOIN queues qq ON qq.event_id = p_event AND qq.phase = p_phase;
END;
$$;
