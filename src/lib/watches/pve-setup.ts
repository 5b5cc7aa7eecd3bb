// The Proxmox VE (8.3+) commands that point a node's notifications at an alert hook. Through the
// API (`pvesh`), a webhook target's body and header values and its secrets are base64-encoded
// (PVE's notification API: "name=<name>,value=<base64 of value>"); the body and header values are
// Handlebars templates PVE fills in per notification.

/** The body Proxmox sends: what watches/parse.ts reads for a `proxmox` hook. */
export const PVE_BODY_TEMPLATE =
	'{"title":"{{ escape title }}","message":"{{ escape message }}","severity":"{{ severity }}","timestamp":{{ timestamp }},"fields":{{ json fields }}}';

const b64 = (s: string) => btoa(s);
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A name PVE accepts for the target and the matcher (letters, digits, - and _). */
export const pveTargetName = (hookName: string) => `nomos-${hookName.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '') || 'hook'}`.slice(0, 60);

/**
 * The shell lines to run as root on one node of the cluster: the secret into a variable (the
 * placeholder when it is not known any more), the webhook target, and a matcher that sends it
 * warnings, errors and every backup notification (a successful backup resolves its failure).
 */
export function pveWebhookCommands(o: { url: string; hookName: string; secret: string | null }): string {
	const name = pveTargetName(o.hookName);
	return [
		`NOMOS_SECRET=${q(o.secret ?? '<the hook secret>')}`,
		`pvesh create /cluster/notifications/endpoints/webhook --name ${name} --method post --url ${q(o.url)} \\`,
		`  --header ${q(`name=Content-Type,value=${b64('application/json')}`)} \\`,
		`  --header ${q(`name=Authorization,value=${b64('Bearer {{ secrets.nomos }}')}`)} \\`,
		`  --secret "name=nomos,value=$(printf '%s' "$NOMOS_SECRET" | base64 -w0)" \\`,
		`  --body ${q(b64(PVE_BODY_TEMPLATE))} --comment 'Nomos alert hook'`,
		`pvesh create /cluster/notifications/matchers --name ${name} --target ${name} --mode any \\`,
		`  --match-severity warning --match-severity error --match-field exact:type=vzdump`
	].join('\n');
}
