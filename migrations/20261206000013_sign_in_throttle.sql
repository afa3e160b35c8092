-- Sign-in attempts, counted where every instance sees them. One row per
-- key: a client address ("address:..."), an account ("account:<lower-cased
-- email>") or a device the account signed in from before ("device:...").
-- An attempt is counted here before its password is checked, in one
-- statement that also refuses it during a back-off, so parallel guesses
-- cannot all slip through; a right password clears its account or device.
CREATE TABLE sign_in_throttle (
    key      text PRIMARY KEY,
    failures integer NOT NULL,
    last_at  timestamptz NOT NULL
);
CREATE INDEX sign_in_throttle_last_at ON sign_in_throttle (last_at);

-- Email codes: a resent code keeps the count of wrong tries of the hour,
-- and codes sent per account are capped per hour.
ALTER TABLE email_codes
    ADD COLUMN window_started_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN sent_in_window integer NOT NULL DEFAULT 1;
