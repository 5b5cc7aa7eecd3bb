CREATE TABLE "session_activity" (
	"session_id" uuid PRIMARY KEY NOT NULL,
	"exec_succeeded" integer DEFAULT 0 NOT NULL,
	"last_success_at" timestamp with time zone,
	"pending_since" timestamp with time zone,
	"questions_open" integer DEFAULT 0 NOT NULL,
	"silent_failed" integer DEFAULT 0 NOT NULL,
	"cap_count" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "session_facts" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "session_facts" ADD COLUMN "session_created_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "session_facts" ADD COLUMN "replay" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- copied from the session (neither changes); `model` waits for the facts' rebuild (FACTS_SQL_VERSION 5)
UPDATE "session_facts" f SET "session_created_at" = c."created_at", "replay" = c."replay" IS NOT NULL FROM "chat_sessions" c WHERE c."id" = f."session_id";--> statement-breakpoint
ALTER TABLE "session_facts" ALTER COLUMN "session_created_at" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "session_activity" ADD CONSTRAINT "session_activity_session_id_chat_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "session_facts_created_idx" ON "session_facts" USING btree ("session_created_at");--> statement-breakpoint
-- session_facts' copies of the session's creation and replay flag are the session's own: a
-- BEFORE trigger fills them on every write (whatever the writer sends), and a change to the
-- session (never made by the app) is copied over.
CREATE FUNCTION nomos_session_facts_copies() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	SELECT c.created_at, c.replay IS NOT NULL INTO NEW.session_created_at, NEW.replay FROM chat_sessions c WHERE c.id = NEW.session_id;
	RETURN NEW;
END $$;--> statement-breakpoint
CREATE TRIGGER session_facts_copies BEFORE INSERT OR UPDATE ON session_facts FOR EACH ROW EXECUTE FUNCTION nomos_session_facts_copies();--> statement-breakpoint
CREATE FUNCTION nomos_session_copied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE session_facts SET session_created_at = NEW.created_at WHERE session_id = NEW.id;
	RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER chat_sessions_copied AFTER UPDATE OF created_at, replay ON chat_sessions FOR EACH ROW
	WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at OR (OLD.replay IS NULL) <> (NEW.replay IS NULL))
	EXECUTE FUNCTION nomos_session_copied();--> statement-breakpoint
-- session_activity is kept by triggers. A statement trigger notes the sessions a change to their
-- executions, questions or session_facts touched (a transaction-local setting: space-separated
-- ids, one append per statement whatever its rows); a deferred row trigger recomputes them at
-- commit, after every other lock the transaction took (the first call does it all, the others
-- find nothing noted). Its rows are locked in id order, so two transactions touching the same
-- sessions cannot deadlock on them, and the sums are read after the lock (no lost update). They
-- are the overview's r_exs, r_qs, r_silent and cap_count (src/lib/server/db/queries/review.ts),
-- which compute them from the rows when the review reads the parts: the tests compare both.
CREATE FUNCTION nomos_activity_note(ids text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF coalesce(ids, '') <> '' THEN
		PERFORM set_config('nomos.activity_sessions', (
			SELECT string_agg(DISTINCT x, ' ') FROM unnest(string_to_array(coalesce(current_setting('nomos.activity_sessions', true), '') || ' ' || ids, ' ')) x
			WHERE x <> ''), true);
	END IF;
END $$;--> statement-breakpoint
-- Recomputes these sessions' rows: each row made and locked (in id order) first, the sums read in
-- a later statement, so they include what every transaction that held a row before committed.
CREATE FUNCTION nomos_activity_refresh(ids uuid[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO session_activity (session_id) SELECT s.id FROM chat_sessions s WHERE s.id = ANY(ids) ORDER BY s.id ON CONFLICT (session_id) DO NOTHING;
	PERFORM 1 FROM session_activity a WHERE a.session_id = ANY(ids) ORDER BY a.session_id FOR UPDATE;
	UPDATE session_activity a SET exec_succeeded = x.succeeded, last_success_at = x.last_success_at, pending_since = x.pending_since,
		questions_open = x.questions_open, silent_failed = x.silent_failed, cap_count = x.cap_count
	FROM (
		SELECT s.id,
			coalesce(ex.succeeded, 0) AS succeeded, ex.last_success_at, ex.pending_since,
			(SELECT count(*) FROM session_questions q WHERE q.session_id = s.id AND q.status = 'open') AS questions_open,
			-- failed, and no later assistant message names its id's first 8 characters or says 'fail'/'error' (mention_at)
			(SELECT count(*) FROM executions e
				WHERE e.requested_by_session = s.id AND e.status = 'failed' AND NOT coalesce(f.mention_at > coalesce(e.finished_at, e.created_at), false)
					AND NOT EXISTS (SELECT 1 FROM message_facts m WHERE m.session_id = s.id AND m.hex_runs IS NOT NULL AND m.role = 'assistant'
						AND m.created_at > coalesce(e.finished_at, e.created_at) AND strpos(m.hex_runs, left(e.id::text, 8)) > 0)) AS silent_failed,
			-- "cannot" messages with no success after them
			(SELECT count(*) FROM unnest(f.cap_at) t(at) WHERE ex.last_success_at IS NULL OR ex.last_success_at <= t.at) AS cap_count
		FROM chat_sessions s
		LEFT JOIN session_facts f ON f.session_id = s.id
		LEFT JOIN LATERAL (
			SELECT count(*) FILTER (WHERE e.status = 'succeeded') AS succeeded,
				max(coalesce(e.finished_at, e.created_at)) FILTER (WHERE e.status = 'succeeded') AS last_success_at,
				min(e.created_at) FILTER (WHERE e.status = 'awaiting_approval') AS pending_since
			FROM executions e WHERE e.requested_by_session = s.id
		) ex ON true
		WHERE s.id = ANY(ids)
	) x WHERE x.id = a.session_id;
END $$;--> statement-breakpoint
CREATE FUNCTION nomos_activity_flush() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	noted text := coalesce(current_setting('nomos.activity_sessions', true), '');
BEGIN
	IF noted <> '' THEN
		PERFORM set_config('nomos.activity_sessions', '', true);
		PERFORM nomos_activity_refresh(array(SELECT DISTINCT x::uuid AS id FROM unnest(string_to_array(noted, ' ')) x WHERE x <> '' ORDER BY id));
	END IF;
	RETURN NULL;
END $$;--> statement-breakpoint
-- The sessions of the rows a statement added, removed or changed. TG_ARGV: the table's key, its
-- session column, then the columns that count on an update (none: every update counts). So an
-- update that moves none of them (a lease's heartbeat, `status = status`) notes nothing.
CREATE FUNCTION nomos_rows_noted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	k text := quote_ident(TG_ARGV[0]);
	s text := quote_ident(TG_ARGV[1]);
	moved text := CASE WHEN array_length(TG_ARGV, 1) > 2 THEN (
		SELECT format('(%s) IS DISTINCT FROM (%s)', string_agg('o.' || quote_ident(c), ', '), string_agg('n.' || quote_ident(c), ', '))
		FROM unnest(TG_ARGV[2:]) c) ELSE 'true' END;
	ids text;
BEGIN
	IF TG_OP = 'INSERT' THEN
		EXECUTE format('SELECT string_agg(DISTINCT %s::text, '' '') FROM new_rows', s) INTO ids;
	ELSIF TG_OP = 'DELETE' THEN
		EXECUTE format('SELECT string_agg(DISTINCT %s::text, '' '') FROM old_rows', s) INTO ids;
	ELSE
		EXECUTE format('SELECT string_agg(DISTINCT x::text, '' '') FROM (
			SELECT o.%2$s AS x FROM old_rows o LEFT JOIN new_rows n ON n.%1$s = o.%1$s WHERE n.%1$s IS NULL OR %3$s
			UNION ALL
			SELECT n.%2$s FROM new_rows n LEFT JOIN old_rows o ON o.%1$s = n.%1$s WHERE o.%1$s IS NULL OR %3$s) y', k, s, moved) INTO ids;
	END IF;
	PERFORM nomos_activity_note(ids);
	RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER executions_noted_insert AFTER INSERT ON executions REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('id', 'requested_by_session', 'status', 'finished_at', 'created_at', 'requested_by_session');--> statement-breakpoint
CREATE TRIGGER executions_noted_update AFTER UPDATE ON executions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('id', 'requested_by_session', 'status', 'finished_at', 'created_at', 'requested_by_session');--> statement-breakpoint
CREATE TRIGGER executions_noted_delete AFTER DELETE ON executions REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('id', 'requested_by_session', 'status', 'finished_at', 'created_at', 'requested_by_session');--> statement-breakpoint
CREATE CONSTRAINT TRIGGER executions_activity_flush AFTER INSERT OR DELETE OR UPDATE OF id, status, finished_at, created_at, requested_by_session ON executions
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION nomos_activity_flush();--> statement-breakpoint
CREATE TRIGGER session_questions_noted_insert AFTER INSERT ON session_questions REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('id', 'session_id', 'status', 'session_id');--> statement-breakpoint
CREATE TRIGGER session_questions_noted_update AFTER UPDATE ON session_questions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('id', 'session_id', 'status', 'session_id');--> statement-breakpoint
CREATE TRIGGER session_questions_noted_delete AFTER DELETE ON session_questions REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('id', 'session_id', 'status', 'session_id');--> statement-breakpoint
CREATE CONSTRAINT TRIGGER session_questions_activity_flush AFTER INSERT OR DELETE OR UPDATE OF id, status, session_id ON session_questions
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION nomos_activity_flush();--> statement-breakpoint
-- every write of a session's facts counts (a message's facts changed with them)
CREATE TRIGGER session_facts_noted_insert AFTER INSERT ON session_facts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('session_id', 'session_id');--> statement-breakpoint
CREATE TRIGGER session_facts_noted_update AFTER UPDATE ON session_facts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('session_id', 'session_id');--> statement-breakpoint
CREATE TRIGGER session_facts_noted_delete AFTER DELETE ON session_facts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION nomos_rows_noted('session_id', 'session_id');--> statement-breakpoint
CREATE CONSTRAINT TRIGGER session_facts_activity_flush AFTER INSERT OR DELETE OR UPDATE ON session_facts
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION nomos_activity_flush();--> statement-breakpoint
-- what the triggers would have written for every session so far
SELECT nomos_activity_refresh(array(
	SELECT s.id FROM chat_sessions s
	WHERE EXISTS (SELECT 1 FROM executions e WHERE e.requested_by_session = s.id) OR EXISTS (SELECT 1 FROM session_questions q WHERE q.session_id = s.id)
		OR EXISTS (SELECT 1 FROM session_facts f WHERE f.session_id = s.id)));
