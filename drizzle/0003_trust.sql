CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor_id" uuid,
	"actor_name" text,
	"action" text NOT NULL,
	"route" text NOT NULL,
	"subject_type" text,
	"subject_id" text,
	"session_id" uuid,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "login_throttle" (
	"key" text PRIMARY KEY NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	"last_failure_at" timestamp with time zone DEFAULT now() NOT NULL,
	"blocked_until" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "approvals" DROP CONSTRAINT "approvals_execution_id_executions_id_fk";
--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "message_id" uuid;--> statement-breakpoint
ALTER TABLE "operators" ADD COLUMN "disabled_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "audit_log_at_idx" ON "audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_log_action_idx" ON "audit_log" USING btree ("action","at");--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_execution_id_executions_id_fk" FOREIGN KEY ("execution_id") REFERENCES "public"."executions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- The audit trail and the approvals it grew from are append-only: no role the app uses can edit
-- or delete a row (TRUNCATE too). A mistaken entry is corrected by a new one.
CREATE OR REPLACE FUNCTION nomos_append_only() RETURNS trigger AS $$
BEGIN
	RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION nomos_append_only();
--> statement-breakpoint
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION nomos_append_only();
--> statement-breakpoint
CREATE TRIGGER approvals_append_only BEFORE UPDATE OR DELETE ON approvals FOR EACH ROW EXECUTE FUNCTION nomos_append_only();
--> statement-breakpoint
CREATE TRIGGER approvals_no_truncate BEFORE TRUNCATE ON approvals FOR EACH STATEMENT EXECUTE FUNCTION nomos_append_only();
--> statement-breakpoint
-- Decisions made before the trail existed enter it as they were recorded.
INSERT INTO audit_log (at, actor_id, actor_name, action, route, subject_type, subject_id, session_id, detail)
SELECT a.decided_at, a.decided_by, o.username, 'execution.' || a.decision, a.route, 'execution', a.execution_id::text,
	e.requested_by_session, jsonb_build_object('action', e.action, 'target', e.target, 'hash', a.hash, 'reason', a.reason)
FROM approvals a JOIN executions e ON e.id = a.execution_id LEFT JOIN operators o ON o.id = a.decided_by
ORDER BY a.decided_at;
