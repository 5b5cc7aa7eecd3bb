// Files written into a container.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { MIN, def, sha256, runningContained } from './def';

/**
 * pct_push's fixed script: the content arrives on stdin into a private temp file that `pct push`
 * copies into the CT; the vmid, path and mode are positional arguments, never spliced into it.
 */
export const PUSH_SCRIPT = `set -e; t=$(mktemp /tmp/nomos-push.XXXXXXXX); trap 'rm -f "$t"' EXIT; cat > "$t"; pct push "$1" "$t" "$2" --perms "$3"`;

export const FILES = {
	pct_push: def({
		classification: 'config_mutation',
		description: `write a text file into a running container (content verbatim, at most 32 KiB; mode default 0644), verified by its sha256 afterwards`,
		scope: 'ct',
		params: ACTION_PARAMS.pct_push,
		steps: (p, { vmid }) => [
			{ label: `pct push ${p.path}`, argv: ['sh', '-c', PUSH_SCRIPT, 'nomos-push', vmid!, p.path, p.mode], stdin: p.content, timeoutMs: 2 * MIN },
			{
				label: `verify: sha256 of ${p.path}`,
				argv: ['pct', 'exec', vmid!, '--', 'sha256sum', p.path],
				timeoutMs: MIN,
				verify: {
					expect: sha256(p.content),
					failure: `pct push reported success but ${p.path} in CT ${vmid} does not have the content's sha256 (${sha256(p.content).slice(0, 12)}…)`
				}
			}
		],
		preconditions: (_p, { vmid }) => runningContained(vmid!),
		summary: (p, { vmid }) => `wrote ${Buffer.byteLength(p.content, 'utf8')} bytes to ${p.path} in CT ${vmid} (sha256 verified)`
	})
};
