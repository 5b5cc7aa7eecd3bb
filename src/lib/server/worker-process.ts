import { boot, type BootOptions } from './boot';
import { ConfigError } from './env';

/**
 * Boots a worker-only process and stops it cleanly on SIGINT/SIGTERM: running jobs finish
 * and their outcomes are recorded before the pool and any embedded Postgres stop.
 */
export async function runWorkerProcess(options: BootOptions): Promise<void> {
	try {
		const runtime = await boot('worker', options);
		const stop = (signal: string) => {
			console.log(`[nomos] ${signal}: stopping the worker after its running jobs…`);
			void runtime.shutdown().then(() => process.exit(0));
		};
		process.once('SIGINT', stop);
		process.once('SIGTERM', stop);
		console.log('[nomos] worker ready');
	} catch (e) {
		if (e instanceof ConfigError) {
			console.error(e.message);
			process.exit(1);
		}
		throw e;
	}
}
