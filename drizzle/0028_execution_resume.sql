ALTER TABLE "executions" ADD COLUMN "resumes" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "resumed_because" text;
