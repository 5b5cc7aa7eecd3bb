// Valid params for every catalogue action (several for some), as the model might send them: for
// tests that run each action's own argv builder (tests/integration/gate.test.ts).
export const SAMPLE_PARAMS: Record<string, Record<string, unknown>[]> = {
	pct_status: [{}],
	pct_config: [{}],
	service_status: [{ unit: 'nginx.service' }],
	restart: [{}],
	systemctl: [{ unit: 'nginx.service', op: 'restart' }],
	pct_exec: [{ argv: ['sh', '-c', 'echo "$HOME"; ls / | wc -l'] }],
	apt_upgrade: [{}],
	pct_create: [
		{ vmid: 150, hostname: 'web', template: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst' },
		{
			vmid: 151,
			hostname: 'db',
			template: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst',
			ip: '192.168.1.50/24',
			gateway: '192.168.1.1',
			features: { nesting: true, keyctl: false },
			unprivileged: true,
			start: false
		}
	],
	pct_start: [{}],
	pct_unlock: [{}],
	pveam_update: [{}],
	pveam_download: [{ template: 'debian-12-standard_12.7-1_amd64.tar.zst' }],
	pct_set: [
		{ cores: 2, memory: 1024 },
		{ onboot: true, description: "it's\nmulti-line; $(not run) `nor this`" }
	],
	pct_resize: [{ size: '+2G' }, { disk: 'mp0', size: '16G' }],
	pct_snapshot: [{ name: 'before-upgrade', description: 'a note' }],
	pct_rollback: [{ name: 'before-upgrade', start: true }],
	pct_delsnapshot: [{ name: 'before-upgrade' }],
	vzdump: [
		{ storage: 'local', mode: 'stop', compress: 'gzip' },
		{ storage: 'local', prune: { last: 3 } }
	],
	pct_push: [{ path: '/etc/app/it.conf', content: "a = 'b'\n$(x)\n" }],
	ct_http_check: [{ port: 8080, path: '/healthz?x=1&y=2' }],
	ct_service_active: [{ unit: 'caddy.service' }],
	qm_status: [{ vmid: 200 }],
	qm_start: [{ vmid: 200 }],
	qm_stop: [{ vmid: 200 }],
	vm_create: [
		{ vmid: 300, name: 'vm1', image: 'local:import/debian-12-genericcloud-amd64.qcow2' },
		{
			vmid: 301,
			name: 'vm2',
			image: '/var/lib/vz/template/iso/debian.qcow2',
			ciuser: 'ops',
			sshKeys: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@laptop',
			ip: '10.0.0.5/24',
			gateway: '10.0.0.1',
			start: false
		}
	],
	vm_clone: [{ vmid: 200, newid: 210, name: 'clone', full: false }],
	vm_template: [{ vmid: 200 }],
	vm_set: [
		{ vmid: 200, cores: 4, balloon: 512, tags: ['web', 'prod'], description: 'x' },
		{ vmid: 200, tags: [] }
	],
	vm_resize: [{ vmid: 200, size: '+8G' }],
	vm_snapshot: [{ vmid: 200, name: 'snap1' }],
	vm_rollback: [{ vmid: 200, name: 'snap1' }],
	vm_delsnapshot: [{ vmid: 200, name: 'snap1' }],
	vm_shutdown: [{ vmid: 200, timeoutS: 30 }],
	vm_reboot: [{ vmid: 200 }],
	vm_destroy: [{ vmid: 200 }],
	vm_unlock: [{ vmid: 200 }],
	vm_config: [{ vmid: 200 }],
	vm_guest: [{ vmid: 200, cmd: 'network-get-interfaces' }],
	vm_http_check: [{ vmid: 200, port: 443, scheme: 'https' }],
	pct_migrate: [{ node: 'pve2' }],
	qm_migrate: [{ vmid: 200, node: 'pve2', online: true, withLocalDisks: true }],
	pct_stop: [{}],
	pct_destroy: [{}],
	storage_status: [{}, { node: 'pve2' }],
	backup_list: [{ storage: 'local' }, { storage: 'local', vmid: 101, node: 'pve2' }],
	backup_jobs: [{}],
	tasks_failed: [{}, { limit: 5, node: 'pve2' }],
	task_log: [{ upid: 'UPID:pve1:0002A1B3:01C2D3E4:675A1B2C:vzdump:101:root@pam:' }],
	node_updates: [{}],
	zfs_status: [{}],
	disks_smart: [{}],
	pve_services: [{}],
	node_apt_refresh: [{}, { node: 'pve2' }],
	pve_service: [{ service: 'pveproxy' }, { service: 'pvestatd', op: 'reload' }],
	pve_cluster_service: [{ service: 'corosync' }, { service: 'pve-cluster', op: 'reload' }],
	storage_content: [{ storage: 'local-lvm' }, { storage: 'local', limit: 5, node: 'pve2' }],
	journal_tail: [{ unit: 'caddy.service' }, { unit: 'nginx', lines: 100 }],
	backup_prune_preview: [{ storage: 'local', vmid: 101, keep: { last: 2 } }],
	backup_prune: [
		{ storage: 'local', vmid: 101, keep: { last: 2, daily: 7 }, remove: ['local:backup/vzdump-lxc-101-2026_12_01-02_00_00.tar.zst'] },
		{ storage: 'pbs', vmid: '101', keep: { weekly: 4 }, remove: ['pbs:backup/ct/101/2026-12-01T02:00:00Z'] }
	],
	backup_delete: [{ storage: 'local', volid: 'local:backup/vzdump-qemu-200-2026_12_01-02_00_00.vma.zst' }],
	backup_job_retention: [{ id: 'backup-0c1a2b3c-4d5e', keep: { last: 3, monthly: 6 } }]
};
