-- Sessions carry the epoch of their account at sign-in; disabling the
-- account or setting its password moves the epoch on, which ends every
-- session begun before, on every instance (re-enabling does not move it
-- back).
ALTER TABLE users ADD COLUMN session_epoch integer NOT NULL DEFAULT 0;
