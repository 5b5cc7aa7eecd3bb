CREATE TABLE "history_summaries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"session_id" uuid NOT NULL,
	"through_message_id" uuid NOT NULL,
	"through_seq" bigint NOT NULL,
	"messages" integer NOT NULL,
	"text" text NOT NULL,
	"tokens" integer NOT NULL,
	"folded_tokens" integer NOT NULL,
	"input_tokens" integer DEFAULT 0 NOT NULL,
	"output_tokens" integer DEFAULT 0 NOT NULL,
	"model" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "history_summaries" ADD CONSTRAINT "history_summaries_session_id_chat_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "history_summaries" ADD CONSTRAINT "history_summaries_through_message_id_messages_id_fk" FOREIGN KEY ("through_message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "history_summaries_session_through_idx" ON "history_summaries" USING btree ("session_id","through_seq");