import { configuredModels } from '../agent/provider';
import { sql } from '../db/index';
import { getQualification, latestQualifications } from '../db/queries/qualifications';
import type { ModelQualification } from '../../schemas/qualification';

/** Each configured model (NOMOS_MODEL first, then NOMOS_MODELS) with its newest qualification. */
export async function modelQualifications(): Promise<ModelQualification[]> {
	const models = configuredModels();
	const rows = await latestQualifications(sql(), models);
	return models.map((model) => {
		const row = rows.find((r) => r.model === model);
		if (!row) return { model, last: null };
		const { scenarios: _scenarios, ...last } = row;
		return { model, last };
	});
}

/** A qualification as a JSON download (its figures and every scenario's), or null. */
export async function qualificationExport(id: string): Promise<{ filename: string; body: string } | null> {
	const row = await getQualification(sql(), id);
	if (!row) return null;
	const day = row.ranAt.slice(0, 10);
	const safe = row.model.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 60);
	return { filename: `nomos-qualification-${safe}-${day}.json`, body: JSON.stringify({ ...row, exportedAt: new Date().toISOString() }, null, 2) };
}
