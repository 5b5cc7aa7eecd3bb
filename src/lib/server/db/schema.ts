// The database schema, one file per aggregate under schema/ (drizzle.config.ts reads this file:
// every table must be re-exported here). Import tables from here, not from the files.
export * from './schema/operators-auth';
export * from './schema/settings-audit';
export * from './schema/sessions-messages';
export * from './schema/review';
export * from './schema/hosts-inventory';
export * from './schema/knowledge';
export * from './schema/executions-plans-approvals';
export * from './schema/worker-processes';
export * from './schema/webhooks';
export * from './schema/alert-hooks-schedules';
export * from './schema/alert-groups-schedule-runs';
export * from './schema/incidents-deliveries';
export * from './schema/qualifications';
