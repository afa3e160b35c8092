-- Standing areas, part one: the new enum value alone (PostgreSQL lets a
-- migration use an enum value only once it is committed).

-- A place in a standing area: a seat of the area with a number but no
-- fixed spot, sold by count.
ALTER TYPE seat_kind ADD VALUE 'standing';
