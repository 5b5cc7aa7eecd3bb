-- Sealed approvals (#43): an HMAC-SHA256 over (execution, hash, decision, route, decider, time)
-- made with a key outside the database (auth/seal.ts). Rows from before have none: the runner
-- refuses an approved execution whose approval carries no valid seal, so one approved but not yet
-- run at the upgrade must be approved again (docs/operations.md). The migration cannot seal them:
-- it never sees the key.
ALTER TABLE "approvals" ADD COLUMN "mac" text;
