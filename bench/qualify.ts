// `npm run qualify -- --model <name> [--runs N] [--base-url URL] [--only id,id] [--no-save] [--json] [--trace]`
// (`--help` lists the scenarios)
//
// Qualifies a model for Nomos (issue #49, docs/qualify.md): runs the suite under bench/qualify/
// against the model server the app is configured with (OPENAI_BASE_URL and OPENAI_API_KEY from the
// environment or .env; --base-url overrides the URL), each scenario N times in a sandbox of its own
// (a child process: its own embedded Postgres, the SSH node double, a worker), prints per scenario
// and overall the pass rate with its 95 % Wilson lower bound, unsafe actions, operator messages and
// approvals, model requests, prompt tokens and time, and the verdict. The result is stored in the
// app's database (DATABASE_URL, else the embedded Postgres in NOMOS_DATA_DIR) for Settings → Model.
// Exits 0 when qualified, 1 when not, 2 on a usage error.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openScriptDb } from '../scripts/script-db';
import { ROOT } from './harness';
import { formatReport } from './qualify/report';
import type { SuiteResult } from './qualify/suite';

const { insertQualification } = await import('../src/lib/server/db/queries/qualifications');
const { sql } = await import('../src/lib/server/db/index');

const USAGE = 'usage: npm run qualify -- --model <name> [--runs N] [--base-url URL] [--only id,id] [--no-save] [--json] [--trace]';
const usage = (why: string) => {
	console.error(`${why}\n${USAGE}`);
	process.exit(2);
};
const args = (() => {
	try {
		return parseArgs({
			options: {
				model: { type: 'string' },
				runs: { type: 'string', default: '3' },
				'base-url': { type: 'string' },
				only: { type: 'string' },
				'no-save': { type: 'boolean', default: false },
				json: { type: 'boolean', default: false },
				trace: { type: 'boolean', default: false },
				help: { type: 'boolean', short: 'h', default: false }
			}
		});
	} catch (e) {
		return usage((e as Error).message);
	}
})();
const o = args.values;
if (o.help) {
	const { SCENARIOS } = await import('./qualify/scenarios/index');
	const lines = SCENARIOS.map((s) => `  ${s.id.padEnd(22)} ${s.group === 'core' ? '' : `(${s.group}) `}${s.title}`);
	console.log(`${USAGE}\n\nscenarios (--only takes their ids; docs/qualify.md says what each judges):\n${lines.join('\n')}`);
	process.exit(0);
}
const model = o.model ?? process.env.NOMOS_MODEL;
const baseUrl = o['base-url'] ?? process.env.OPENAI_BASE_URL;
const runs = Number(o.runs);
if (!model) usage('--model is required (or set NOMOS_MODEL)');
if (!baseUrl) usage('no model server: pass --base-url or set OPENAI_BASE_URL');
if (!Number.isInteger(runs) || runs < 1 || runs > 100) usage(`--runs must be an integer from 1 to 100, got ${o.runs}`);
try {
	new URL(baseUrl!);
} catch {
	usage(`--base-url is not a URL: ${baseUrl}`);
}

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-qualify-out-'));
const out = path.join(tmp, 'result.json');
// The sandbox gets the model's settings and none of the app's database or hosts.
const { DATABASE_URL: _db, NOMOS_OWNER_DATABASE_URL: _owner, NOMOS_HOSTS: _hosts, NOMOS_DATA_DIR: _dir, NOMOS_MODELS: _models, ...inherited } = process.env;
const code = await new Promise<number>((resolve) => {
	const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/qualify/sandbox.ts')], {
		cwd: ROOT,
		stdio: ['ignore', o.json ? 'ignore' : 'inherit', 'inherit'],
		env: {
			...inherited,
			OPENAI_BASE_URL: baseUrl,
			NOMOS_MODEL: model,
			QUALIFY_OUT: out,
			QUALIFY_RUNS: String(runs),
			QUALIFY_ONLY: o.only ?? '',
			QUALIFY_TRACE: o.trace ? '1' : ''
		}
	});
	const forward = (sig: NodeJS.Signals) => child.kill(sig);
	process.on('SIGINT', forward).on('SIGTERM', forward);
	child.once('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
});
if (code !== 0) {
	console.error(`qualify: the sandbox failed (exit ${code})`);
	process.exit(1);
}
const result = JSON.parse(await fs.readFile(out, 'utf8')) as SuiteResult;
await fs.rm(tmp, { recursive: true, force: true });
if (o.json) console.log(JSON.stringify({ model, baseUrl, runs, ...result }, null, 2));
else console.log(`\n${formatReport(model!, result)}`);

if (!o['no-save']) {
	const db = await openScriptDb();
	try {
		const row = await insertQualification(sql(), {
			model: model!,
			baseUrl: baseUrl!,
			verdict: result.verdict,
			runs,
			figures: result.figures,
			scenarios: result.scenarios
		});
		if (!o.json) console.log(`saved as qualification ${row.id} (${db.where}); Settings → Model shows it`);
	} finally {
		await db.close();
	}
}
process.exit(result.verdict === 'qualified' ? 0 : 1);
