import { router } from './t';
import { hostsRouter } from './routers/hosts';

export const appRouter = router({
	hosts: hostsRouter
});

export type AppRouter = typeof appRouter;
