/**
 * The registered worker process this process is (worker_processes.id), or null when it runs no
 * worker. Turns and executions started here record it as their runner, so that when this
 * process dies another one can tell which work was its (see recovery/dead-processes.ts).
 */
const g = globalThis as unknown as { __nomosProcessId?: string | null };

export function setCurrentProcess(id: string | null): void {
	g.__nomosProcessId = id;
}

export function currentProcess(): string | null {
	return g.__nomosProcessId ?? null;
}
