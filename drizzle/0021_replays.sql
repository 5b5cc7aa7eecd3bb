CREATE TABLE "replay_cases" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"original_session_id" uuid,
	"replay_session_id" uuid,
	"inputs" jsonb NOT NULL,
	"expected" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "replay_cases_name_unique" UNIQUE("name")
);
--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "replay_of" uuid;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "replay" jsonb;--> statement-breakpoint
ALTER TABLE "replay_cases" ADD CONSTRAINT "replay_cases_original_session_id_chat_sessions_id_fk" FOREIGN KEY ("original_session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "replay_cases" ADD CONSTRAINT "replay_cases_replay_session_id_chat_sessions_id_fk" FOREIGN KEY ("replay_session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD CONSTRAINT "chat_sessions_replay_of_chat_sessions_id_fk" FOREIGN KEY ("replay_of") REFERENCES "public"."chat_sessions"("id") ON DELETE set null ON UPDATE no action;