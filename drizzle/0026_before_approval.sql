-- What was checked on the host when the execution was requested (executions/before-approval.ts):
-- {"outcome": "cannot_run" | "unknown", "why": "...", "checkedAt": "..."}; null when nothing
-- needed checking or the check passed. `cannot_run` is never approved (setDecision).
ALTER TABLE "executions" ADD COLUMN "before_approval" jsonb;
