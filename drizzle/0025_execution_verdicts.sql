ALTER TABLE "executions" ADD COLUMN "verdict" text;--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "verdict_detail" text;--> statement-breakpoint
ALTER TABLE "executions" ADD CONSTRAINT "executions_verdict_check" CHECK ("verdict" IN ('verified', 'still_failing', 'inconclusive'));--> statement-breakpoint
CREATE INDEX "executions_inconclusive_idx" ON "executions" ("finished_at") WHERE "verdict" = 'inconclusive';
