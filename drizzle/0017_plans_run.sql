ALTER TABLE "plans" ADD COLUMN "finished_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "error" text;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "cancel_requested_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "reported_at" timestamp with time zone;