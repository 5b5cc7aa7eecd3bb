ALTER TABLE "auth_sessions" ADD COLUMN "verified_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "requested_with_token" uuid;--> statement-breakpoint
ALTER TABLE "executions" ADD CONSTRAINT "executions_requested_with_token_api_tokens_id_fk" FOREIGN KEY ("requested_with_token") REFERENCES "public"."api_tokens"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
-- A session signed in before this version last gave its password when it was created.
UPDATE "auth_sessions" SET "verified_at" = "created_at";--> statement-breakpoint
ALTER TABLE "api_tokens" DROP CONSTRAINT "api_tokens_scope_check";--> statement-breakpoint
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_scope_check" CHECK ("scope" in ('read', 'operate', 'approve'));
--> statement-breakpoint
-- Every token expires now: one made with "never" before this version lives one more year at most.
UPDATE "api_tokens" SET "expires_at" = now() + interval '365 days' WHERE "expires_at" IS NULL AND "revoked_at" IS NULL;
