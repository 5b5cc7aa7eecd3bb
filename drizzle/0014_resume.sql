ALTER TABLE "executions" ADD COLUMN "runner" uuid;--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "call_key" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "runner" uuid;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "call_key" text;--> statement-breakpoint
ALTER TABLE "session_questions" ADD COLUMN "call_key" text;--> statement-breakpoint
ALTER TABLE "worker_processes" ADD COLUMN "lock_id" serial NOT NULL;--> statement-breakpoint
CREATE INDEX "messages_streaming_idx" ON "messages" USING btree ("runner") WHERE status = 'streaming';--> statement-breakpoint
ALTER TABLE "executions" ADD CONSTRAINT "executions_call_key_unique" UNIQUE("call_key");--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_call_key_unique" UNIQUE("call_key");--> statement-breakpoint
ALTER TABLE "session_questions" ADD CONSTRAINT "session_questions_call_key_unique" UNIQUE("call_key");