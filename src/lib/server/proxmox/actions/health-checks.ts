// Health checks: a service's HTTP answer in a container or on a VM, and how a VM's start waits for its agent.
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { urlHost } from '../guest-agent';
import { def, running, vmRunning } from './def';

/**
 * How long a VM's health after a start waits for it to come up: the agent's ping (the script
 * below) and then, with `healthHttp`, its address and its service (the runner's HTTP wait).
 */
export const AGENT_WAIT = { tries: 24, intervalS: 5 } as const;

/**
 * A VM's health after a start: its guest agent answers `ping` (a VM configured without an agent
 * passes on running alone). An agent needs some seconds after boot, so this asks up to
 * AGENT_WAIT.tries times, AGENT_WAIT.intervalS apart. The vmid is a positional argument.
 */
export const AGENT_WAIT_SCRIPT = `qm config "$1" | grep -Eq '^agent: (1|enabled=1)' || { echo 'no guest agent configured'; exit 0; }; for i in $(seq 1 ${AGENT_WAIT.tries}); do qm guest cmd "$1" ping && { echo 'guest agent answers'; exit 0; }; sleep ${AGENT_WAIT.intervalS}; done; echo 'the guest agent did not answer in ${(AGENT_WAIT.tries * AGENT_WAIT.intervalS) / 60} minutes' >&2; exit 1`;

/** Stands for the guest agent's address in a step shown before the run (vm_http_check). */
export const AGENT_ADDRESS = '<agent-address>';

export const HEALTH_CHECKS = {
	ct_http_check: def({
		classification: 'read_only',
		description: 'HTTP GET from inside a running container to one of its local ports (curl -fsS http://127.0.0.1:<port><path>); fails on an HTTP error',
		scope: 'ct',
		params: ACTION_PARAMS.ct_http_check,
		steps: (p, { vmid }) => [
			{
				label: `GET :${p.port}${p.path}`,
				argv: ['pct', 'exec', vmid!, '--', 'curl', '-fsS', '--max-time', String(p.timeoutS), `http://127.0.0.1:${p.port}${p.path}`],
				timeoutMs: (p.timeoutS + 30) * 1000
			}
		],
		preconditions: (_p, { vmid }) => running(vmid!)
	}),
	vm_http_check: def({
		classification: 'read_only',
		description: 'HTTP GET from the host to a running VM at the address its guest agent reports (curl -fsS http://<ip>:<port><path>); fails on an HTTP error',
		scope: 'host',
		params: ACTION_PARAMS.vm_http_check,
		steps: (p, { address }) => {
			// Before the run (a preview, a plan's card) the address is not known yet; the runner builds the steps again with it.
			const url = `${p.scheme}://${address === undefined ? AGENT_ADDRESS : urlHost(address)}:${p.port}${p.path}`;
			return [
				{
					label: `GET ${url}`,
					argv: ['curl', '-fsS', '--noproxy', '*', '--max-time', String(p.timeoutS), ...(p.scheme === 'https' ? ['--insecure'] : []), url],
					timeoutMs: (p.timeoutS + 30) * 1000
				}
			];
		},
		preconditions: (p) => [...vmRunning(p.vmid), { kind: 'vm-agent-address', vmid: p.vmid }]
	})
};
