CREATE TABLE "worker_processes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"hostname" text NOT NULL,
	"pid" integer NOT NULL,
	"worker_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"beat_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "cancel_requested_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "leftovers" text;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
-- Plans approved before approvals of plans expired: they expire a default TTL after their decision.
UPDATE "plans" SET "expires_at" = "decided_at" + interval '24 hours' WHERE "status" = 'approved' AND "expires_at" IS NULL;
