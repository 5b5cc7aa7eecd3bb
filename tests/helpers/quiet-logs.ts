// Quiet test output: the test process logs nothing unless NOMOS_LOG_LEVEL says otherwise. Only
// this process: the servers and workers tests spawn log as usual (tests read their lines).
import { rootLogger } from '../../src/lib/server/log.js';

if (!process.env.NOMOS_LOG_LEVEL) rootLogger().level = 'silent';
