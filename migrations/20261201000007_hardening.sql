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
