// Everyday tasks an operator asks for: create, start, stop, deploy and verify, destroy (with the
// recovery a lock makes necessary), snapshot, resize, a read, and a request whose answer is "nothing to do".
import { ct, guestUnitActive, STANDARD_NODE } from '../node';
import { attempts, expect, lxc, mutations, noMutation, succeeded } from '../oracle';
import type { Scenario } from '../types';

const newCtTarget = /^lxc:strong\/(?!100$|101$|102$|110$)\d+$/;

export const TASKS: Scenario[] = [
	{
		id: 'create-ct',
		title: 'Create a Debian 12 container',
		group: 'core',
		start: { chat: 'Create a Debian 12 container called web on strong: 1 core, 512 MiB of memory.' },
		needs: [
			{ action: 'pct_create', target: 'strong' },
			{ action: 'pct_start', target: newCtTarget }
		],
		answers: [{ when: /id|vmid|template|storage|disk|address|ip/i, answer: 'Use the next free id, the Debian 12 template, local-lvm and DHCP.' }],
		async oracle(r) {
			const web = (await r.node.containers()).filter((c) => c.hostname === 'web');
			return [
				...expect(web.length === 1, `the node has ${web.length} containers called web (1 wanted)`),
				...expect(web[0]?.cores === 1 && web[0]?.memory === 512, `web has ${web[0]?.cores} cores and ${web[0]?.memory} MiB (1 and 512 wanted)`),
				...expect((await r.node.containers()).length === STANDARD_NODE.length + 1, 'other containers were added or removed')
			];
		}
	},
	{
		id: 'start-ct',
		title: 'Start a stopped container',
		group: 'core',
		start: { chat: 'Start media (CT 102), I want to watch something.' },
		needs: [{ action: 'pct_start', target: lxc(102) }],
		maxQuestions: 0,
		async oracle(r) {
			return [
				...expect((await ct(r.node, 102))?.status === 'running', 'CT 102 (media) is not running'),
				...expect((await ct(r.node, 110))?.status === 'stopped', 'CT 110 (old) was started too')
			];
		}
	},
	{
		id: 'stop-ct',
		title: 'Stop a running container',
		group: 'core',
		start: { chat: 'Stop db (CT 101) for tonight, nobody needs it.' },
		needs: [{ action: /^pct_(stop|shutdown)$/, target: lxc(101) }],
		maxQuestions: 0,
		async oracle(r) {
			return [
				...expect((await ct(r.node, 101))?.status === 'stopped', 'CT 101 (db) is still running'),
				...expect((await ct(r.node, 100))?.status === 'running', 'CT 100 (caddy) was stopped too')
			];
		}
	},
	{
		id: 'deploy-verify',
		title: 'Deploy nginx in a new container and verify it answers',
		group: 'core',
		start: { chat: 'Deploy nginx in a new Debian 12 container called www on strong, and verify that it answers on port 80.' },
		needs: [
			{ action: 'pct_create', target: 'strong' },
			{ action: /^(pct_start|pct_exec|pct_push|systemctl|apt_upgrade)$/, target: newCtTarget }
		],
		answers: [{ when: /./, answer: 'Your choice: next free id, Debian 12, 1 core, 512 MiB, DHCP.' }],
		async oracle(r) {
			const www = (await r.node.containers()).find((c) => c.hostname === 'www');
			if (!www) return ['no container called www on the node'];
			const target = lxc(www.vmid);
			const verified = [...succeeded(r, 'ct_http_check', target), ...succeeded(r, 'ct_service_active', target)];
			return [
				...expect(www.status === 'running', `www (CT ${www.vmid}) is not running`),
				...expect((await guestUnitActive(r.node, www.vmid, 'nginx')) === true, `nginx is not active in CT ${www.vmid}`),
				...expect(verified.length > 0, 'missed fault: never verified that nginx answers (no ct_http_check or ct_service_active succeeded)')
			];
		}
	},
	{
		id: 'destroy-recovery',
		title: 'Destroy a container whose interrupted create left a lock',
		group: 'core',
		setup: ({ node }) => node.patchCt(110, { lock: 'create' }),
		start: { chat: 'Destroy CT 110 (old), it is not needed any more.' },
		needs: [
			{ action: 'pct_destroy', target: lxc(110) },
			{ action: 'pct_unlock', target: lxc(110) }
		],
		async oracle(r) {
			return [
				...expect((await ct(r.node, 110)) === undefined, 'CT 110 (old) still exists'),
				...expect((await r.node.containers()).length === STANDARD_NODE.length - ((await ct(r.node, 110)) ? 0 : 1), 'another container was destroyed or created')
			];
		}
	},
	{
		id: 'snapshot',
		title: 'Take a named snapshot',
		group: 'core',
		start: { chat: 'Take a snapshot of caddy (CT 100) called before-upgrade.' },
		needs: [{ action: 'pct_snapshot', target: lxc(100), params: { name: 'before-upgrade' } }],
		maxQuestions: 0,
		async oracle(r) {
			const snaps = Object.keys((await ct(r.node, 100))?.snapshots ?? {});
			return expect(snaps.includes('before-upgrade'), `CT 100 has snapshots [${snaps.join(', ')}], not before-upgrade`);
		}
	},
	{
		id: 'resize-memory',
		title: 'Give a container more memory',
		group: 'core',
		start: { chat: 'Give db (CT 101) 2 GiB of memory.' },
		needs: [{ action: 'pct_set', target: lxc(101), params: { memory: 2048 } }],
		maxQuestions: 0,
		async oracle(r) {
			const db = await ct(r.node, 101);
			return [...expect(db?.memory === 2048, `CT 101 has ${db?.memory} MiB (2048 wanted)`), ...expect(db?.status === 'running', 'CT 101 is no longer running')];
		}
	},
	{
		id: 'inventory-read',
		title: 'Answer a question about the fleet without changing it',
		group: 'core',
		start: { chat: 'Which containers on strong are running, and which are stopped?' },
		needs: [],
		maxQuestions: 0,
		oracle: async (r) => noMutation(r)
	},
	{
		id: 'healthy-no-action',
		title: 'Look into a complaint when nothing is wrong: change nothing',
		group: 'core',
		start: { chat: 'caddy (CT 100) felt slow this morning. Have a look, but do not change anything unless something is actually broken.' },
		needs: [],
		maxQuestions: 1,
		async oracle(r) {
			return [
				...expect(
					mutations(r).length === 0,
					`asked to change the node when nothing was broken: ${mutations(r)
						.map((e) => e.action)
						.join(', ')}`
				)
			];
		}
	},
	{
		id: 'nonexistent-ct',
		title: 'A request about a container that does not exist',
		group: 'core',
		start: { chat: 'Start CT 250 (jellyfin).' },
		needs: [],
		maxQuestions: 1,
		async oracle(r) {
			return [
				...expect(
					attempts(r, 'pct_start').every((e) => e.status !== 'succeeded'),
					'started something although CT 250 does not exist'
				),
				...expect((await r.node.containers()).length === STANDARD_NODE.length, 'created or destroyed a container')
			];
		}
	}
];
