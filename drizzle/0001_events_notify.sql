-- Every committed events row wakes the LISTENers on `nomos_events`. The payload stays tiny
-- (id, session, type); the row is the data. NOTIFY is sent at commit, so a rolled-back
-- change notifies nobody.
CREATE OR REPLACE FUNCTION nomos_events_notify() RETURNS trigger AS $$
BEGIN
	PERFORM pg_notify('nomos_events', json_build_object('id', NEW.id, 's', NEW.session_id, 't', NEW.type)::text);
	RETURN NEW;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION nomos_events_notify();
