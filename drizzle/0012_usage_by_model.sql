ALTER TABLE "message_facts" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "session_facts" ADD COLUMN "usage_by_model" jsonb DEFAULT '{}'::jsonb NOT NULL;