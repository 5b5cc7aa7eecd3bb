CREATE TABLE "entity_gone" (
	"kind" text NOT NULL,
	"external_id" text NOT NULL,
	"gone_at" timestamp with time zone NOT NULL,
	CONSTRAINT "entity_gone_kind_external_id_pk" PRIMARY KEY("kind","external_id")
);
