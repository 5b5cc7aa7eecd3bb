// Container templates: the list refreshed, one downloaded.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def } from './def';

export const TEMPLATES = {
	pveam_update: def({
		classification: 'config_mutation',
		description: "refresh the host's list of downloadable container templates (pveam update)",
		scope: 'host',
		params: ACTION_PARAMS.pveam_update,
		steps: () => [{ label: 'pveam update', argv: ['pveam', 'update'], timeoutMs: 5 * MIN }],
		summary: () => 'template list updated'
	}),
	pveam_download: def({
		classification: 'config_mutation',
		description: 'download a container template to a storage (pveam download), verified in pveam list afterwards',
		scope: 'host',
		params: ACTION_PARAMS.pveam_download,
		steps: (p) => [
			{ label: `pveam download ${p.template}`, argv: ['pveam', 'download', p.storage, p.template], timeoutMs: 30 * MIN },
			{
				label: `verify: ${p.storage}:vztmpl/${p.template} in pveam list`,
				argv: ['pveam', 'list', p.storage],
				timeoutMs: MIN,
				verify: {
					expect: `${p.storage}:vztmpl/${p.template}`,
					failure: `pveam download reported success but ${p.storage}:vztmpl/${p.template} is not in pveam list ${p.storage}`
				}
			}
		],
		summary: (p) => `template ${p.storage}:vztmpl/${p.template} downloaded (use it as pct_create's template)`
	})
};
