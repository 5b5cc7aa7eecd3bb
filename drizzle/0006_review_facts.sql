-- The session review's facts (src/lib/server/db/queries/review-facts.ts), written with each
-- message from now on. Rows that exist already get theirs from the rebuild job
-- (review__rebuild_facts), queued because the `review.facts` setting does not hold this code's
-- version yet; until then the review reads every message's parts as before.
CREATE TABLE "message_facts" (
	"message_id" uuid PRIMARY KEY NOT NULL,
	"session_id" uuid NOT NULL,
	"seq" bigint NOT NULL,
	"role" text NOT NULL,
	"status" text NOT NULL,
	"origin" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"calls" integer NOT NULL,
	"tool_counts" integer[] NOT NULL,
	"fail_counts" integer[],
	"cap_errs" integer NOT NULL,
	"retries" integer NOT NULL,
	"tbits" integer NOT NULL,
	"hex_runs" text,
	"summary" text NOT NULL,
	"text" text,
	"other_tools" text,
	"lxc_refs" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_facts" (
	"session_id" uuid PRIMARY KEY NOT NULL,
	"messages" integer NOT NULL,
	"user_messages" integer NOT NULL,
	"assistant_messages" integer NOT NULL,
	"system_messages" integer NOT NULL,
	"tool_calls" integer NOT NULL,
	"first_at" timestamp with time zone NOT NULL,
	"last_at" timestamp with time zone NOT NULL,
	"n1_max" integer NOT NULL,
	"nudges" integer NOT NULL,
	"blanks" integer NOT NULL,
	"retried" integer NOT NULL,
	"notext" integer NOT NULL,
	"last_ok" boolean NOT NULL,
	"tool_counts" integer[] NOT NULL,
	"fail_counts" integer[],
	"cap_at" timestamp with time zone[] NOT NULL,
	"mention_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "message_facts" ADD CONSTRAINT "message_facts_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_facts" ADD CONSTRAINT "session_facts_session_id_chat_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "message_facts_session_idx" ON "message_facts" USING btree ("session_id","seq");--> statement-breakpoint
CREATE INDEX "message_facts_hex_idx" ON "message_facts" USING btree ("session_id") WHERE "message_facts"."hex_runs" is not null;