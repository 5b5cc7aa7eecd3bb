-- A few samples of each storage's use per host (issue #45): the inventory sync adds one an hour at most
-- and keeps the last few, so get_state_snapshot can say a trend ("+3.1 GiB/day").
CREATE TABLE "storage_samples" (
	"host_name" text NOT NULL,
	"storage" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"used" bigint NOT NULL,
	"total" bigint NOT NULL,
	CONSTRAINT "storage_samples_host_name_storage_at_pk" PRIMARY KEY("host_name","storage","at")
);
