ALTER TABLE "hosts" ADD COLUMN "last_answer_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "unanswered_since" timestamp with time zone;--> statement-breakpoint
UPDATE "hosts" SET "last_answer_at" = "last_checked_at" WHERE "last_error" IS NULL AND "last_checked_at" IS NOT NULL;
