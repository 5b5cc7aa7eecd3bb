-- Sealed approvals (#43): an HMAC-SHA256 over (execution, hash, decision, route, decider, time)
-- made with a key outside the database (db/seal.ts). Rows from before have none: the runner
-- refuses an approved execution whose approval carries no valid seal, so one approved but not yet
-- run at the upgrade must be approved again (docs/operations.md). The migration cannot seal them:
-- it never sees the key.
ALTER TABLE "approvals" ADD COLUMN "mac" text;
--> statement-breakpoint
-- A plan's approval is sealed too, over its steps' hashes: its steps become executions the server
-- approves (route `plan`), so an unsealed plan approval would be a way around the seal.
ALTER TABLE "plans" ADD COLUMN "mac" text;
