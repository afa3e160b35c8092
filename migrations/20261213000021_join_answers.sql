-- A join batch's answer in the same call: every joiner's entry with the
-- queue's figures (the position and ETA a fan is told), so the batch is one
-- statement and the entries are read once. The body is as before; only
-- what it returns is wider.
DROP FUNCTION queue_join_many(uuid, uuid[], text[]);

CREATE FUNCTION queue_join_many(p_event uuid, p_users uuid[], p_tokens text[])
RETURNS TABLE (out_user uuid, out_token text, out_ticket bigint, out_admission_id uuid, out_live_admission boolean,
               out_admitted_through bigint, out_prequeue bigint, out_admit_rate float8)
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
    -- A statement of its own, so it sees the rows just written.
    RETURN QUERY SELECT e.user_id, e.queue_token, e.ticket, e.admission_id, coalesce(e.admission_expires_at > now(), false),
                        qq.admitted_through, qq.prequeue, qq.admit_rate
                   FROM queue_entries e JOIN queues qq ON qq.event_id = e.event_id
                  WHERE e.event_id = p_event AND e.user_id = ANY (p_users);
END;
$$;
