// Plain JavaScript: server.js answers /healthz with it before (and without) the app's bundle.

const started = Date.now();

/**
 * /healthz: the process is up and answering. No database, no boot: a supervisor restarts a
 * process that stops answering this; whether it can do its work is /readyz's question.
 * @returns {{ status: 'ok'; pid: number; uptimeS: number }}
 */
export function liveness() {
	return { status: 'ok', pid: process.pid, uptimeS: Math.round((Date.now() - started) / 1000) };
}
