ALTER TABLE "executions" ADD COLUMN "alert_resolved_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "alert_resolved_at" timestamp with time zone;
