import { sql } from '../../db/index';
import { approvalVerifies, storedApproval } from '../../db/queries/approvals';
import type { ExecutionRow } from '../../db/queries/executions';
import { ACTIONS, isActionName } from '../../proxmox/actions';
import { executionHash } from '../prepare';
import { Failure, TAMPERED, Tampered } from './outcomes';

/**
 * Phase 1: the stored record is still exactly what was approved (its hash matches its content,
 * and for anything but read-only a sealed approval names that hash). Reads only the database:
 * nothing connects before it passes. Returns the container a ct-scoped action runs in; the steps
 * are rebuilt from the record after the pre-check.
 */
export async function authorize(e: ExecutionRow): Promise<string | undefined> {
	if (!isActionName(e.action)) throw new Failure(`unknown action '${e.action}'`);
	if (executionHash(e.action, e.target, e.params) !== e.hash) throw new Tampered('the stored execution does not match its hash; refusing to run', 'content');
	if (ACTIONS[e.action].classification !== 'read_only') {
		const approval = await storedApproval(sql(), e.id);
		if (approval?.hash !== e.hash) throw new Tampered('no approval names this exact execution; refusing to run', approval ? 'hash' : 'missing');
		// Made only by the server, with a key the database never holds: a row added or changed with
		// the database's rights alone (db/seal.ts) does not verify, and nothing runs.
		if (!(await approvalVerifies(approval, e.id))) throw new Tampered(TAMPERED, approval.mac ? 'seal' : 'unsealed');
	}
	return /^lxc:[^/]+\/([0-9]+)$/.exec(e.target)?.[1];
}
