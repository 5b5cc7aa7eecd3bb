-- Who caused a request (issue #43): the credential of the input that started the agent's turn
-- (an operator's session, an API token, an MCP client, an alert hook, a schedule) and the outside
-- text the turn had read, kept on every execution and plan the agent asks for in it. A token never
-- approves what its own messages caused: plans carry `requested_with_token` like executions do.
ALTER TABLE "messages" ADD COLUMN "cause" jsonb;--> statement-breakpoint
ALTER TABLE "session_questions" ADD COLUMN "answer_cause" jsonb;--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "cause" jsonb;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "cause" jsonb;--> statement-breakpoint
ALTER TABLE "plans" ADD COLUMN "requested_with_token" uuid;--> statement-breakpoint
ALTER TABLE "plans" ADD CONSTRAINT "plans_requested_with_token_api_tokens_id_fk" FOREIGN KEY ("requested_with_token") REFERENCES "public"."api_tokens"("id") ON DELETE set null ON UPDATE no action;
