import type { BlastRadius } from './types/blast-radius';

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** One line: "running · 3 services · 2 notes · 1 CT references it". */
export function blastRadiusSummary(b: BlastRadius): string {
	const parts: string[] = [];
	if (!b.known) parts.push(b.kind === 'host' ? 'host not in the inventory' : 'not in the inventory');
	else if (b.status) parts.push(b.status);
	if (b.kind === 'host') parts.push(`${plural(b.containersTotal, 'CT')} on it (${b.containersRunning} running)`);
	if (b.services.length) parts.push(plural(b.services.length, 'service'));
	if (b.notesTotal) parts.push(plural(b.notesTotal, 'note'));
	if (b.referencedByTotal) parts.push(`${plural(b.referencedByTotal, 'CT')} ${b.referencedByTotal === 1 ? 'references' : 'reference'} it`);
	if (parts.length === 1 && b.known) parts.push('nothing known depends on it');
	return parts.join(' · ');
}
