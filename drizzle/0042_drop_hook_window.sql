ALTER TABLE "alert_hooks" DROP COLUMN IF EXISTS "window_start";--> statement-breakpoint
ALTER TABLE "alert_hooks" DROP COLUMN IF EXISTS "window_count";