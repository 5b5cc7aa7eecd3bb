-- The words of one message for the session search: its text, reasoning and notes, each tool call's
-- name, input and result (results cut at 20,000 characters). Immutable (the generated column needs it).
CREATE FUNCTION message_search_text(parts jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT coalesce(string_agg(
		CASE
			WHEN p->>'type' IN ('text', 'reasoning') THEN p->>'text'
			WHEN p->>'type' = 'dynamic-tool' OR p->>'type' LIKE 'tool-%' THEN
				concat_ws(' ', coalesce(p->>'toolName', substr(p->>'type', 6)), left((p->'input')::text, 20000),
					left((p->'output')::text, 20000), p->>'errorText')
			WHEN p->>'type' = 'data-note' THEN p->'data'->>'text'
		END, ' '), '')
	FROM jsonb_array_elements(CASE WHEN jsonb_typeof(parts) = 'array' THEN parts ELSE '[]'::jsonb END) p
$$;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "titled_by" text DEFAULT 'first-message' NOT NULL;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "pinned_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "archived_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "deleted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "deleted_by" uuid;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "search" "tsvector" GENERATED ALWAYS AS (to_tsvector('english', message_search_text("parts"))) STORED;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD CONSTRAINT "chat_sessions_deleted_by_operators_id_fk" FOREIGN KEY ("deleted_by") REFERENCES "public"."operators"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "messages_search_idx" ON "messages" USING gin ("search");