-- The box office, part one: the new values of existing enums. PostgreSQL
-- lets a migration use an enum value only once it is committed, so they
-- come alone, before the tables that use them (part two).

-- A seat staff keep off sale (house seats, production holds).
ALTER TYPE seat_state ADD VALUE 'blocked';

ALTER TYPE seat_change_reason ADD VALUE 'counter_hold';
ALTER TYPE seat_change_reason ADD VALUE 'block';
ALTER TYPE seat_change_reason ADD VALUE 'unblock';
ALTER TYPE seat_change_reason ADD VALUE 'staff_release';
ALTER TYPE seat_change_reason ADD VALUE 'refund';
ALTER TYPE seat_change_reason ADD VALUE 'cancel';
