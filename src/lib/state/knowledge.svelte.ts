import { getContext, setContext } from 'svelte';
import { invalidateAll } from '$app/navigation';
import { errorMessage, trpc } from '$lib/trpc';

type Api = ReturnType<typeof trpc>['knowledge'];
/** A row of the notes list: a note without its body, with a short preview. */
export type NoteSummary = Awaited<ReturnType<Api['list']['query']>>[number];
/** A search hit (a note or an inventory entity); matched words in its snippet are wrapped in « ». */
export type SearchHit = Awaited<ReturnType<Api['search']['query']>>[number];
type Editor = { mode: 'create' } | { mode: 'edit'; id: string };

/** The largest body the server accepts, in UTF-8 bytes (the knowledge router's limit). */
export const MAX_BODY_BYTES = 100 * 1024;

const KEY = Symbol('knowledge');

/**
 * The knowledge page: one note editor at a time, the bodies of opened rows, and the search box.
 * After a save or a delete the page's notes are loaded again and an open search runs again, so
 * both show the change.
 */
export class KnowledgeState {
	title = $state('');
	body = $state('');
	query = $state('');
	/** The note whose delete waits for a confirmation. */
	confirming = $state<string | null>(null);
	readonly bodyBytes = $derived(new TextEncoder().encode(this.body).length);

	#editor = $state<Editor | null>(null);
	#formError = $state<string | null>(null);
	#saving = $state(false);
	#open = $state<Record<string, boolean>>({});
	#bodies = $state<Record<string, string>>({});
	#rowErrors = $state<Record<string, string>>({});
	#results = $state<SearchHit[] | null>(null);
	#searchError = $state<string | null>(null);
	#searching = $state(false);
	#timer: ReturnType<typeof setTimeout> | undefined;
	#seq = 0;

	get creating(): boolean {
		return this.#editor?.mode === 'create';
	}
	get formError(): string | null {
		return this.#formError;
	}
	get saving(): boolean {
		return this.#saving;
	}
	get results(): SearchHit[] | null {
		return this.#results;
	}
	get searchError(): string | null {
		return this.#searchError;
	}
	get searching(): boolean {
		return this.#searching;
	}

	editing(id: string): boolean {
		return this.#editor?.mode === 'edit' && this.#editor.id === id;
	}
	isOpen(id: string): boolean {
		return !!this.#open[id];
	}
	/** The note's body once loaded, else undefined. */
	bodyOf(id: string): string | undefined {
		return this.#bodies[id];
	}
	errorOf(id: string): string {
		return this.#rowErrors[id] ?? '';
	}

	openCreate(): void {
		this.#editor = { mode: 'create' };
		this.title = '';
		this.body = '';
		this.#formError = null;
	}

	async openEdit(id: string): Promise<void> {
		this.#rowErrors[id] = '';
		try {
			const note = await trpc().knowledge.get.query({ id });
			this.#bodies[id] = note.body;
			this.#editor = { mode: 'edit', id };
			this.title = note.title;
			this.body = note.body;
			this.#formError = null;
		} catch (e) {
			this.#rowErrors[id] = errorMessage(e);
		}
	}

	closeEditor(): void {
		this.#editor = null;
	}

	async save(): Promise<void> {
		const editor = this.#editor;
		if (!editor || this.#saving) return;
		this.#saving = true;
		this.#formError = null;
		try {
			const input = { title: this.title, body: this.body };
			if (editor.mode === 'create') {
				const note = await trpc().knowledge.create.mutate(input);
				this.#bodies[note.id] = note.body;
				this.#open[note.id] = true;
			} else {
				const note = await trpc().knowledge.update.mutate({ id: editor.id, note: input });
				this.#bodies[note.id] = note.body;
			}
			this.#editor = null;
			await this.#reload();
		} catch (e) {
			this.#formError = errorMessage(e);
		} finally {
			this.#saving = false;
		}
	}

	/** Opens or closes a row (`force` opens or closes it whatever it was), loading its body once. */
	async toggle(id: string, force?: boolean): Promise<void> {
		this.#open[id] = force ?? !this.#open[id];
		if (this.#open[id] && this.#bodies[id] === undefined) {
			try {
				this.#bodies[id] = (await trpc().knowledge.get.query({ id })).body;
			} catch (e) {
				this.#rowErrors[id] = errorMessage(e);
			}
		}
	}

	async remove(id: string): Promise<void> {
		this.#rowErrors[id] = '';
		try {
			await trpc().knowledge.remove.mutate({ id });
			this.confirming = null;
			delete this.#bodies[id];
			delete this.#open[id];
			await this.#reload();
		} catch (e) {
			this.#rowErrors[id] = errorMessage(e);
		}
	}

	/** Searches now; only the latest search's answer is shown. An empty query clears the results. */
	async search(): Promise<void> {
		clearTimeout(this.#timer);
		const q = this.query.trim();
		const mine = ++this.#seq;
		if (!q) {
			this.#results = null;
			this.#searchError = null;
			return;
		}
		this.#searching = true;
		try {
			const r = await trpc().knowledge.search.query({ query: q });
			if (mine === this.#seq) {
				this.#results = r;
				this.#searchError = null;
			}
		} catch (e) {
			if (mine === this.#seq) this.#searchError = errorMessage(e);
		} finally {
			if (mine === this.#seq) this.#searching = false;
		}
	}

	/** Searches once typing pauses. */
	searchSoon(): void {
		clearTimeout(this.#timer);
		this.#timer = setTimeout(() => void this.search(), 250);
	}

	clearSearch(): void {
		this.query = '';
		void this.search();
	}

	async #reload(): Promise<void> {
		await invalidateAll();
		if (this.query.trim()) await this.search();
	}
}

export function setKnowledgeState(k: KnowledgeState): KnowledgeState {
	return setContext(KEY, k);
}

export function knowledgeState(): KnowledgeState {
	return getContext<KnowledgeState>(KEY);
}
