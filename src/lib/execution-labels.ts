/** "lxc:strong/100" → "CT 100", "host:strong" → "strong"; anything else as it is. */
export function targetLabel(target: string): string {
	const ct = /^lxc:[^/]+\/(\d+)$/.exec(target);
	if (ct) return `CT ${ct[1]}`;
	return target.replace(/^host:/, '');
}

/** The verb of an action for a button: pct_destroy → "Destroy", apt_upgrade → "Apt upgrade". */
const VERBS: Record<string, string> = { pct_rollback: 'Roll back', pct_delsnapshot: 'Delete snapshot' };

export function actionVerb(action: string): string {
	if (VERBS[action]) return VERBS[action];
	const words = action.replace(/^pct_/, '').split('_').filter(Boolean);
	const text = words.join(' ') || action;
	return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * What the approve button of a card says. A destructive action names its verb and target
 * ("Destroy CT 100"), so the click says exactly what it approves.
 */
export function approveLabel(e: { action: string; target: string; classification: string }): string {
	return e.classification === 'destructive' ? `${actionVerb(e.action)} ${targetLabel(e.target)}` : 'Approve';
}
