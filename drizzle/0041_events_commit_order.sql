-- An event's id is handed out at commit, not when the row is written. Ids must follow commit
-- order (a reader resumes with `id > last` and must never miss a late commit), so they are given
-- under one lock. Taken at the insert (as before), that lock was held from a transaction's first
-- event to its commit, and a transaction that emitted and then locked a row (an answer: its
-- event, then its note's session) deadlocked with one that locked the row and then emitted (a
-- turn's message). Now the insert takes a provisional id nobody else can see, and this deferred
-- trigger, at commit, after every other lock the transaction took, takes the order lock, gives
-- the row its final id and notifies. The session_activity rows noted in the transaction (0023)
-- are locked first, so nothing is locked after the order lock.
CREATE FUNCTION nomos_activity_flush_now() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	noted text := coalesce(current_setting('nomos.activity_sessions', true), '');
BEGIN
	IF noted <> '' THEN
		PERFORM set_config('nomos.activity_sessions', '', true);
		PERFORM nomos_activity_refresh(array(SELECT DISTINCT x::uuid AS id FROM unnest(string_to_array(noted, ' ')) x WHERE x <> '' ORDER BY id));
	END IF;
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION nomos_activity_flush() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM nomos_activity_flush_now();
	RETURN NULL;
END $$;--> statement-breakpoint
CREATE FUNCTION nomos_events_commit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	final bigint;
BEGIN
	PERFORM nomos_activity_flush_now();
	-- the order lock (src/lib/server/db/queries/events.ts), held until the commit
	PERFORM pg_advisory_xact_lock(7140202613);
	final := nextval(pg_get_serial_sequence('events', 'id'));
	UPDATE events SET id = final WHERE id = NEW.id;
	-- emitEventNow reads it (after SET CONSTRAINTS … IMMEDIATE)
	PERFORM set_config('nomos.last_event_id', final::text, true);
	-- every committed event wakes the LISTENers on `nomos_events` (0001): id, session, type; the row is the data
	PERFORM pg_notify('nomos_events', json_build_object('id', final, 's', NEW.session_id, 't', NEW.type)::text);
	RETURN NULL;
END $$;--> statement-breakpoint
DROP TRIGGER events_notify ON events;--> statement-breakpoint
DROP FUNCTION nomos_events_notify();--> statement-breakpoint
CREATE CONSTRAINT TRIGGER events_commit_order AFTER INSERT ON events
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION nomos_events_commit();
