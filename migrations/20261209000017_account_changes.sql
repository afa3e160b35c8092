-- Every instance keeps the accounts behind its sessions in memory and trusts
-- them until told otherwise: any change to an account (disabled, role, name,
-- sessions ended by a new password) is announced on commit, whoever made it.
CREATE FUNCTION announce_account_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('frontrow_accounts', COALESCE(NEW.user_id, OLD.user_id)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER account_changed
    AFTER UPDATE ON users
    FOR EACH ROW
    WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION announce_account_change();

CREATE TRIGGER account_removed
    AFTER DELETE ON users
    FOR EACH ROW
    EXECUTE FUNCTION announce_account_change();
