CREATE TABLE "alert_groups" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"hook_id" uuid NOT NULL,
	"group_key" text NOT NULL,
	"status" text NOT NULL,
	"title" text NOT NULL,
	"severity" text NOT NULL,
	"session_id" uuid,
	"deliveries" integer DEFAULT 1 NOT NULL,
	"firings" integer DEFAULT 1 NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"muted_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alert_hooks" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"secret" text NOT NULL,
	"muted_until" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"last_received_at" timestamp with time zone,
	"window_start" timestamp with time zone,
	"window_count" integer DEFAULT 0 NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD COLUMN "started_by_hook" uuid;--> statement-breakpoint
ALTER TABLE "alert_groups" ADD CONSTRAINT "alert_groups_hook_id_alert_hooks_id_fk" FOREIGN KEY ("hook_id") REFERENCES "public"."alert_hooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_groups" ADD CONSTRAINT "alert_groups_session_id_chat_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_hooks" ADD CONSTRAINT "alert_hooks_created_by_operators_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."operators"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "alert_groups_hook_key_idx" ON "alert_groups" USING btree ("hook_id","group_key");--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD CONSTRAINT "chat_sessions_started_by_hook_alert_hooks_id_fk" FOREIGN KEY ("started_by_hook") REFERENCES "public"."alert_hooks"("id") ON DELETE set null ON UPDATE no action;