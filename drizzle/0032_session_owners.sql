-- Sessions belong to their operator (issue #43 item 3): each operator sees only their own chats
-- and the ones shared with them (`shared`: 'read' or 'write'); admins read every one in the review.
-- Sessions made before this have no owner when they came from an alert, a schedule or an older
-- version. Their owner becomes, in this order: the operator who sent the session's first message
-- (its `cause`), the operator who made the alert hook or schedule that opened it, and else the
-- first admin (the oldest), so that no existing chat is left without someone who sees it.
ALTER TABLE "chat_sessions" ADD COLUMN "shared" text;--> statement-breakpoint
CREATE INDEX "chat_sessions_operator_idx" ON "chat_sessions" USING btree ("operator_id");--> statement-breakpoint
UPDATE "chat_sessions" s SET "operator_id" = coalesce(
	(SELECT o."id" FROM "messages" m JOIN "operators" o ON o."id"::text = m."cause"->>'operatorId'
		WHERE m."session_id" = s."id" AND m."role" = 'user' ORDER BY m."seq" LIMIT 1),
	(SELECT h."created_by" FROM "alert_hooks" h WHERE h."id" = s."started_by_hook"),
	(SELECT sc."created_by" FROM "schedules" sc WHERE sc."id" = s."started_by_schedule"),
	(SELECT o."id" FROM "operators" o WHERE o."role" = 'admin' ORDER BY o."created_at" LIMIT 1)
) WHERE s."operator_id" IS NULL AND s."replay" IS NULL;
