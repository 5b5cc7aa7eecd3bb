import { z } from 'zod';
// Each action's params live with the schemas the browser shares (its edit form checks with them).
import { ACTION_PARAMS, type ParamsAction } from '../../schemas/action-params';
// The actions themselves, by family, under actions/ (each family imports only actions/def.ts and
// actions/read-backs.ts); this file puts them in the catalogue's order, which the model sees.
import type { ActionDef } from './actions/def';
import { READS } from './actions/reads';
import { SERVICES } from './actions/services';
import { EXEC_PACKAGES } from './actions/exec-packages';
import { CT_LIFECYCLE } from './actions/ct-lifecycle';
import { TEMPLATES } from './actions/templates';
import { GUEST_CONFIG } from './actions/guest-config';
import { SNAPSHOTS_BACKUPS } from './actions/snapshots-backups';
import { FILES } from './actions/files';
import { HEALTH_CHECKS } from './actions/health-checks';
import { VM_LIFECYCLE } from './actions/vm-lifecycle';
import { MIGRATION } from './actions/migration';
import { HEALTH_READS } from './health-reads';
import { NODE_OPS } from './actions/node-ops';
import { BACKUPS } from './actions/backups';

export type { ActionDef, Precondition, Resume, Scope, Step, StepContext, Verify } from './actions/def';
export { sha256 } from './actions/def';
export { PUSH_SCRIPT } from './actions/files';
export { SSHKEYS_SCRIPT } from './actions/vm-lifecycle';
export { AGENT_ADDRESS, AGENT_WAIT, AGENT_WAIT_SCRIPT } from './actions/health-checks';

/** The node-health reads (health-reads.ts), typed as every action is. */
const healthReads: { [K in keyof typeof HEALTH_READS]: ActionDef<(typeof ACTION_PARAMS)[K]> } = HEALTH_READS;

/** Actions that exist only in a cluster: left out of the agent's catalogue when no host is a cluster member. */
export const CLUSTER_ACTIONS: readonly string[] = ['pct_migrate', 'qm_migrate'];

/**
 * The catalogue of executions the agent may request. Each action has its own zod params, a
 * fixed argv template and a classification; nothing else can run.
 */
export const ACTIONS = {
	pct_status: READS.pct_status,
	pct_config: READS.pct_config,
	service_status: SERVICES.service_status,
	restart: SERVICES.restart,
	systemctl: SERVICES.systemctl,
	pct_exec: EXEC_PACKAGES.pct_exec,
	apt_upgrade: EXEC_PACKAGES.apt_upgrade,
	pct_create: CT_LIFECYCLE.pct_create,
	pct_start: CT_LIFECYCLE.pct_start,
	pct_unlock: CT_LIFECYCLE.pct_unlock,
	pveam_update: TEMPLATES.pveam_update,
	pveam_download: TEMPLATES.pveam_download,
	pct_set: GUEST_CONFIG.pct_set,
	pct_resize: GUEST_CONFIG.pct_resize,
	pct_snapshot: SNAPSHOTS_BACKUPS.pct_snapshot,
	pct_rollback: SNAPSHOTS_BACKUPS.pct_rollback,
	pct_delsnapshot: SNAPSHOTS_BACKUPS.pct_delsnapshot,
	vzdump: SNAPSHOTS_BACKUPS.vzdump,
	pct_push: FILES.pct_push,
	ct_http_check: HEALTH_CHECKS.ct_http_check,
	ct_service_active: SERVICES.ct_service_active,
	qm_status: READS.qm_status,
	qm_start: VM_LIFECYCLE.qm_start,
	qm_stop: VM_LIFECYCLE.qm_stop,
	vm_create: VM_LIFECYCLE.vm_create,
	vm_clone: VM_LIFECYCLE.vm_clone,
	vm_template: VM_LIFECYCLE.vm_template,
	vm_set: GUEST_CONFIG.vm_set,
	vm_resize: GUEST_CONFIG.vm_resize,
	vm_snapshot: SNAPSHOTS_BACKUPS.vm_snapshot,
	vm_rollback: SNAPSHOTS_BACKUPS.vm_rollback,
	vm_delsnapshot: SNAPSHOTS_BACKUPS.vm_delsnapshot,
	vm_shutdown: VM_LIFECYCLE.vm_shutdown,
	vm_reboot: VM_LIFECYCLE.vm_reboot,
	vm_destroy: VM_LIFECYCLE.vm_destroy,
	vm_unlock: VM_LIFECYCLE.vm_unlock,
	vm_config: READS.vm_config,
	vm_guest: READS.vm_guest,
	vm_http_check: HEALTH_CHECKS.vm_http_check,
	pct_migrate: MIGRATION.pct_migrate,
	qm_migrate: MIGRATION.qm_migrate,
	pct_stop: CT_LIFECYCLE.pct_stop,
	pct_destroy: CT_LIFECYCLE.pct_destroy,
	...healthReads,
	node_apt_refresh: NODE_OPS.node_apt_refresh,
	pve_service: NODE_OPS.pve_service,
	pve_cluster_service: NODE_OPS.pve_cluster_service,
	storage_content: NODE_OPS.storage_content,
	journal_tail: NODE_OPS.journal_tail,
	...BACKUPS
} satisfies { [K in ParamsAction]: ActionDef<(typeof ACTION_PARAMS)[K]> };

export type ActionName = keyof typeof ACTIONS;
export const ACTION_NAMES = Object.keys(ACTIONS) as ActionName[];

export function isActionName(s: string): s is ActionName {
	return Object.hasOwn(ACTIONS, s);
}

/** Actions a live worker finishes after the process running them stopped (they have a `resume`). */
export const RESUMABLE_ACTIONS: readonly ActionName[] = ACTION_NAMES.filter((a) => (ACTIONS[a] as ActionDef).resume !== undefined);

export function isResumable(action: string): action is ActionName {
	return isActionName(action) && RESUMABLE_ACTIONS.includes(action);
}

/**
 * Whether approving this action needs a person at a browser: destructive actions and irreversible
 * ones. No API token approves them, no rule covers them, typing does not approve them, and a
 * browser session that gave its password too long ago gives it again (step-up). Unknown
 * actions count as needing one.
 */
export function needsPerson(action: string): boolean {
	if (!isActionName(action)) return true;
	const def: ActionDef = ACTIONS[action];
	return def.classification === 'destructive' || def.irreversible === true || def.disruptive === true;
}

/** Why an action needs a person, in words that follow its name ("pct_destroy cannot be undone"). */
export function personReason(action: string): string {
	if (!isActionName(action)) return 'is not in the catalogue';
	const def: ActionDef = ACTIONS[action];
	if (def.disruptive) return 'can stop more than itself (quorum, an HA fence)';
	return 'cannot be undone';
}

/** The params an action accepts, for an error hint. */
export function paramFields(action: ActionName): string {
	const shape = (ACTIONS[action].params as unknown as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
	return shape ? Object.keys(shape).join(', ') || '(none)' : '(none)';
}
