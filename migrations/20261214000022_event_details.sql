-- What a fan searches the catalogue by and reads on an event's page: the
-- city, the performers or tags, when the doors open, the venue's address,
-- and notes (age limits, accessibility). `kind` is the event's category.
ALTER TABLE events
    ADD COLUMN city text NOT NULL DEFAULT '',
    ADD COLUMN performers text[] NOT NULL DEFAULT '{}',
    ADD COLUMN doors_at timestamptz,
    ADD COLUMN address text NOT NULL DEFAULT '',
    ADD COLUMN notes text NOT NULL DEFAULT '';
