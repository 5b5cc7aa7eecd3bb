import { z } from 'zod';

/** What a backup archive holds; `manifest.json`, the archive's first entry. */
export const manifestSchema = z.object({
	format: z.literal('nomos-backup'),
	version: z.literal(1),
	createdAt: z.string(),
	/** Where the rows came from: the embedded server or DATABASE_URL. */
	source: z.enum(['embedded', 'external']),
	/** drizzle's applied migrations at backup time (journal time as text, hash). */
	migrations: z.array(z.object({ hash: z.string(), createdAt: z.string() })),
	tables: z.array(z.object({ name: z.string(), columns: z.array(z.string()), rows: z.number().int().min(0), entry: z.string() })),
	sequences: z.array(z.object({ name: z.string(), value: z.string() })),
	/** SSH private keys named by hosts.key_path, restored to the same path. */
	keys: z.array(z.object({ path: z.string(), entry: z.string().nullable(), missing: z.string().optional() })),
	/** Other files under NOMOS_DATA_DIR (not the Postgres cluster), restored under the new one. */
	dataFiles: z.array(z.object({ path: z.string(), entry: z.string() }))
});
export type Manifest = z.infer<typeof manifestSchema>;

export const MANIFEST_ENTRY = 'manifest.json';
