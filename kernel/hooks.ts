import tapable from 'tapable';
import type { KernelHooks } from '../sdk/hooks.js';

const { AsyncSeriesBailHook, AsyncSeriesHook } = tapable;

/** Creates the kernel's hook points; plugins tap them through ctx.tap(). */
export function createHooks(): KernelHooks {
  return {
    interceptQuery: new AsyncSeriesBailHook(['query']),
    beforeQuery: new AsyncSeriesHook(['query']),
    afterQuery: new AsyncSeriesHook(['query', 'result'] as never),
    beforeTransform: new AsyncSeriesHook(['run']),
    afterModelBuild: new AsyncSeriesHook(['build']),
    afterTransform: new AsyncSeriesHook(['run']),
    onSync: new AsyncSeriesHook(['sync']),
    pipelineStart: new AsyncSeriesHook(['pipeline']),
    pipelineStep: new AsyncSeriesHook(['pipeline']),
    pipelineEnd: new AsyncSeriesHook(['pipeline']),
  } as unknown as KernelHooks;
}
