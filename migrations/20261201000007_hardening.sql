-- A payment we cannot prove uncharged stays under watch: asked about again
-- with back-off until the provider's idempotency window has passed, then
-- handed to a person (gave_up_at).
ALTER TABLE payment_intents
    ADD COLUMN next_check_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN checks        integer NOT NULL DEFAULT 0,
    ADD COLUMN gave_up_at    timestamptz;
DROP INDEX payment_intents_unsettled_idx;
CREATE INDEX payment_intents_due_idx ON payment_intents (next_check_at) WHERE settled_at IS NULL;

-- The simulated provider's failure modes, as a sandbox offers them: an
-- outage, and a search index that lags behind the charges.
CREATE TABLE sim_provider_control (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    outage_until timestamptz,
    search_lag   interval NOT NULL DEFAULT '0 seconds'
);
INSERT INTO sim_provider_control DEFAULT VALUES;

-- A hold request may carry an idempotency key: the same key and seats give
-- the same hold back while it lives.
ALTER TABLE holds
    ADD COLUMN idempotency_key text,
    ADD COLUMN request_hash    text;
CREATE UNIQUE INDEX holds_user_key_idx ON holds (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Server instances beat once a second. A checkout's claim on its key belongs
-- to an instance, and lapses when its time is up or its instance has stopped
-- beating (killed), so a retry after a crash is answered within seconds.
CREATE TABLE instances (
    instance_id  uuid PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE checkouts ADD COLUMN lease_owner uuid;

CREATE FUNCTION lease_lapsed(lease_until timestamptz, owner uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT lease_until <= now()
        OR (owner IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM instances i WHERE i.instance_id = owner AND i.heartbeat_at > now() - interval '5 seconds'))
$$;

-- Bot friction at the queue: an event may require a verified email to join
-- its waiting room; a one-time code sent by mail verifies it.
ALTER TABLE users ADD COLUMN email_verified_at timestamptz;
ALTER TABLE events ADD COLUMN queue_requires_verified_email boolean NOT NULL DEFAULT false;
CREATE TABLE email_codes (
    user_id    uuid PRIMARY KEY REFERENCES users (user_id) ON DELETE CASCADE,
    code_hash  text NOT NULL,
    expires_at timestamptz NOT NULL,
    attempts   integer NOT NULL DEFAULT 0,
    sent_at    timestamptz NOT NULL DEFAULT now()
);
