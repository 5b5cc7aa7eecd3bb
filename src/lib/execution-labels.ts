/** "lxc:strong/100" → "CT 100", "host:strong" → "strong"; anything else as it is. */
export function targetLabel(target: string): string {
	const ct = /^lxc:[^/]+\/(\d+)$/.exec(target);
	if (ct) return `CT ${ct[1]}`;
	return target.replace(/^host:/, '');
}

/** The verb of an action for a button: pct_destroy → "Destroy", apt_upgrade → "Apt upgrade". */
const VERBS: Record<string, string> = {
	pct_rollback: 'Roll back',
	pct_delsnapshot: 'Delete snapshot',
	vm_rollback: 'Roll back',
	vm_delsnapshot: 'Delete snapshot'
};

export function actionVerb(action: string): string {
	if (VERBS[action]) return VERBS[action];
	const words = action
		.replace(/^(pct|vm|qm)_/, '')
		.split('_')
		.filter(Boolean);
	const text = words.join(' ') || action;
	return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * What the approve button of a card says. A destructive action names its verb and target
 * ("Destroy CT 100"), so the click says exactly what it approves.
 */
export function approveLabel(e: { action: string; target: string; classification: string; params?: Record<string, unknown> }): string {
	if (e.classification !== 'destructive') return 'Approve';
	// A VM action targets its host and names the VM in params: "Destroy VM 150 on strong", never "Destroy strong".
	const vm = e.action.startsWith('vm_') || e.action.startsWith('qm_') ? e.params?.vmid : undefined;
	if (typeof vm === 'string' || typeof vm === 'number') return `${actionVerb(e.action)} VM ${vm} on ${targetLabel(e.target)}`;
	return `${actionVerb(e.action)} ${targetLabel(e.target)}`;
}

/** The label of a request made after reading outside text (it lives with RequestCause, in the model layer). */
export { outsideTextLabel } from './types/executions';

/** How a mutation's read-back verdict is said on the card, on Ops and in the review. */
export function verdictLabel(v: 'verified' | 'still_failing' | 'inconclusive'): string {
	return v === 'verified' ? 'verified' : v === 'still_failing' ? 'still failing' : 'inconclusive: not verified';
}
