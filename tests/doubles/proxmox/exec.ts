// Runs one SSH exec request through `bash -c` in its own process group, wired to the channel, as
// sshd does without a pty: a signal request reaches the top process only, and a closed channel or
// dropped connection stops nothing (the command's stdin ends and its output goes nowhere).
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import type { ServerChannel } from 'ssh2';

/** Signal names the SSH protocol (and ssh2) can carry in exit-signal. */
const SSH_SIGNALS = new Set(['ABRT', 'ALRM', 'FPE', 'HUP', 'ILL', 'INT', 'QUIT', 'SEGV', 'TERM', 'USR1', 'USR2', 'KILL', 'PIPE']);

export interface RunningCommand {
	readonly pid: number | undefined;
	/** Signals the top process only, as sshd does for a signal request (no-op once finished). */
	kill(signal: NodeJS.Signals): void;
	/** Signals the process group bash started in (not groups its commands made with setsid). */
	killGroup(signal: NodeJS.Signals): void;
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

	const signal = (pid: number, sig: NodeJS.Signals): void => {
		if (finished) return;
		try {
			process.kill(pid, sig);
		} catch {
			// already gone
		}
	};

	channel.on('data', (d: Buffer) => child.stdin.write(d));
	channel.on('end', () => child.stdin.end());
	child.stdin.on('error', () => {}); // EPIPE when the command doesn't read stdin
	child.stdout.pipe(channel, { end: false });
	child.stderr.pipe(channel.stderr, { end: false });

	// The client went away: sshd closes the command's pipes but signals nothing. Keep reading
	// (and dropping) its output, so a command that still writes runs on rather than dying of EPIPE.
	channel.on('close', () => {
		channelOpen = false;
		child.stdin.end();
		child.stdout.unpipe();
		child.stderr.unpipe();
		child.stdout.resume();
		child.stderr.resume();
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

	return {
		pid: child.pid,
		kill: (sig) => child.pid !== undefined && signal(child.pid, sig),
		killGroup: (sig) => child.pid !== undefined && signal(-child.pid, sig),
		done
	};
}

/**
 * SIGKILLs every process started for the double with this state dir, whatever group or session
 * it moved to (the environment it inherited names the state dir): what a host's power-off does.
 */
export async function killEverythingOf(stateDir: string): Promise<void> {
	const mark = Buffer.from(`PVE_DOUBLE_STATE=${stateDir}\0`);
	for (const entry of await readdir('/proc')) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
		const environ = await readFile(`/proc/${entry}/environ`).catch(() => null);
		if (!environ?.includes(mark)) continue;
		try {
			process.kill(Number(entry), 'SIGKILL');
		} catch {
			// gone meanwhile
		}
	}
}
