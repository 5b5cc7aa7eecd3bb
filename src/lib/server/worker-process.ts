import { boot, type BootOptions } from './boot';
import { ConfigError } from './env';
import { logger } from './log';

const log = logger('worker');

/**
 * Boots a worker-only process and stops it cleanly on SIGINT/SIGTERM: running jobs finish
 * and their outcomes are recorded before the pool and any embedded Postgres stop.
 */
export async function runWorkerProcess(options: BootOptions): Promise<void> {
	try {
		const runtime = await boot('worker', options);
		const stop = (signal: string) => {
			log.info(`${signal}: stopping the worker after its running jobs…`);
			void runtime.shutdown().then(() => process.exit(0));
		};
		process.once('SIGINT', stop);
		process.once('SIGTERM', stop);
		log.info('worker ready');
	} catch (e) {
		if (e instanceof ConfigError) {
			// One plain line on stderr, apart from the log (README: "one line naming the variable").
			console.error(e.message);
			process.exit(1);
		}
		throw e;
	}
}
