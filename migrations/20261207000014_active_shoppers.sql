-- Who counts against the waiting room's target of active shoppers.
--
-- An admission used to count for its whole lifetime (renewed while the page
-- was open), so fans who had booked, released or let their hold lapse kept
-- admission shut while seats were free. Now an admitted fan counts only
-- while shopping: holding seats (or paying for them), or not yet having
-- held anything and seen in the last `p_window` (the page renews every few
-- seconds; admission itself counts as a sighting).
ALTER TABLE queue_entries ADD COLUMN last_seen_at timestamptz;
UPDATE queue_entries SET last_seen_at = admitted_at WHERE admission_id IS NOT NULL;

CREATE FUNCTION queue_active_shoppers(p_event uuid, p_window interval) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*)
      FROM queue_entries e
     WHERE e.event_id = p_event
       AND e.admission_id IS NOT NULL
       AND e.admission_expires_at > now()
       AND CASE
             WHEN EXISTS (SELECT 1 FROM holds h
                           WHERE h.user_id = e.user_id AND h.event_id = e.event_id
                             AND (h.state = 'checking_out' OR (h.state = 'active' AND h.expires_at > now())))
               THEN true
             -- Held and then released, lapsed or booked: done shopping.
             WHEN EXISTS (SELECT 1 FROM holds h
                           WHERE h.user_id = e.user_id AND h.event_id = e.event_id AND h.created_at >= e.admitted_at)
               THEN false
             ELSE e.last_seen_at > now() - p_window
           END
$$;
