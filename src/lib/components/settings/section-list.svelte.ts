import { errorMessage } from '$lib/trpc';

export type SectionStatus = { ok: boolean; text: string } | null;

/**
 * What the settings sections with a list share: the rows, one status line and a busy flag.
 * `load()` refreshes the rows; `run()` does one action, says how it went and reloads.
 */
export class SectionList<T> {
	rows = $state<T[]>([]);
	status = $state<SectionStatus>(null);
	busy = $state(false);
	readonly #fetch: () => Promise<T[]>;

	constructor(fetch: () => Promise<T[]>) {
		this.#fetch = fetch;
	}

	async load(): Promise<void> {
		try {
			this.rows = await this.#fetch();
		} catch (err) {
			this.status = { ok: false, text: errorMessage(err) };
		}
	}

	async run(what: () => Promise<unknown>, ok?: string): Promise<void> {
		this.busy = true;
		this.status = null;
		try {
			await what();
			if (ok) this.status = { ok: true, text: ok };
			await this.load();
		} catch (err) {
			this.status = { ok: false, text: errorMessage(err) };
		} finally {
			this.busy = false;
		}
	}
}
