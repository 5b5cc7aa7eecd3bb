/**
 * A retry (or model-loading) note as shown: "…" while it is still under way (the reply is streaming and
 * nothing came after the note), without it once settled (the answer, another note or the
 * reply's end came after it). The stored note keeps its text.
 */
export function retryNoteText(text: string, pending: boolean): string {
	return pending ? text : text.replace(/\s*…$/, '');
}

/** Whether the note at `index` of a reply's segments is a retry still under way. */
export function retryPending(segments: ReadonlyArray<{ kind: string }>, index: number, live: boolean): boolean {
	return live && index === segments.length - 1;
}
