CREATE TABLE "alert_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"hook_id" uuid NOT NULL,
	"body" text NOT NULL,
	"body_sha" text NOT NULL,
	"duplicate_of" uuid,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"processed_at" timestamp with time zone,
	"outcome" jsonb
);
--> statement-breakpoint
CREATE TABLE "incidents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"node" text,
	"guest" text,
	"kind" text NOT NULL,
	"group_key" text,
	"status" text DEFAULT 'open' NOT NULL,
	"title" text NOT NULL,
	"session_id" uuid,
	"alert_count" integer DEFAULT 1 NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "alert_groups" ADD COLUMN "incident_id" uuid;--> statement-breakpoint
ALTER TABLE "alert_deliveries" ADD CONSTRAINT "alert_deliveries_hook_id_alert_hooks_id_fk" FOREIGN KEY ("hook_id") REFERENCES "public"."alert_hooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "incidents" ADD CONSTRAINT "incidents_session_id_chat_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alert_deliveries_hook_received_idx" ON "alert_deliveries" USING btree ("hook_id","received_at");--> statement-breakpoint
CREATE INDEX "alert_deliveries_unprocessed_idx" ON "alert_deliveries" USING btree ("received_at") WHERE processed_at is null;--> statement-breakpoint
CREATE INDEX "incidents_open_key_idx" ON "incidents" USING btree ("status","key");--> statement-breakpoint
CREATE INDEX "incidents_session_idx" ON "incidents" USING btree ("session_id");--> statement-breakpoint
ALTER TABLE "alert_groups" ADD CONSTRAINT "alert_groups_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE set null ON UPDATE no action;