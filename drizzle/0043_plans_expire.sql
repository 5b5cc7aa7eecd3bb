-- A proposed plan waits for approval NOMOS_APPROVAL_TTL_H, as an execution request does (set by
-- insertPlan; the sweep then marks it `expired`). Plans proposed before this waited forever: they
-- get the default wait (24 h) from when they were proposed, so one proposed minutes ago stays
-- approvable and one proposed days ago expires at the next sweep.
UPDATE "plans" SET "expires_at" = "created_at" + interval '24 hours' WHERE "status" = 'proposed' AND "expires_at" IS NULL;
