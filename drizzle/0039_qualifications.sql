CREATE TABLE "qualifications" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"model" text NOT NULL,
	"base_url" text,
	"ran_at" timestamp with time zone DEFAULT now() NOT NULL,
	"verdict" text NOT NULL,
	"runs" integer NOT NULL,
	"figures" jsonb NOT NULL,
	"scenarios" jsonb NOT NULL
);
--> statement-breakpoint
CREATE INDEX "qualifications_model_idx" ON "qualifications" USING btree ("model","ran_at");