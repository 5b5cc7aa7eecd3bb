ALTER TABLE "hosts" ADD COLUMN "mutation_key_path" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "gate_state" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "gate_problem" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "gate_checked_at" timestamp with time zone;