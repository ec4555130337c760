import { setFlagsFromString } from 'node:v8';

/**
 * V8's old space grows to a multiple of what survived its last full collection (up to 4×) before it
 * collects again. The service's changes all outlive a young-generation collection (they wait for
 * a sink write), so they die in the old space: with the default factor a big transaction applied
 * at full speed lifted the resident memory to twice the idle process's. 1.3× keeps the peak close
 * to it, at a cost in CPU: more full collections (a 5,000,000-row transaction: 185 rather than
 * 343 MiB at its peak, 68 rather than 43 s of CPU). The memory bound is the promise kept here.
 */
const HEAP_GROWING_PERCENT = 30;

const FLAG = /--heap[-_]growing[-_]percent\b/;

/** Whether the process was started with its own heap growing factor (on its command line or in NODE_OPTIONS). */
export function heapGrowthGiven(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return execArgv.some((arg) => FLAG.test(arg)) || FLAG.test(nodeOptions ?? '');
}

/**
 * Sets the heap growing factor of the running process, unless its command line or NODE_OPTIONS
 * gives one. V8 reads it at every full collection, so setting it after start takes effect.
 * @returns whether it was set
 */
export function limitHeapGrowth(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  if (heapGrowthGiven(execArgv, nodeOptions)) return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
