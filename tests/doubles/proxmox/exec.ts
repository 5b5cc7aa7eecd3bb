// Runs one SSH exec request through `bash -c` in its own process group, wired to the channel.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import type { ServerChannel } from 'ssh2';

/** Signal names the SSH protocol (and ssh2) can carry in exit-signal. */
const SSH_SIGNALS = new Set(['ABRT', 'ALRM', 'FPE', 'HUP', 'ILL', 'INT', 'QUIT', 'SEGV', 'TERM', 'USR1', 'USR2', 'KILL', 'PIPE']);
const KILL_GRACE_MS = 1000;

export interface RunningCommand {
	readonly pid: number | undefined;
	/** Signal the whole process group (no-op once the command has finished). */
	kill(signal: NodeJS.Signals): void;
	/** Resolves once the command has exited and its stdio closed. */
	readonly done: Promise<void>;
}

/** Resolves after everything queued on `w` has been handed to the SSH layer (ssh2 stalls writes on a closed channel, so race with close). */
function drained(w: Writable, channel: ServerChannel): Promise<void> {
	return new Promise((resolve) => {
		channel.once('close', resolve);
		w.write(Buffer.alloc(0), () => resolve());
	});
}

export function runOverChannel(channel: ServerChannel, command: string, env: NodeJS.ProcessEnv): RunningCommand {
	const child = spawn('bash', ['-c', command], { env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
	let finished = false;
	let channelOpen = true;

	const kill = (signal: NodeJS.Signals): void => {
		if (finished || child.pid === undefined) return;
		try {
			process.kill(-child.pid, signal);
		} catch {
			// group already gone
		}
	};

	channel.on('data', (d: Buffer) => child.stdin.write(d));
	channel.on('end', () => child.stdin.end());
	child.stdin.on('error', () => {}); // EPIPE when the command doesn't read stdin
	child.stdout.pipe(channel, { end: false });
	child.stderr.pipe(channel.stderr, { end: false });

	// Client went away (closed the channel or the connection): really stop the remote command.
	channel.on('close', () => {
		channelOpen = false;
		kill('SIGTERM');
		setTimeout(() => kill('SIGKILL'), KILL_GRACE_MS).unref();
	});

	const done = new Promise<void>((resolve) => {
		const finish = async (code: number, signal: NodeJS.Signals | null, message?: string): Promise<void> => {
			if (finished) return;
			finished = true;
			if (channelOpen) {
				if (message) channel.stderr.write(message);
				await Promise.all([drained(channel, channel), drained(channel.stderr, channel)]);
				const name = signal?.replace(/^SIG/, '');
				if (name && SSH_SIGNALS.has(name)) channel.exit(name, false, '');
				else channel.exit(code);
				channel.end();
			}
			resolve();
		};
		child.on('error', (e) => void finish(127, null, `bash: ${e.message}\n`));
		child.on('close', (code, signal) => {
			void finish(code ?? 128 + (signal ? constants.signals[signal] : 0), signal);
		});
	});

	return { pid: child.pid, kill, done };
}
