ALTER TABLE "alert_hooks" DROP COLUMN "window_start";--> statement-breakpoint
ALTER TABLE "alert_hooks" DROP COLUMN "window_count";