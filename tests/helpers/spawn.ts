import { spawn, spawnSync, type SpawnOptions } from 'node:child_process';

/** Runs a TypeScript file in a child node process (tsx loaded in-process, so signals reach it). */
export function spawnTs(file: string, args: string[] = [], opts: SpawnOptions = {}) {
	return spawn(process.execPath, ['--import', 'tsx', file, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
}

export function spawnTsSync(file: string, args: string[] = [], opts: { env?: NodeJS.ProcessEnv; timeout?: number } = {}) {
	return spawnSync(process.execPath, ['--import', 'tsx', file, ...args], { encoding: 'utf8', ...opts });
}
